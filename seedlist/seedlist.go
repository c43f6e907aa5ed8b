// Package seedlist seeds a crawl from a list of URLs: arguments, a file of
// any size (or stdin) read one line at a time, and sitemaps. It is what
// `crawler seed` runs, apart from its flags and its last line.
//
// The URLs go to Redis in batches (Batch) through one admin.Seeder, which
// creates the crawl with its first batch. A Redis that stops answering
// mid-way (a restart, a failover) is waited for, up to Options.RedisRetry,
// and the batch sent again; past it the run stops with a *Stopped error
// that says how far the file went in and how to finish (--from-line and
// --skip-seen). A seed is all or nothing: the arguments and a file are read
// once before anything goes in, and a line that is no usable URL (or a
// sitemap URL that is none) is counted and, for the first MaxBadLines,
// quoted with its place, and then nothing is seeded (*BadLines). Stdin or
// a FIFO cannot be read twice and may never end: it is streamed, and its
// first bad line stops the run as a Redis outage does, with what went in
// and where to go on from (*Stopped). Options.SkipBad seeds the usable
// lines of either, counting the others.
package seedlist

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/parse"
	"github.com/redis/go-redis/v9"
)

// Batch is how many seeds go to Redis at once: a seed file of any size
// is read and queued in bounded memory.
const Batch = 10_000

// MaxBadLines is how many unusable lines are quoted; the rest are counted.
const MaxBadLines = 10

// Options say where a run's URLs come from and how it rides out Redis.
type Options struct {
	Args     []string // URLs given one by one ("argument N" in messages)
	File     string   // a file of URLs, one a line ('#' starts a comment); "-" is stdin; "" none
	FromLine int      // with File, the first line read (counted from 1): to finish a run that stopped
	Sitemaps []string // sitemap URLs, queued for the workers to read
	SkipSeen bool     // queue only URLs the crawl's Bloom filter has not seen (admin.SeedOptions)
	Priority int      // the URLs' priority among their hosts' (admin.SeedOptions)
	// SkipBad seeds the usable lines when some are not, rather than none.
	SkipBad bool
	// Checked: Check found nothing wrong with these options already, and
	// Run does not read them twice to check them again.
	Checked bool
	// RedisRetry is how long a Redis that stops answering is waited for,
	// with back-off, before the run stops (*Stopped).
	RedisRetry time.Duration
	// Say receives a line for each of the first MaxBadLines unusable
	// lines, each private host once (the workers refuse it without
	// AllowPrivate), and each wait for Redis. Nil discards them.
	Say io.Writer
}

// Result is what a run did.
type Result struct {
	Lines  int              // URL lines and arguments taken, usable or not, and sitemaps
	Bad    int              // of Lines, those that were no usable URL
	Seeded admin.SeedReport // what went in (zero when nothing did)
	Seeder bool             // a Seeder was made: the crawl exists and holds these settings
}

// ErrNoURLs: nothing was given to seed. ErrNoneUsable: lines were given,
// but not one usable URL among them; nothing was seeded.
var (
	ErrNoURLs     = errors.New("seedlist: no URLs to seed")
	ErrNoneUsable = errors.New("seedlist: none of the URLs is usable; nothing seeded")
)

// BadLines: some lines were no usable URL, and so nothing was seeded (a
// seed is all or nothing, unless Options.SkipBad).
type BadLines struct{ Bad, Lines int }

func (e *BadLines) Error() string {
	return fmt.Sprintf("seed: %d of %d lines are not usable URLs; nothing was seeded: fix or remove them and seed again, "+
		"or give --skip-bad to seed the rest", e.Bad, e.Lines)
}

// Stopped is a run that could not go on (Redis gone for longer than
// RedisRetry): how far it got, and how to finish.
type Stopped struct {
	Err    error
	File   string // Options.File
	Line   int    // the last line of File whose batch went in (0: none)
	Queued int    // seeds queued by then
}

func (e *Stopped) Error() string {
	if e.File == "" || e.File == "-" {
		return fmt.Sprintf("seed: stopped: %v; %d URLs were queued before; run it again with --skip-seen to add the rest once", e.Err, e.Queued)
	}
	return fmt.Sprintf("seed: stopped: %v; the lines of %s up to %d went in (%d URLs queued): to finish, run the same command "+
		"with --from-line %d --skip-seen (--skip-seen: what the failed batch got in is not queued twice)", e.Err, e.File, e.Line, e.Queued, e.Line+1)
}

