package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/urfave/cli/v2"
)

func testsiteCommand() *cli.Command {
	return &cli.Command{
		Name:  "testsite",
		Usage: "serve a deterministic synthetic site of several hosts, for trying and testing crawls",
		Description: "Host i listens on LISTEN-BASE+i; with --names, the named hosts share one listener (--listen)\n" +
			"and are told apart by the Host header, as in a compose network. Every host answers /_truth\n" +
			"(the URLs a correct crawl from the hosts' home pages must fetch), /_fetchable (every URL it\n" +
			"requests: the truth, redirects, 404s, files) and /_stats (requests per host, the most in any\n" +
			"second, URLs fetched more than once, robots-disallowed URLs fetched).\n" +
			"--versioned pages answer conditional requests and change on POST /_change?fraction=F (or by\n" +
			"themselves, --change-every D); /_truth?versions says which version of each page is current.\n" +
			"--named-hosts N --dns ADDR serves thousands of host names on one listener and answers DNS\n" +
			"for them, as the web would (crawl with 'crawler work --dns ADDR').\n" +
			"Crawl it with --allow-private.",
		Flags:  testsiteFlags(),
		Action: runTestsite,
	}
}

// testsiteFlags are the testsite command's flags.
func testsiteFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "hosts", Value: 4, Usage: "number of hosts"},
		&cli.IntFlag{Name: "pages", Value: 100, Usage: "pages per host"},
		&cli.DurationFlag{Name: "latency", Usage: "delay added to every response (e.g. 50ms)"},
		&cli.StringFlag{Name: "listen-base", Value: "127.0.0.10", Usage: "first host's loopback address"},
		&cli.IntFlag{Name: "port", Value: 8080, Usage: "port on every host (0: any free one); with --names, the port in the site's URLs"},
		&cli.StringFlag{Name: "names", Usage: "serve these host names (comma-separated, e.g. a.site.test,b.site.test) on one listener instead"},
		&cli.StringFlag{Name: "listen", Value: ":8080", Usage: "with --names, the address to listen on"},
		&cli.IntFlag{Name: "named-hosts", Usage: "serve N named hosts, h1.site.test to hN.site.test, on one listener (as --names does): for thousands of hosts"},
		&cli.StringFlag{Name: "dns", Usage: "with --names or --named-hosts, answer DNS for them on this address (e.g. 127.0.0.1:5353), each resolving to the listener's; " +
			"crawl with 'crawler work --dns' at the same address"},
		&cli.IntFlag{Name: "slow-every", Usage: "every Nth host answers ten times slower than --latency"},
		&cli.IntFlag{Name: "fail-every", Usage: "every Nth host answers each page's first request with 503 and Retry-After: 1"},
		&cli.IntFlag{Name: "scripted", Usage: "the last N hosts are application shells: their links are built by a script from a JSON " +
			"endpoint, so only a browser finds them (/_truth lists every page, /_truth?plain what a crawl that does not render finds); " +
			"the first such host's home page also reaches for two URLs outside the scope, which /_stats reports as trapped if they are requested"},
		&cli.BoolFlag{Name: "robots", Usage: "every host serves a robots.txt of its own (otherwise only the first does, and the others answer 404)"},
		&cli.BoolFlag{Name: "versioned", Usage: "pages /p/N.html carry a version, an ETag and a Last-Modified, and answer If-None-Match and If-Modified-Since " +
			"with 304 while unchanged; POST /_change?fraction=F changes that fraction of them, /_truth?versions lists every page's version (for recrawls)"},
		&cli.DurationFlag{Name: "change-every", Usage: "pages change by themselves every period (implies --versioned): /p/N.html with N%10 == 0 every period, " +
			"N%10 == 1 every fourth, the others never"},
	}
}

