package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redcrawl/crawler/dashboard"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

func dashboardCommand() *cli.Command {
	return &cli.Command{
		Name:  "dashboard",
		Usage: "serve a live web page of the crawl and its coordination (read-only, or with --control)",
		Description: "Shows, live: progress and pages/s, the frontier and each shard's share, workers with their\n" +
			"pages and last heartbeats, the scheduler's lock, epoch and handovers, the busiest hosts' token\n" +
			"buckets, paused hosts and why, the Bloom filter, and the event log (lock handovers, fenced\n" +
			"sweeps, paused hosts). It needs only Redis: run it on any machine that reaches the crawl's.\n" +
			"The page is served from the binary and loads nothing from elsewhere; it writes nothing (but\n" +
			"its controls, with --control), and shows no Redis address, password or request header. One\n" +
			"state a second is read for all open pages, about half a millisecond of Redis CPU\n" +
			"(docs/dashboard.md).\n" +
			"It listens on loopback; to listen beyond it, give --token: the URL printed then carries it.\n" +
			"With --control (which needs --token) the page also has buttons to pause and resume the crawl\n" +
			"and to pause (10 minutes) or block a host: each a POST carrying the token in its header, from\n" +
			"the page's own origin, and an event in the log naming the dashboard and the caller's address.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8090", EnvVars: []string{"CRAWLER_DASHBOARD_LISTEN"}, Usage: "address to serve the page on"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"CRAWLER_DASHBOARD_TOKEN"}, Usage: "a secret every request must carry (?token=); needed beyond loopback"},
			&cli.BoolFlag{Name: "control", Usage: "add buttons to pause and resume the crawl and to pause or block a host (needs --token)"},
			&cli.StringSliceFlag{Name: "allow-host", Usage: "a `NAME` the page may be opened by besides its IP address and localhost " +
				"(a proxy's in front of it; repeatable): a request for any other name is refused, as a DNS-rebinding page's would be"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usage(fmt.Errorf("dashboard takes no arguments (got %q); the crawl is --crawl", c.Args().First()))
			}
			if err := dashboard.CheckListen(c.String("listen"), c.String("token")); err != nil {
				return usage(err)
			}
			if c.Bool("control") && c.String("token") == "" {
				return usage(fmt.Errorf("--control needs --token SECRET: the controls change the crawl, and only the token's holder may"))
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			ln, err := net.Listen("tcp", c.String("listen"))
			if err != nil {
				return fmt.Errorf("--listen: %v", err)
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			wait := serveDashboard(ctx, ln, rdb, dashboard.Config{Crawl: c.String("crawl"), Token: c.String("token"), Control: c.Bool("control"),
				Hosts: c.StringSlice("allow-host")})
			fmt.Fprintf(c.App.ErrWriter, "crawler: dashboard of crawl %q at %s (Ctrl-C stops it)\n", c.String("crawl"), dashboardURL(ln.Addr(), c.String("token") != ""))
			return wait()
		},
	}
}

// serveDashboard serves the dashboard of cfg.Crawl on ln, and samples its
// history, until ctx ends; its streams end with ctx. The function it
// returns waits for that and shuts the server down, or returns the error
// that stopped the server before.
func serveDashboard(ctx context.Context, ln net.Listener, rdb redis.UniversalClient, cfg dashboard.Config) func() error {
	dash := dashboard.New(rdb, cfg)
	go dash.Run(ctx)
	srv := &http.Server{Handler: dash, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	return func() error {
		select {
		case err := <-served:
			return fmt.Errorf("dashboard: %v", err)
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return nil
	}
}

// dashboardURL is the page's address; with a token, where it goes and not
// the secret itself (no log or terminal keeps it).
func dashboardURL(addr net.Addr, token bool) string {
	host := addr.String()
	if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(a.Port))
	}
	u := "http://" + host + "/"
	if token {
		u += "?token=SECRET (SECRET: the token given)"
	}
	return u
}
