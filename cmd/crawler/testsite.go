package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/urfave/cli/v2"
)

func testsiteCommand() *cli.Command {
	return &cli.Command{
		Name:  "testsite",
		Usage: "serve a deterministic synthetic site on loopback addresses, for trying and testing crawls",
		Description: "Host i listens on LISTEN-BASE+i. Every host answers /_truth (the URLs a correct crawl from\n" +
			"the hosts' home pages must fetch) and /_stats (requests per host, the most in any second,\n" +
			"URLs fetched more than twice, robots-disallowed URLs fetched). Crawl it with --allow-private.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "hosts", Value: 4, Usage: "number of hosts"},
			&cli.IntFlag{Name: "pages", Value: 100, Usage: "pages per host"},
			&cli.DurationFlag{Name: "latency", Usage: "delay added to every response (e.g. 50ms)"},
			&cli.StringFlag{Name: "listen-base", Value: "127.0.0.10", Usage: "first host's loopback address"},
			&cli.IntFlag{Name: "port", Value: 8080, Usage: "port on every host (0: any free one)"},
		},
		Action: func(c *cli.Context) error {
			site, err := testsite.Start(testsite.Config{Hosts: c.Int("hosts"), Pages: c.Int("pages"),
				Latency: c.Duration("latency"), ListenBase: c.String("listen-base"), Port: c.Int("port")})
			if err != nil {
				return err
			}
			defer site.Close()
			for _, r := range site.Roots() {
				fmt.Fprintln(c.App.Writer, r)
			}
			fmt.Fprintf(c.App.ErrWriter, "crawler: test site up: %d hosts, %d URLs in /_truth; Ctrl-C stops it\n",
				len(site.Hosts()), len(site.Truth()))
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
}
