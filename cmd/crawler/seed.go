package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/parse"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

func seedFlags() []cli.Flag {
	d := crawl.DefaultSettings()
	return []cli.Flag{
		&cli.StringFlag{Name: "scope", Value: string(d.Scope), Usage: "which hosts to enter: host (the seeds' hosts), domain (their registrable domains), any"},
		&cli.IntFlag{Name: "max-depth", Value: d.MaxDepth, Usage: "links to follow from a seed; -1 for no limit"},
		&cli.Int64Flag{Name: "max-pages", Value: d.MaxPages, Usage: "pages to fetch in the whole crawl; 0 for no limit"},
		&cli.StringFlag{Name: "rate", Value: "1", Usage: "requests per second per host, shared by all workers; 'inf' for no limit"},
		&cli.IntFlag{Name: "burst", Value: d.Burst, Usage: "requests a host may get at once"},
		&cli.StringFlag{Name: "user-agent", Value: d.UserAgent, Usage: "User-Agent header; its first word is matched against robots.txt"},
		&cli.Int64Flag{Name: "expected-urls", Value: d.ExpectedURLs, Usage: "URLs the Bloom filter is sized for (it grows past this)"},
		&cli.Float64Flag{Name: "fp-rate", Value: d.FPRate, Usage: "Bloom filter false-positive rate (a false positive skips a URL)"},
		&cli.IntFlag{Name: "shards", DefaultText: fmt.Sprintf("%d on a Redis Cluster, else 1", clusterShards),
			Usage: fmt.Sprintf("split the frontier by host over N hash tags (1 to %d), so that a Redis Cluster spreads it over its masters", crawl.MaxShards)},
		&cli.BoolFlag{Name: "allow-private", Usage: "allow loopback and private addresses (needed for the test site and intranets)"},
		&cli.StringFlag{Name: "keep-types", Value: strings.Join(d.KeepTypes, ","), Usage: "media types whose bodies are downloaded " +
			"and archived (comma-separated: type/subtype, type/* or *); other 2xx bodies stop at their headers, and HTML is always read for its links"},
		&cli.StringSliceFlag{Name: "extract", Usage: "NAME=CSS (repeatable): the text of the selector's first match on each HTML page " +
			"goes into its record under extract.NAME"},
		&cli.StringSliceFlag{Name: "allow", Usage: "REGEX (repeatable, RE2, on the canonical URL): follow only URLs that match one"},
		&cli.StringSliceFlag{Name: "deny", Usage: "REGEX (repeatable): never follow URLs that match one (deny wins over allow)"},
		&cli.IntFlag{Name: "max-path-repeat", Value: d.MaxPathRepeat, Usage: "trap defence: skip URLs whose path repeats a segment more than this"},
		&cli.IntFlag{Name: "max-path-depth", Value: d.MaxPathDepth, Usage: "trap defence: skip URLs whose path has more segments than this"},
		&cli.IntFlag{Name: "max-query-params", Value: d.MaxQueryParams, Usage: "trap defence: skip URLs with more query parameters than this"},
		&cli.Int64Flag{Name: "max-pages-per-host", Value: d.MaxPagesPerHost, Usage: "trap defence: fetch at most this many pages of one host (0: no limit)"},
		&cli.IntFlag{Name: "max-url-length", Value: d.MaxURLLength, Usage: "trap defence: skip URLs longer than this many bytes"},
		&cli.StringSliceFlag{Name: "header", Usage: "'Name: value' sent with every request (repeatable)"},
		&cli.BoolFlag{Name: "keep-tracking-params", Usage: "keep utm_*, gclid, fbclid and the like in URLs (by default they are removed)"},
		&cli.BoolFlag{Name: "sitemaps", Value: d.Sitemaps, Usage: "read the sitemaps robots.txt lists and crawl their URLs (--sitemaps=false: do not)"},
		&cli.DurationFlag{Name: "robots-give-up", Value: d.RobotsGiveUp, Usage: "a host whose robots.txt gives no answer (or 5xx, 429) has its URLs " +
			"held back, retried with back-off; after this long they go to the failed list"},
	}
}

func sitemapFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "sitemap", Usage: "URL of a sitemap (or sitemap index, gzip'd or not) whose URLs to crawl (repeatable)"}
}

func skipSeenFlag() cli.Flag {
	return &cli.BoolFlag{Name: "skip-seen", Usage: "queue only seeds the crawl has not seen yet (for re-seeding big lists; " +
		"a Bloom false positive may then skip one). Without it every seed is queued"}
}

// checkSeedFlags validates the flags that need no Redis, so a typo is
// reported as such even when Redis is not there.
func checkSeedFlags(c *cli.Context) error {
	s := crawl.DefaultSettings()
	if err := applySeedFlags(c, &s); err != nil {
		return err
	}
	if c.IsSet("shards") && (s.Shards < 1 || s.Shards > crawl.MaxShards) {
		return fmt.Errorf("--shards %d: want 1 to %d", s.Shards, crawl.MaxShards)
	}
	if n := s.MaxURLLength; c.IsSet("max-url-length") && (n < 16 || n > parse.MaxURLLength) {
		return fmt.Errorf("--max-url-length %d: want 16 to %d", n, parse.MaxURLLength)
	}
	if c.NArg() == 0 && c.String("file") == "" && len(c.StringSlice("sitemap")) == 0 {
		return errors.New("no URLs: give them as arguments, with -f FILE, or with --sitemap URL")
	}
	for _, raw := range c.StringSlice("sitemap") {
		if _, err := parse.Canonicalize(nil, raw); err != nil {
			return fmt.Errorf("--sitemap %q: %v", raw, strings.TrimPrefix(err.Error(), "parse: "))
		}
	}
	// The flags whose values have checks of their own name themselves.
	for _, check := range []struct {
		flag string
		err  func() error
	}{
		{"keep-types", s.CheckKeepTypes},
		{"header", func() error { _, err := s.HTTPHeaders(); return err }},
		{"extract", func() error { _, err := s.Fields(); return err }},
	} {
		if c.IsSet(check.flag) {
			if err := check.err(); err != nil {
				msg := err.Error()
				for _, prefix := range []string{"crawl: invalid settings: ", "fetch: ", "parse: "} {
					msg = strings.TrimPrefix(msg, prefix)
				}
				return fmt.Errorf("--%s: %s", check.flag, msg)
			}
		}
	}
	// The rest, checked together (burst, depth, rate, filters, Bloom size …).
	if err := s.Validate(); err != nil {
		return fmt.Errorf("%s (see 'crawler help seed')", strings.TrimPrefix(err.Error(), "crawl: "))
	}
	return nil
}

// settingsFromFlags starts from the crawl's stored settings when it exists
// (so a plain 'seed URL' adds to it), else from the defaults, and applies
// the flags that were given.
func settingsFromFlags(c *cli.Context, rdb redis.UniversalClient, k crawl.Keys) (crawl.Settings, error) {
	s, err := crawl.LoadSettings(c.Context, rdb, k)
	fresh := err != nil
	if fresh {
		s = crawl.DefaultSettings()
	}
	if err := applySeedFlags(c, &s); err != nil {
		return s, err
	}
	if _, cluster := rdb.(*redis.ClusterClient); fresh && cluster && !c.IsSet("shards") {
		s.Shards = clusterShards // a new crawl on a cluster: spread over its masters
	}
	return s, s.Validate()
}

// clusterShards is a new crawl's shard count on a Redis Cluster: enough
// for 16 masters, few enough that an exchange touches a handful.
const clusterShards = 16