func (e *Stopped) Unwrap() error { return e.Err }

// Run seeds crawl name of rdb with settings s (stored by the first batch,
// as admin.NewSeeder does) from what o lists. Its error is ErrNoURLs,
// ErrNoneUsable, a *BadLines (nothing seeded), a *Stopped, a file's or a
// sitemap URL's, or the crawl's. With SkipBad, lines that were not usable
// are no error: Result.Bad counts them.
func Run(ctx context.Context, rdb redis.UniversalClient, name string, s settings.Settings, o Options) (Result, error) {
	if o.Say == nil {
		o.Say = io.Discard
	}
	stream := o.File == "-" || o.File != "" && !regular(o.File)
	if !o.SkipBad && !o.Checked {
		if res, err := Check(o); err != nil {
			return res, err
		}
	}
	r := &run{ctx: ctx, rdb: rdb, name: name, s: s, o: o, warned: map[string]bool{}, stopAtBad: stream && !o.SkipBad}
	err := r.all()
	res := Result{Lines: r.lines, Bad: r.bad, Seeder: r.sd != nil}
	if r.sd != nil {
		res.Seeded = r.sd.Report()
	}
	switch {
	case err != nil:
	case r.lines == 0:
		err = ErrNoURLs
	case r.sd == nil:
		err = ErrNoneUsable
	}
	return res, err
}

// Check is Run's first reading, which needs no Redis: every argument,
// the lines of a file (not a stream's: it can be read once only) and
// the sitemap URLs parsed, nothing sent. Its error is Run's for what it
// found: ErrNoURLs, ErrNoneUsable, a *BadLines, a file's or a sitemap
// URL's. A command checks before it connects, so that a bad URL is said
// as such whether Redis answers or not.
func Check(o Options) (Result, error) {
	if o.Say == nil {
		o.Say = io.Discard
	}
	stream := o.File == "-" || o.File != "" && !regular(o.File)
	check := &run{o: o, warned: map[string]bool{}, checking: true}
	if err := check.all(); err != nil {
		return Result{}, err
	}
	switch {
	case check.lines == 0 && !stream && len(o.Sitemaps) == 0:
		return Result{}, ErrNoURLs
	case check.bad > 0 && check.bad == check.lines:
		return Result{Lines: check.lines, Bad: check.bad}, ErrNoneUsable
	case check.bad > 0:
		return Result{Lines: check.lines, Bad: check.bad}, &BadLines{Bad: check.bad, Lines: check.lines}
	}
	return Result{Lines: check.lines}, nil
}

// run is one Run: the lines taken, the batch that goes to Redis when
// full, and the Seeder, made with the first usable line.
type run struct {
	ctx   context.Context
	rdb   redis.UniversalClient
	name  string
	s     settings.Settings
	o     Options
	sd    *admin.Seeder
	batch []*url.URL
	// inLine is the last file line whose batch went in, batchLine the
	// last line taken: where a run that stops says to go on from.
	inLine, batchLine int
	lines, bad        int
	warned            map[string]bool
	// checking: the first reading, which parses every line and sitemap
	// URL and sends nothing; stopAtBad: a stream's bad line stops the run.
	checking, stopAtBad bool
}

func (r *run) all() error {
	for i, a := range r.o.Args {
		if err := r.take(fmt.Sprintf("argument %d", i+1), 0, a); err != nil {
			return err
		}
	}
	stream := r.o.File == "-" || r.o.File != "" && !regular(r.o.File)
	if r.o.File != "" && !(r.checking && stream) {
		if err := readFile(r.o.File, r.o.FromLine, r.take, r.refuse); err != nil {
			return err
		}
	}
	if r.checking {
		for _, raw := range r.o.Sitemaps {
			if _, err := parse.Canonicalize(nil, raw); err != nil {
				return fmt.Errorf("--sitemap %q: %v; nothing was seeded", raw, err)
			}
		}
		return nil
	}
	if err := r.flush(); err != nil {
		return err
	}
	return r.addSitemaps()
}