// runTestsite serves the site until interrupted.
func runTestsite(c *cli.Context) error {
	cfg, err := testsiteConfig(c)
	if err != nil {
		return err
	}
	site, err := testsite.Start(cfg)
	if err != nil {
		return err
	}
	defer site.Close()
	for _, r := range site.Roots() {
		fmt.Fprintln(c.App.Writer, r)
	}
	if d := site.DNS(); d != nil {
		fmt.Fprintf(c.App.ErrWriter, "crawler: DNS for the named hosts on %s (crawler work --dns %s)\n", d.Addr(), d.Addr())
	}
	browserOnly := ""
	if cfg.Scripted > 0 {
		browserOnly = fmt.Sprintf(" (%d of them only a browser finds)", len(site.Truth())-len(site.PlainTruth()))
	}
	fmt.Fprintf(c.App.ErrWriter, "crawler: test site up: %d hosts, %d URLs in /_truth%s; Ctrl-C stops it\n",
		len(site.Hosts()), len(site.Truth()), browserOnly)
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

// testsiteConfig reads the flags into the site's config, refusing those
// that do not go together.
func testsiteConfig(c *cli.Context) (testsite.Config, error) {
	if c.Int("pages") < 1 || c.Int("pages") > 1_000_000 {
		return testsite.Config{}, usage(fmt.Errorf("--pages %d: want 1 to 1000000", c.Int("pages")))
	}
	if c.Int("hosts") < 1 {
		return testsite.Config{}, usage(fmt.Errorf("--hosts %d: want 1 or more", c.Int("hosts")))
	}
	if c.Duration("latency") < 0 {
		return testsite.Config{}, usage(fmt.Errorf("--latency %v: want 0 or more", c.Duration("latency")))
	}
	if p := c.Int("port"); p < 0 || p > 65535 {
		return testsite.Config{}, usage(fmt.Errorf("--port %d: want 0 to 65535", p))
	}
	names := splitNames(c.String("names"))
	if n := c.Int("named-hosts"); c.IsSet("named-hosts") {
		if n < 1 || n > 1_000_000 || c.IsSet("names") {
			return testsite.Config{}, usage(fmt.Errorf("--named-hosts %d: want 1 to 1000000, and not with --names", n))
		}
		names = testsite.Numbered(n, "site.test")
	}
	named, namesFlag := len(names) > 0, "--names"
	if c.IsSet("named-hosts") {
		namesFlag = "--named-hosts"
	}
	if named && (c.IsSet("hosts") || c.IsSet("listen-base")) {
		return testsite.Config{}, usage(fmt.Errorf("%s with --hosts or --listen-base: named hosts share one listener (--listen); give one way", namesFlag))
	}
	if c.IsSet("listen") && !named {
		return testsite.Config{}, usage(fmt.Errorf("--listen is for --names; loopback hosts listen on --listen-base+i"))
	}
	if c.IsSet("dns") && !named {
		return testsite.Config{}, usage(fmt.Errorf("--dns is for --names or --named-hosts: loopback hosts are addresses, not names"))
	}
	if c.Duration("change-every") < 0 {
		return testsite.Config{}, usage(fmt.Errorf("--change-every %v: want a period above 0 (or none)", c.Duration("change-every")))
	}
	if c.Int("slow-every") < 0 || c.Int("fail-every") < 0 {
		return testsite.Config{}, usage(fmt.Errorf("--slow-every and --fail-every: want 0 (none) or more"))
	}
	if err := testsite.CheckNames(names); err != nil {
		return testsite.Config{}, usage(err)
	}
	if n := c.Int("scripted"); n < 0 || !named && n > c.Int("hosts") {
		return testsite.Config{}, usage(fmt.Errorf("--scripted %d: want 0 to the number of hosts (%d)", n, c.Int("hosts")))
	}
	port := c.Int("port")
	if named && !c.IsSet("port") {
		port = 0 // the listener's
	}
	return testsite.Config{Hosts: c.Int("hosts"), Pages: c.Int("pages"),
		Latency: c.Duration("latency"), ListenBase: c.String("listen-base"), Port: port,
		Names: names, Listen: c.String("listen"), DNS: c.String("dns"),
		SlowEvery: c.Int("slow-every"), FailEvery: c.Int("fail-every"), Robots: c.Bool("robots"),
		Versioned: c.Bool("versioned"), ChangeEvery: c.Duration("change-every"), Scripted: c.Int("scripted")}, nil
}

// splitNames reads --names: host names separated by commas (spaces allowed).
func splitNames(s string) []string {
	var names []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}