// applySeedFlags sets the settings whose flags were given.
func applySeedFlags(c *cli.Context, s *crawl.Settings) error {
	if c.IsSet("scope") {
		m, err := parse.ParseScopeMode(c.String("scope"))
		if err != nil {
			return fmt.Errorf("--scope %q: want host, domain or any", c.String("scope"))
		}
		s.Scope = m
	}
	if c.IsSet("rate") {
		r, err := crawl.ParseRate(c.String("rate"))
		if err != nil {
			return fmt.Errorf("--%v", err)
		}
		s.Rate = r
	}
	set := map[string]func(){
		"max-depth":            func() { s.MaxDepth = c.Int("max-depth") },
		"max-pages":            func() { s.MaxPages = c.Int64("max-pages") },
		"burst":                func() { s.Burst = c.Int("burst") },
		"user-agent":           func() { s.UserAgent = c.String("user-agent") },
		"expected-urls":        func() { s.ExpectedURLs = c.Int64("expected-urls") },
		"fp-rate":              func() { s.FPRate = c.Float64("fp-rate") },
		"allow-private":        func() { s.AllowPrivate = c.Bool("allow-private") },
		"keep-types":           func() { s.KeepTypes = crawl.ParseTypes(c.String("keep-types")) },
		"extract":              func() { s.Extract = c.StringSlice("extract") },
		"allow":                func() { s.Allow = c.StringSlice("allow") },
		"deny":                 func() { s.Deny = c.StringSlice("deny") },
		"sitemaps":             func() { s.Sitemaps = c.Bool("sitemaps") },
		"header":               func() { s.Headers = c.StringSlice("header") },
		"keep-tracking-params": func() { s.KeepTrackingParams = c.Bool("keep-tracking-params") },
		"max-pages-per-host":   func() { s.MaxPagesPerHost = c.Int64("max-pages-per-host") },
		"max-path-repeat":      func() { s.MaxPathRepeat = c.Int("max-path-repeat") },
		"max-path-depth":       func() { s.MaxPathDepth = c.Int("max-path-depth") },
		"max-query-params":     func() { s.MaxQueryParams = c.Int("max-query-params") },
		"max-url-length":       func() { s.MaxURLLength = c.Int("max-url-length") },
		"robots-give-up":       func() { s.RobotsGiveUp = c.Duration("robots-give-up") },
		"shards":               func() { s.Shards = c.Int("shards") },
	}
	for flag, apply := range set {
		if c.IsSet(flag) {
			apply()
		}
	}
	return nil
}

