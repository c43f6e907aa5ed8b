package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/urfave/cli/v2"
)

// hostCommand sets a host's own rules in a running crawl (admin.ChangeHost).
func hostCommand() *cli.Command {
	return &cli.Command{
		Name:      "host",
		Usage:     "give one host its own rate, pause or block it, or clear what was set",
		ArgsUsage: "HOST",
		Description: "Changes one host of a running crawl for every worker, from their next pop:\n" +
			"  crawler host example.org --rate 0.2 --burst 1   a slower (or faster, or inf) rate than the crawl's\n" +
			"  crawler host example.org --pause 1h             no request to it for an hour\n" +
			"  crawler host example.org --block                no request to it again: its queued URLs end\n" +
			"                                                  with records, links to it are not queued, and\n" +
			"                                                  the command returns once no worker holds one\n" +
			"  crawler host example.org --clear                back to the crawl's rate, its pause or block lifted\n" +
			"A Crawl-delay in the host's robots.txt slower than its own rate still holds. HOST is\n" +
			"the host as its URLs name it (with its port, unless the scheme's default), or a URL.\n" +
			"'crawler status' lists the hosts with rules of their own; the event log says who set what.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "rate", Usage: "the host's own requests a second: a positive `NUMBER`, or inf"},
			&cli.IntFlag{Name: "burst", Value: 1, Usage: "with --rate, the host's bucket size"},
			&cli.DurationFlag{Name: "pause", Usage: "no request to the host for this long, up to 30 days (a 429 pauses the same way)"},
			&cli.BoolFlag{Name: "block", Usage: "no request to the host again (its queued URLs end with records 'skipped')"},
			&cli.DurationFlag{Name: "wait", Value: admin.BlockWait, Usage: "with --block, how long to wait for the workers to give back the host's URLs they hold"},
			&cli.BoolFlag{Name: "clear", Usage: "drop the host's own rate and lift its pause or block (first, when given with others)"},
			&cli.StringFlag{Name: "by", Value: whoAmI(), DefaultText: "USER@HOST", Usage: "who asked, said in the event log"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usage(fmt.Errorf("host takes one HOST (got %d arguments)", c.NArg()))
			}
			host, err := admin.NormalizeHost(c.Args().First())
			if err != nil {
				return usage(err)
			}
			ch := admin.HostChange{Pause: c.Duration("pause"), Clear: c.Bool("clear"), Block: c.Bool("block"), Wait: c.Duration("wait"), By: c.String("by")}
			if c.IsSet("rate") {
				if ch.Rate, err = settings.ParseRate(c.String("rate")); err != nil {
					return usage(fmt.Errorf("--rate: %v", err))
				}
				ch.Burst = c.Int("burst")
				if ch.Burst < 1 || ch.Burst > settings.MaxBurst {
					return usage(fmt.Errorf("--burst %d: want 1 to %d", ch.Burst, settings.MaxBurst))
				}
			} else if c.IsSet("burst") {
				return usage(errors.New("--burst goes with --rate"))
			}
			if c.IsSet("pause") && (ch.Pause <= 0 || ch.Pause > admin.MaxHostPause) {
				return usage(fmt.Errorf("--pause %v: want a positive duration up to %v, such as 10m (for longer, --block)", ch.Pause, admin.MaxHostPause))
			}
			if ch.Block && (ch.Rate != 0 || ch.Pause != 0) {
				return usage(errors.New("--block goes without --rate and --pause: a blocked host gets no request at all"))
			}
			if c.IsSet("wait") && (!ch.Block || ch.Wait <= 0) {
				return usage(errors.New("--wait goes with --block, and is a positive duration such as 30s"))
			}
			if ch.Rate == 0 && ch.Pause == 0 && !ch.Clear && !ch.Block {
				return usage(errors.New("say what to change: --rate, --pause, --block or --clear"))
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			did, err := admin.ChangeHost(c.Context, rdb, c.String("crawl"), host, ch)
			if len(did) > 0 {
				fmt.Fprintln(c.App.Writer, strings.Join(did, "\n"))
			}
			return err
		},
	}
}
