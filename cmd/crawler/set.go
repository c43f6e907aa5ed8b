package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/urfave/cli/v2"
)

// setCommand changes a running crawl's settings (admin.SetSettings).
func setCommand() *cli.Command {
	var flags []cli.Flag
	for _, st := range settings.Table {
		f := settingFlag(st, nil) // no defaults: a flag not given leaves its setting as it is
		if !st.Live {
			hide(f) // known, to say why it cannot change
		}
		flags = append(flags, f)
	}
	flags = append(flags, &cli.StringFlag{Name: "by", Value: whoAmI(), DefaultText: "USER@HOST", Usage: "who asked, said in the event log"})
	return &cli.Command{
		Name:  "set",
		Usage: "change a running crawl's settings: rate, budget, filters, user agent …",
		Description: "Changes the settings given, for every worker, without a restart:\n" +
			"  crawler set --rate 0.5 --burst 2          slower: from each host's next token\n" +
			"  crawler set --max-pages 5000              a higher budget (a crawl that ended on its budget goes on)\n" +
			"  crawler set --deny '/archive/' --max-depth 3\n" +
			"The values are checked as seed checks them, and the change is written in one step, only\n" +
			"if no other change came meanwhile (else it is made again on the new settings). Workers\n" +
			"hear of it at once; one that missed the message learns it at its next exchange, and\n" +
			"until it has read the new settings Redis pops nothing for it. The rate, burst, delays,\n" +
			"budget and per-host cap hold from the next pop; filters, depth, trap limits, extract\n" +
			"rules, user agent and headers from each worker's next page. A list flag (--allow,\n" +
			"--deny, --header, --extract) replaces the whole list; give it once with '' to empty it.\n" +
			"The user agent may change, but not its first word, which robots.txt is matched against.\n" +
			"The scope, the Bloom filter's size, the shards and the revisit settings stay as seeded.\n" +
			"'crawler status' shows the settings in force; the event log says who changed what.",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usage(fmt.Errorf("set takes no arguments (got %q): give settings as flags, such as --rate 0.5", c.Args().First()))
			}
			given := map[string]string{}
			for _, st := range settings.Table {
				if !c.IsSet(st.Flag) {
					continue
				}
				if !st.Live {
					return usage(fmt.Errorf("--%s %s: %s", st.Flag, admin.ErrNotLive, admin.NotLiveWhy(st)))
				}
				given[st.Flag] = flagText(c, st)
			}
			if len(given) == 0 {
				return usage(errors.New("say what to change: --" + strings.Join(admin.LiveFlags(), ", --")))
			}
			// The values, checked before Redis is asked: a typo is said as one.
			s := settings.Default()
			if err := applySeedFlags(c, &s); err != nil {
				return usage(err)
			}
			if err := checkFlagValues(c, s); err != nil {
				return usage(err)
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			rep, err := admin.SetSettings(c.Context, rdb, c.String("crawl"), given, c.String("by"))
			if err != nil {
				return errors.New(strings.TrimPrefix(err.Error(), "crawl: "))
			}
			fmt.Fprintf(c.App.Writer, "crawl %s: %s\n", c.String("crawl"), rep.Sentence())
			return nil
		},
	}
}

// hide hides a flag from the help.
func hide(f cli.Flag) {
	switch f := f.(type) {
	case *cli.IntFlag:
		f.Hidden = true
	case *cli.Int64Flag:
		f.Hidden = true
	case *cli.Float64Flag:
		f.Hidden = true
	case *cli.BoolFlag:
		f.Hidden = true
	case *cli.DurationFlag:
		f.Hidden = true
	case *cli.StringSliceFlag:
		f.Hidden = true
	case *cli.StringFlag:
		f.Hidden = true
	}
}
