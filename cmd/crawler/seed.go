package main

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/redcrawl/crawler/crawl"
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
		&cli.BoolFlag{Name: "allow-private", Usage: "allow loopback and private addresses (needed for the test site and intranets)"},
	}
}

// checkSeedFlags validates the flags that need no Redis, so a typo is
// reported as such even when Redis is not there.
func checkSeedFlags(c *cli.Context) error {
	if c.IsSet("scope") {
		if _, err := parse.ParseScopeMode(c.String("scope")); err != nil {
			return fmt.Errorf("--scope %q: want host, domain or any", c.String("scope"))
		}
	}
	if c.IsSet("rate") {
		if _, err := crawl.ParseRate(c.String("rate")); err != nil {
			return fmt.Errorf("--%v", err)
		}
	}
	return nil
}

// settingsFromFlags starts from the crawl's stored settings when it exists
// (so a plain 'seed URL' adds to it), else from the defaults, and applies
// the flags that were given.
func settingsFromFlags(c *cli.Context, rdb *redis.Client, k crawl.Keys) (crawl.Settings, error) {
	s, err := crawl.LoadSettings(c.Context, rdb, k)
	if err != nil {
		s = crawl.DefaultSettings()
	}
	if c.IsSet("scope") {
		m, err := parse.ParseScopeMode(c.String("scope"))
		if err != nil {
			return s, fmt.Errorf("--scope %q: want host, domain or any", c.String("scope"))
		}
		s.Scope = m
	}
	if c.IsSet("max-depth") {
		s.MaxDepth = c.Int("max-depth")
	}
	if c.IsSet("max-pages") {
		s.MaxPages = c.Int64("max-pages")
	}
	if c.IsSet("rate") {
		r, err := crawl.ParseRate(c.String("rate"))
		if err != nil {
			return s, fmt.Errorf("--%v", err)
		}
		s.Rate = r
	}
	if c.IsSet("burst") {
		s.Burst = c.Int("burst")
	}
	if c.IsSet("user-agent") {
		s.UserAgent = c.String("user-agent")
	}
	if c.IsSet("expected-urls") {
		s.ExpectedURLs = c.Int64("expected-urls")
	}
	if c.IsSet("fp-rate") {
		s.FPRate = c.Float64("fp-rate")
	}
	if c.IsSet("allow-private") {
		s.AllowPrivate = c.Bool("allow-private")
	}
	return s, s.Validate()
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
			redisWaitFlag(0)),
		Action: func(c *cli.Context) error {
			if err := checkSeedFlags(c); err != nil {
				return err
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			_, err = runSeed(c, rdb)
			return err
		},
	}
}

type seedLine struct {
	where string // "argument 2" or "urls.txt:14"
	text  string
}

func runSeed(c *cli.Context, rdb *redis.Client) (crawl.Settings, error) {
	k := crawl.KeysFor(c.String("crawl"))
	s, err := settingsFromFlags(c, rdb, k)
	if err != nil {
		return s, err
	}
	var lines []seedLine
	for i, a := range c.Args().Slice() {
		lines = append(lines, seedLine{fmt.Sprintf("argument %d", i+1), a})
	}
	if f := c.String("file"); f != "" {
		fl, err := readSeedFile(f)
		if err != nil {
			return s, err
		}
		lines = append(lines, fl...)
	}
	if len(lines) == 0 {
		return s, fmt.Errorf("no URLs to seed: give them as arguments or with -f FILE (see 'crawler seed --help')")
	}
	var seeds []*url.URL
	bad := 0
	for _, l := range lines {
		u, err := parse.Canonicalize(nil, l.text)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crawler: seed: %s: %v\n", l.where, err)
			bad++
			continue
		}
		seeds = append(seeds, u)
	}
	if len(seeds) == 0 {
		return s, cli.Exit(fmt.Sprintf("seed: none of the %d URLs is usable; nothing seeded", len(lines)), 1)
	}
	rep, err := crawl.Seed(c.Context, rdb, k, s, seeds)
	if err != nil {
		return s, err
	}
	fmt.Fprintf(c.App.Writer, "crawl %q: %d URLs queued, %d already seen\n", k.Name, rep.Queued, rep.Known)
	if bad > 0 {
		return s, cli.Exit(fmt.Sprintf("seed: %d of %d lines were not usable URLs (see above); the rest were seeded", bad, len(lines)), 1)
	}
	return s, nil
}

func readSeedFile(name string) ([]seedLine, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("seed: %v", err)
		}
		defer f.Close()
		r = f
	} else {
		name = "stdin"
	}
	var out []seedLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		out = append(out, seedLine{fmt.Sprintf("%s:%d", name, n), t})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("seed: reading %s: %v", name, err)
	}
	return out, nil
}