// retry runs what until it succeeds or fails for another reason than a
// Redis that stopped answering (restarting, failing over), which is
// waited for, as a worker waits, for up to RedisRetry; the batch then
// goes again (with SkipSeen, what went in before is not queued twice).
func (r *run) retry(what func() error) error {
	var failing time.Time
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		err := what()
		if err == nil || !admin.RedisGoneForNow(err) || r.ctx.Err() != nil {
			return err
		}
		if failing.IsZero() {
			failing = time.Now()
		}
		left := r.o.RedisRetry - time.Since(failing)
		if left < delay {
			return err
		}
		fmt.Fprintf(r.o.Say, "crawler: seed: Redis stopped answering: %v (retrying for up to %v more)\n", err, left.Round(time.Second))
		select {
		case <-r.ctx.Done():
			return err
		case <-time.After(delay):
		}
	}
}

// seeder is the run's Seeder, made (and the crawl created) the first time.
func (r *run) seeder() error {
	if r.sd != nil {
		return nil
	}
	return r.retry(func() (err error) {
		sd, err := admin.NewSeeder(r.ctx, r.rdb, r.name, r.s, admin.SeedOptions{SkipSeen: r.o.SkipSeen, Priority: r.o.Priority})
		if err == nil {
			r.sd = sd
		}
		return err
	})
}

// flush sends the batch; one that cannot go stops the run with where to
// go on from (*Stopped).
func (r *run) flush() error {
	if len(r.batch) == 0 {
		return nil
	}
	if err := r.seeder(); err != nil {
		return err
	}
	if err := r.retry(func() error { return r.sd.Add(r.ctx, r.batch) }); err != nil {
		return &Stopped{Err: err, File: r.o.File, Line: r.inLine, Queued: r.sd.Report().Queued}
	}
	r.inLine = r.batchLine
	r.batch = r.batch[:0]
	return nil
}

// refuse counts a line that is not a usable URL, and quotes the first
// MaxBadLines; a stream's stops the run, what came before it sent.
func (r *run) refuse(where string, line int, err error) error {
	r.lines++
	if r.bad++; r.bad <= MaxBadLines {
		fmt.Fprintf(r.o.Say, "crawler: seed: %s: %v\n", where, err)
	}
	if !r.stopAtBad {
		return nil
	}
	r.batchLine = line - 1
	if ferr := r.flush(); ferr != nil {
		return ferr
	}
	queued := 0
	if r.sd != nil {
		queued = r.sd.Report().Queued
	}
	return &Stopped{Err: fmt.Errorf("%s is not a usable URL (%v)", where, err), File: r.o.File, Line: line - 1, Queued: queued}
}

// take adds the line's URL to the batch, and sends the batch when full.
func (r *run) take(where string, line int, text string) error {
	r.batchLine = line
	u, err := parse.Canonicalize(nil, text)
	if err != nil {
		return r.refuse(where, line, err)
	}
	r.lines++
	if r.checking {
		return nil
	}
	if !r.s.AllowPrivate && privateHost(u.Hostname()) && !r.warned[u.Host] {
		r.warned[u.Host] = true
		fmt.Fprintf(r.o.Say, "crawler: seed: %s is a private or loopback address: workers refuse it "+
			"unless the crawl is seeded with --allow-private\n", u.Host)
	}
	if r.batch = append(r.batch, u); len(r.batch) >= Batch {
		return r.flush()
	}
	return nil
}

// addSitemaps queues the sitemap URLs, to be read by the workers.
func (r *run) addSitemaps() error {
	var sitemaps []*url.URL
	for _, raw := range r.o.Sitemaps {
		u, err := parse.Canonicalize(nil, raw)
		if err != nil {
			return fmt.Errorf("--sitemap %q: %v", raw, err)
		}
		sitemaps = append(sitemaps, u)
	}
	if len(sitemaps) == 0 {
		return nil
	}
	if err := r.seeder(); err != nil {
		return err
	}
	if err := r.sd.AddSitemaps(r.ctx, sitemaps); err != nil {
		return err
	}
	r.lines += len(sitemaps)
	return nil
}

// privateHost: localhost, or an address the fetcher's SSRF guard refuses
// (no DNS look-up here).
func privateHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && fetch.Blocked(ip)
}

// regular: name is a regular file (a file that can be read twice), not a
// FIFO or a device.
func regular(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.Mode().IsRegular()
}
