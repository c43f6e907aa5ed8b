package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/parse"
	"github.com/redcrawl/crawler/seedlist"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

// seedFlags are the settings' flags, made from settings.Table: each
// flag's name, type, default and help are the table's.
func seedFlags() []cli.Flag {
	d := settings.Default()
	var flags []cli.Flag
	for _, st := range settings.Table {
		flags = append(flags, settingFlag(st, &d))
	}
	return flags
}

// settingFlag is setting st's flag, with d's value as its default (nil: no
// default, as 'set' has: a flag not given leaves the setting as it is).
func settingFlag(st settings.Setting, d *settings.Settings) cli.Flag {
	var def any
	dt := st.DefaultText
	if d != nil {
		def = st.Value(d)
	} else {
		dt = "as it is"
	}
	switch st.Kind {
	case settings.KindInt:
		f := &cli.IntFlag{Name: st.Flag, Usage: st.Usage, DefaultText: dt}
		if st.DefaultText == "" && def != nil {
			f.Value = def.(int)
		}
		return f
	case settings.KindInt64:
		f := &cli.Int64Flag{Name: st.Flag, Usage: st.Usage, DefaultText: dt}
		if def != nil {
			f.Value = def.(int64)
		}
		return f
	case settings.KindFloat:
		f := &cli.Float64Flag{Name: st.Flag, Usage: st.Usage, DefaultText: dt}
		if def != nil {
			f.Value = def.(float64)
		}
		return f
	case settings.KindBool:
		f := &cli.BoolFlag{Name: st.Flag, Usage: st.Usage, DefaultText: dt}
		if def != nil {
			f.Value = def.(bool)
		}
		return f
	case settings.KindDuration:
		f := &cli.DurationFlag{Name: st.Flag, Usage: st.Usage, DefaultText: dt}
		if def != nil {
			f.Value = def.(time.Duration)
		}
		return f
	case settings.KindList:
		return &cli.StringSliceFlag{Name: st.Flag, Usage: st.Usage}
	default: // rate, string, scope, media types: text
		f := &cli.StringFlag{Name: st.Flag, Usage: st.Usage}
		if d != nil {
			f.Value = st.Format(d)
		}
		return f
	}
}

func sitemapFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "sitemap", Usage: "URL of a sitemap whose URLs to crawl (repeatable): XML, a sitemap index, text (one URL a line) or an RSS/Atom feed, gzip'd or not; it lists URLs under its own directory (sitemaps.org)"}
}

func priorityFlag() cli.Flag {
	return &cli.IntFlag{Name: "priority", Usage: fmt.Sprintf("these URLs' priority among their hosts' (%d to %d; links and sitemap URLs "+
		"get 0, or the sitemap's <priority>): a host's URLs of a higher one are fetched first, each at its host's rate; "+
		"across hosts the order stays the tokens'", frontier.MinPriority, frontier.MaxPriority)}
}

func skipSeenFlag() cli.Flag {
	return &cli.BoolFlag{Name: "skip-seen", Usage: "queue only seeds the crawl has not seen yet (for re-seeding big lists; " +
		"a Bloom false positive may then skip one). Without it every seed is queued"}
}

func skipBadFlag() cli.Flag {
	return &cli.BoolFlag{Name: "skip-bad", Usage: "seed the usable URLs when some lines are not (the first ten quoted, the rest counted). " +
		"Without it a seed is all or nothing: one unusable line, and nothing is seeded"}
}

// checkSeedFlags validates the flags that need no Redis, so a typo is
// reported as such even when Redis is not there.
func checkSeedFlags(c *cli.Context) error {
	s := settings.Default()
	if err := applySeedFlags(c, &s); err != nil {
		return err
	}
	if _, err := loginOf(c); err != nil {
		return err
	}
	if c.IsSet("shards") && (s.Shards < 1 || s.Shards > settings.MaxShards) {
		return fmt.Errorf("--shards %d: want 1 to %d", s.Shards, settings.MaxShards)
	}
	if n := s.MaxURLLength; c.IsSet("max-url-length") && (n < 16 || n > parse.MaxURLLength) {
		return fmt.Errorf("--max-url-length %d: want 16 to %d", n, parse.MaxURLLength)
	}
	if p := c.Int("priority"); c.IsSet("priority") && (p < frontier.MinPriority || p > frontier.MaxPriority) {
		return fmt.Errorf("--priority %d: want %d to %d", p, frontier.MinPriority, frontier.MaxPriority)
	}
	if c.NArg() == 0 && c.String("file") == "" && len(c.StringSlice("sitemap")) == 0 {
		return errors.New("no URLs: give them as arguments, with -f FILE, or with --sitemap URL")
	}
	for _, raw := range c.StringSlice("sitemap") {
		if _, err := parse.Canonicalize(nil, raw); err != nil {
			return fmt.Errorf("--sitemap %q: %v", raw, strings.TrimPrefix(err.Error(), "parse: "))
		}
	}
	if err := checkFlagValues(c, s); err != nil {
		return err
	}
	// The rest, checked together (burst, depth, rate, filters, Bloom size …).
	if err := s.Validate(); err != nil {
		return fmt.Errorf("%s (see 'crawler help seed')", strings.TrimPrefix(err.Error(), "crawl: "))
	}
	return nil
}

