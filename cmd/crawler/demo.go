package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redcrawl/crawler/dashboard"
	"github.com/redcrawl/crawler/demo"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "crawl a local test site with several workers and show what each primitive did",
		Description: "Everything runs in this process: an embedded Redis (unless --redis is given on its command line;\n" +
			"CRAWLER_REDIS is not used), a crawl named demo-XXXXXXXX (deleted at the end), the test\n" +
			"site on loopback addresses, and several workers. Halfway through, the worker that is\n" +
			"the scheduler stops, and another takes over under a higher epoch.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "workers", Value: 3, Usage: "worker processes to simulate"},
			&cli.IntFlag{Name: "hosts", Value: 3, Usage: "test site hosts"},
			&cli.IntFlag{Name: "pages", Value: 60, Usage: "pages per host"},
			&cli.Float64Flag{Name: "rate", Value: 20, Usage: "requests per second per host"},
			&cli.IntFlag{Name: "burst", Value: 2, Usage: "burst per host"},
			&cli.DurationFlag{Name: "latency", Value: 5 * time.Millisecond, Usage: "test site response delay"},
			&cli.StringFlag{Name: "dashboard", Value: "127.0.0.1:0", Usage: "serve the live dashboard on this address (port 0: a free one; 'off': none)"},
			&cli.DurationFlag{Name: "linger", Usage: "keep the dashboard up this long after the crawl (on a terminal: until Ctrl-C)"},
		},
		Action: runDemo,
	}
}

func runDemo(c *cli.Context) error {
	cfg := demo.Config{Workers: c.Int("workers"), Hosts: c.Int("hosts"), Pages: c.Int("pages"), Rate: c.Float64("rate"),
		Burst: c.Int("burst"), Latency: c.Duration("latency")}
	if err := cfg.Check(); err != nil {
		return err
	}
	// The demo never touches a crawl of the user's: it uses its own
	// embedded Redis unless --redis was given on its command line (not
	// just in the environment), and a name of its own, deleted after.
	rdb, closeRedis, err := connectOrEmbedIf(c, argGiven(c, "redis"))
	if err != nil {
		return err
	}
	defer closeRedis()
	return demo.Run(c.Context, rdb, cfg, c.App.Writer, func(name string) (func(), error) { return demoDashboard(c, rdb, name) })
}

// demoDashboard serves the demo crawl's dashboard and says where; the
// function it returns keeps it up as --linger says, then stops it.
func demoDashboard(c *cli.Context, rdb redis.UniversalClient, name string) (func(), error) {
	addr := c.String("dashboard")
	if addr == "off" || addr == "" {
		return func() {}, nil
	}
	if err := dashboard.CheckListen(addr, ""); err != nil {
		return nil, usage(fmt.Errorf("--dashboard: %v", strings.TrimPrefix(err.Error(), "--listen ")))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--dashboard: %v", err)
	}
	serving, stopServing := context.WithCancel(c.Context)
	wait := serveDashboard(serving, ln, rdb, dashboard.Config{Crawl: name})
	out := c.App.Writer
	fmt.Fprintf(out, "dashboard: %s (live: progress, workers, the hosts' token buckets, the scheduler's lock and epoch, the event log)\n", dashboardURL(ln.Addr(), false))
	return func() {
		switch {
		case isTerminal(out) && c.Duration("linger") == 0:
			fmt.Fprintf(out, "\nthe dashboard stays up with the crawl's final state: Ctrl-C ends the demo\n")
			<-c.Context.Done()
		case c.Duration("linger") > 0:
			sleep(c.Context, c.Duration("linger"))
		}
		stopServing()
		wait()
	}, nil
}