func seedCommand() *cli.Command {
	return &cli.Command{
		Name:      "seed",
		Usage:     "create a crawl (or add URLs to it) with its settings",
		ArgsUsage: "URL... | -f FILE",
		Description: "Seeds are canonicalized and their hosts define the scope. The settings are stored in\n" +
			"Redis and every worker uses them; seeding an existing crawl adds URLs, and a flag\n" +
			"that contradicts the stored settings is refused.",
		Flags: append(seedFlags(), &cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read URLs from FILE, one per line ('-' for stdin; # starts a comment)"},
			skipSeenFlag(), sitemapFlag(), redisWaitFlag(0), allowEvictionFlag()),
		Action: func(c *cli.Context) error {
			if err := checkSeedFlags(c); err != nil {
				return usage(err)
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			return runSeed(c, rdb)
		},
	}
}

// seedBatch is how many seeds go to Redis at once: a seed file of any
// length streams through a buffer of this size.
const seedBatch = 10_000

// maxBadLines is how many unusable lines are quoted; the rest are counted.
const maxBadLines = 10

// errSomeSeedsBad: some seed lines were not usable URLs; the rest were
// seeded ('crawl' goes on with them, and exits 1 at the end).
type errSomeSeedsBad struct{ msg string }

func (e errSomeSeedsBad) Error() string { return e.msg }
func (e errSomeSeedsBad) ExitCode() int { return 1 }

func runSeed(c *cli.Context, rdb redis.UniversalClient) error {
	if err := checkEviction(c, rdb); err != nil {
		return err
	}
	k := crawl.KeysFor(c.String("crawl"))
	_, err := crawl.LoadSettings(c.Context, rdb, k)
	fresh := errors.Is(err, crawl.ErrNoCrawl)
	err = seedAll(c, rdb, k)
	var some errSomeSeedsBad
	if err != nil && fresh && !errors.As(err, &some) && c.Context.Err() == nil {
		// A crawl this seed created but could not fill (Redis out of
		// memory, a sitemap that failed) is taken back, not left empty.
		if _, rerr := crawl.Reset(context.WithoutCancel(c.Context), rdb, k.Name, false); rerr == nil {
			err = fmt.Errorf("%w; crawl %q was not created", err, k.Name)
		}
	}
	return err
}

func seedAll(c *cli.Context, rdb redis.UniversalClient, k crawl.Keys) error {
	s, err := settingsFromFlags(c, rdb, k)
	if err != nil {
		return err
	}
	var sd *crawl.Seeder
	var batch []*url.URL
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if sd == nil { // the crawl is created with its first usable seed
			if sd, err = crawl.NewSeeder(c.Context, rdb, k, s, crawl.SeedOptions{SkipSeen: c.Bool("skip-seen")}); err != nil {
				return err
			}
		}
		err := sd.Add(c.Context, batch)
		batch = batch[:0]
		return err
	}
	lines, bad := 0, 0
	warned := map[string]bool{}
	refuse := func(where string, err error) {
		lines++
		if bad++; bad <= maxBadLines {
			fmt.Fprintf(c.App.ErrWriter, "crawler: seed: %s: %v\n", where, err)
		}
	}
	take := func(where, text string) error {
		u, err := parse.Canonicalize(nil, text)
		if err != nil {
			refuse(where, err)
			return nil
		}
		lines++
		if !s.AllowPrivate && privateHost(u.Hostname()) && !warned[u.Host] {
			warned[u.Host] = true
			fmt.Fprintf(c.App.ErrWriter, "crawler: seed: %s is a private or loopback address: workers refuse it "+
				"unless the crawl is seeded with --allow-private\n", u.Host)
		}
		if batch = append(batch, u); len(batch) >= seedBatch {
			return flush()
		}
		return nil
	}
	for i, a := range c.Args().Slice() {
		if err := take(fmt.Sprintf("argument %d", i+1), a); err != nil {
			return err
		}
	}
	if f := c.String("file"); f != "" {
		if err := readSeedFile(f, take, refuse); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	var sitemaps []*url.URL
	for _, raw := range c.StringSlice("sitemap") {
		u, err := parse.Canonicalize(nil, raw)
		if err != nil {
			return fmt.Errorf("--sitemap %q: %v", raw, err)
		}
		sitemaps = append(sitemaps, u)
	}
	if len(sitemaps) > 0 {
		if sd == nil {
			if sd, err = crawl.NewSeeder(c.Context, rdb, k, s, crawl.SeedOptions{SkipSeen: c.Bool("skip-seen")}); err != nil {
				return err
			}
		}
		if err := sd.AddSitemaps(c.Context, sitemaps); err != nil {
			return err
		}
		lines += len(sitemaps)
	}
	if lines == 0 {
		return fmt.Errorf("no URLs to seed: give them as arguments, with -f FILE or --sitemap URL (see 'crawler seed --help')")
	}
	if sd == nil {
		return cli.Exit(fmt.Sprintf("seed: none of the %d URLs is usable; nothing seeded", lines), 1)
	}
	rep := sd.Report()
	msg := fmt.Sprintf("crawl %q: %d URLs queued", k.Name, rep.Queued)
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
	if bad > 0 {
		more := ""
		if bad > maxBadLines {
			more = fmt.Sprintf(" (the first %d are shown above)", maxBadLines)
		} else {
			more = " (see above)"
		}
		return errSomeSeedsBad{fmt.Sprintf("seed: %d of %d lines were not usable URLs%s; the rest were seeded", bad, lines, more)}
	}
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