// checkFlagValues checks the given flags whose values have checks of their
// own (media types, headers, extract rules), each error naming its flag.
func checkFlagValues(c *cli.Context, s settings.Settings) error {
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
	return nil
}

// settingsFromFlags starts from the crawl's stored settings when it exists
// (so a plain 'seed URL' adds to it), else from the defaults, and applies
// the flags that were given.
func settingsFromFlags(c *cli.Context, rdb redis.UniversalClient, name string) (settings.Settings, error) {
	s, err := settings.Load(c.Context, rdb, name)
	fresh := err != nil
	if fresh {
		s = settings.Default()
	}
	if err := applySeedFlags(c, &s); err != nil {
		return s, err
	}
	if _, cluster := rdb.(*redis.ClusterClient); fresh && cluster && !c.IsSet("shards") {
		s.Shards = settings.ClusterShards // a new crawl on a cluster: spread over its masters
	}
	return s, s.Validate()
}

// applySeedFlags sets the settings whose flags were given.
func applySeedFlags(c *cli.Context, s *settings.Settings) error {
	for _, st := range settings.Table {
		if !c.IsSet(st.Flag) {
			continue
		}
		v := flagText(c, st)
		if err := st.Parse(s, v); err != nil {
			switch st.Kind {
			case settings.KindScope:
				return fmt.Errorf("--%s %q: want host, domain or any", st.Flag, v)
			case settings.KindRate:
				_, err = settings.ParseRate(v)
				return fmt.Errorf("--%v", err)
			}
			return fmt.Errorf("--%s: %v", st.Flag, err)
		}
	}
	return nil
}

// flagText is setting st's flag's value as the settings hash stores it.
func flagText(c *cli.Context, st settings.Setting) string {
	switch st.Kind {
	case settings.KindInt:
		return strconv.Itoa(c.Int(st.Flag))
	case settings.KindInt64:
		return strconv.FormatInt(c.Int64(st.Flag), 10)
	case settings.KindFloat:
		return strconv.FormatFloat(c.Float64(st.Flag), 'g', -1, 64)
	case settings.KindBool:
		return strconv.FormatBool(c.Bool(st.Flag))
	case settings.KindDuration:
		return c.Duration(st.Flag).String()
	case settings.KindList:
		return strings.Join(c.StringSlice(st.Flag), "\n")
	}
	return c.String(st.Flag)
}

