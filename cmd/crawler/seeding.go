package main

import (
	"fmt"
	"net/url"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/parse"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

// seeding is one run of 'crawler seed': the lines taken, the batch that
// goes to Redis when full, and the Seeder, made with the first usable
// line (the crawl is created then).
type seeding struct {
	c     *cli.Context
	rdb   redis.UniversalClient
	name  string
	s     crawl.Settings
	sd    *crawl.Seeder
	batch []*url.URL
	// inLine is the last file line whose batch went in, batchLine the
	// last line taken: where a seed that stops says to go on from.
	inLine, batchLine int
	lines, bad        int // lines taken, and of them not usable
	warned            map[string]bool
}

// retry runs what until it succeeds or fails for another reason than a
// Redis that stopped answering (restarting, failing over), which is
// waited for, as a worker waits, for up to --redis-retry; the batch then
// goes again (with --skip-seen, what went in before is not queued twice).
func (r *seeding) retry(what func() error) error {
	c := r.c
	var failing time.Time
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		err := what()
		if err == nil || !crawl.RedisGoneForNow(err) || c.Context.Err() != nil {
			return err
		}
		if failing.IsZero() {
			failing = time.Now()
		}
		left := c.Duration("redis-retry") - time.Since(failing)
		if left < delay {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "crawler: seed: Redis stopped answering: %v (retrying for up to %v more)\n", err, left.Round(time.Second))
		select {
		case <-c.Context.Done():
			return err
		case <-time.After(delay):
		}
	}
}

// seeder is the run's Seeder, made (and the crawl created) the first time.
func (r *seeding) seeder() error {
	if r.sd != nil {
		return nil
	}
	return r.retry(func() (err error) {
		sd, err := crawl.NewSeeder(r.c.Context, r.rdb, r.name, r.s, crawl.SeedOptions{SkipSeen: r.c.Bool("skip-seen")})
		if err == nil {
			r.sd = sd
		}
		return err
	})
}

// flush sends the batch; one that cannot go stops the seed with where to
// go on from (stoppedSeed).
func (r *seeding) flush() error {
	if len(r.batch) == 0 {
		return nil
	}
	if err := r.seeder(); err != nil {
		return err
	}
	if err := r.retry(func() error { return r.sd.Add(r.c.Context, r.batch) }); err != nil {
		return stoppedSeed{err: err, file: r.c.String("file"), line: r.inLine, queued: r.sd.Report().Queued}
	}
	r.inLine = r.batchLine
	r.batch = r.batch[:0]
	return nil
}

// refuse counts a line that is not a usable URL, and quotes the first
// maxBadLines.
func (r *seeding) refuse(where string, err error) {
	r.lines++
	if r.bad++; r.bad <= maxBadLines {
		fmt.Fprintf(r.c.App.ErrWriter, "crawler: seed: %s: %v\n", where, err)
	}
}

// take adds the line's URL to the batch, and sends the batch when full.
func (r *seeding) take(where string, line int, text string) error {
	r.batchLine = line
	u, err := parse.Canonicalize(nil, text)
	if err != nil {
		r.refuse(where, err)
		return nil
	}
	r.lines++
	if !r.s.AllowPrivate && privateHost(u.Hostname()) && !r.warned[u.Host] {
		r.warned[u.Host] = true
		fmt.Fprintf(r.c.App.ErrWriter, "crawler: seed: %s is a private or loopback address: workers refuse it "+
			"unless the crawl is seeded with --allow-private\n", u.Host)
	}
	if r.batch = append(r.batch, u); len(r.batch) >= seedBatch {
		return r.flush()
	}
	return nil
}

// addSitemaps queues the --sitemap URLs, to be read by the workers.
func (r *seeding) addSitemaps() error {
	var sitemaps []*url.URL
	for _, raw := range r.c.StringSlice("sitemap") {
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
	if err := r.sd.AddSitemaps(r.c.Context, sitemaps); err != nil {
		return err
	}
	r.lines += len(sitemaps)
	return nil
}

// report says what the seed did, and exits 1 when some lines were not
// usable.
func (r *seeding) report() error {
	c := r.c
	if r.lines == 0 {
		return fmt.Errorf("no URLs to seed: give them as arguments, with -f FILE or --sitemap URL (see 'crawler seed --help')")
	}
	if r.sd == nil {
		return cli.Exit(fmt.Sprintf("seed: none of the %d URLs is usable; nothing seeded", r.lines), 1)
	}
	rep := r.sd.Report()
	msg := fmt.Sprintf("crawl %q: %d URLs queued", r.name, rep.Queued)
	switch {
	case rep.Seen > 0 && c.Bool("skip-seen"):
		msg += fmt.Sprintf(", %d skipped as already seen", rep.Seen)
	case rep.Seen > 0:
		msg += fmt.Sprintf(" (%d of them already seen by the crawl: seeds are queued anyway; --skip-seen skips them)", rep.Seen)
	}
	if rep.Duplicates > 0 {
		msg += fmt.Sprintf(", %d duplicates removed", rep.Duplicates)
	}
	fmt.Fprintln(c.App.Writer, msg)
	if r.bad == 0 {
		return nil
	}
	more := " (see above)"
	if r.bad > maxBadLines {
		more = fmt.Sprintf(" (the first %d are shown above)", maxBadLines)
	}
	return errSomeSeedsBad{fmt.Sprintf("seed: %d of %d lines were not usable URLs%s; the rest were seeded", r.bad, r.lines, more)}
}