func seedCommand() *cli.Command {
	return &cli.Command{
		Name:      "seed",
		Usage:     "create a crawl (or add URLs to it) with its settings",
		ArgsUsage: "URL... | -f FILE",
		Description: "Seeds are canonicalized and their hosts define the scope. The settings are stored in\n" +
			"Redis and every worker uses them; seeding an existing crawl adds URLs, and a flag\n" +
			"that contradicts the stored settings is refused.",
		Flags: append(append(seedFlags(), &cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read URLs from FILE, one per line ('-' for stdin; # starts a comment). " +
			"A file is read whole before anything is seeded; stdin or a FIFO is streamed, and its first unusable line stops the seed, saying where to go on from"},
			&cli.IntFlag{Name: "from-line", Usage: "with -f, start at this line of the file (counted from 1, as the messages count): " +
				"to finish a seed that stopped, with the line it said"},
			&cli.DurationFlag{Name: "redis-retry", Value: time.Minute, Usage: "how long a seed rides out a Redis that stops answering " +
				"mid-way (a restart, a Sentinel or Cluster failover), retrying with back-off; past it, it stops and says where to go on from"},
			skipSeenFlag(), skipBadFlag(), priorityFlag(), sitemapFlag(), redisWaitFlag(0), allowEvictionFlag()), loginFlags()...),
		Action: func(c *cli.Context) error {
			if err := checkSeedFlags(c); err != nil {
				return usage(err)
			}
			// The URLs are checked before Redis is: a bad one is said as
			// such whether Redis answers or not.
			if !c.Bool("skip-bad") {
				if res, err := seedlist.Check(seedOptions(c)); err != nil {
					return seedError(res, err)
				}
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			return runSeed(c, rdb, !c.Bool("skip-bad"))
		},
	}
}

type errSomeSeedsBad struct{ msg string }

func (e errSomeSeedsBad) Error() string { return e.msg }
func (e errSomeSeedsBad) ExitCode() int { return 1 }

// runSeed seeds the crawl the flags name with their URLs, checked: by
// seedlist.Check already, before Redis was connected.
func runSeed(c *cli.Context, rdb redis.UniversalClient, checked bool) error {
	if err := checkEviction(c, rdb); err != nil {
		return err
	}
	name := c.String("crawl")
	_, err := settings.Load(c.Context, rdb, name)
	fresh := errors.Is(err, crawl.ErrNoCrawl)
	err = seedAll(c, rdb, name, checked)
	var some errSomeSeedsBad
	var stopped *seedlist.Stopped
	if errors.As(err, &stopped) && stopped.Queued > 0 {
		return err // what went in stays: the message says how to finish
	}
	if err != nil && fresh && !errors.As(err, &some) && c.Context.Err() == nil {
		// A crawl this seed created but could not fill (Redis out of
		// memory, a sitemap that failed) is taken back, not left empty.
		if _, rerr := admin.Reset(context.WithoutCancel(c.Context), rdb, name, false); rerr == nil {
			err = fmt.Errorf("%w; crawl %q was not created", err, name)
		}
	}
	return err
}

func seedAll(c *cli.Context, rdb redis.UniversalClient, name string, checked bool) error {
	s, err := settingsFromFlags(c, rdb, name)
	if err != nil {
		return err
	}
	login, _ := loginOf(c) // checked before Redis was connected
	if login.Set() {
		if err := checkLoginRobots(c.Context, c.App.ErrWriter, s, login); err != nil {
			return cli.Exit("seed: "+err.Error(), 1)
		}
	}
	o := seedOptions(c)
	o.Checked = checked // seedlist.Check ran before Redis was connected
	res, err := seedlist.Run(c.Context, rdb, name, s, o)
	if err != nil {
		return seedError(res, err)
	}
	if login.Set() {
		if err := saveLogin(c.Context, rdb, name, login); err != nil {
			return err
		}
	}
	return seedReport(c, name, res)
}

// seedOptions are the seed's URLs and how to take them, from its flags.
func seedOptions(c *cli.Context) seedlist.Options {
	return seedlist.Options{Args: c.Args().Slice(), File: c.String("file"),
		FromLine: c.Int("from-line"), Sitemaps: c.StringSlice("sitemap"), SkipSeen: c.Bool("skip-seen"), SkipBad: c.Bool("skip-bad"),
		Priority: c.Int("priority"), RedisRetry: c.Duration("redis-retry"), Say: c.App.ErrWriter}
}

// seedError says what a seed's error means to its user.
func seedError(res seedlist.Result, err error) error {
	switch {
	case errors.Is(err, seedlist.ErrNoURLs):
		return fmt.Errorf("no URLs to seed: give them as arguments, with -f FILE or --sitemap URL (see 'crawler seed --help')")
	case errors.Is(err, seedlist.ErrNoneUsable):
		return cli.Exit(fmt.Sprintf("seed: none of the %d URLs is usable; nothing seeded", res.Lines), 1)
	}
	return err
}

// seedReport says what the seed did, and exits 1 when some lines were
// not usable.
func seedReport(c *cli.Context, name string, res seedlist.Result) error {
	rep := res.Seeded
	msg := fmt.Sprintf("crawl %q: %s queued", name, plural(rep.Queued, "URL"))
	switch {
	case rep.Seen > 0 && c.Bool("skip-seen"):
		msg += fmt.Sprintf(", %d skipped as already seen", rep.Seen)
	case rep.Seen > rep.Moved:
		msg += fmt.Sprintf(" (%d of them already seen by the crawl: seeds are queued anyway; --skip-seen skips them)", rep.Seen-rep.Moved)
	}
	if rep.Moved > 0 {
		msg += fmt.Sprintf("; %d of them queued or being fetched already: moved to this seed's priority or left to their fetch, not queued twice", rep.Moved)
	}
	if rep.Duplicates > 0 {
		msg += fmt.Sprintf(", %d duplicates removed", rep.Duplicates)
	}
	fmt.Fprintln(c.App.Writer, msg)
	if res.Bad == 0 {
		return nil
	}
	more := " (see above)"
	if res.Bad > seedlist.MaxBadLines {
		more = fmt.Sprintf(" (the first %d are shown above)", seedlist.MaxBadLines)
	}
	return errSomeSeedsBad{fmt.Sprintf("seed: %d of %d lines were not usable URLs%s; the rest were seeded", res.Bad, res.Lines, more)}
}

// plural is n and noun, the noun with an s but for one.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
