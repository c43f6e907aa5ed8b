package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/urfave/cli/v2"
)

// listed is one crawl as list shows it.
type listed struct {
	Name     string `json:"name"`
	State    string `json:"state"` // running, paused, done, or unreadable (Error says why)
	Pages    int64  `json:"pages"`
	Queued   int64  `json:"queued"`
	InFlight int64  `json:"in_flight"`
	Workers  int    `json:"workers"`
	Error    string `json:"error,omitempty"`
}

func listCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the crawls this Redis holds, each with its state, pages, queue and live workers",
		Description: "Every crawl's settings are found with SCAN (each master of a Cluster), then each one's status is read:\n" +
			"a few round trips a crawl. Give one of the names as --crawl to the other commands.",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print one JSON object a crawl, a line each"}},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usage(fmt.Errorf("list takes no arguments (got %q)", c.Args().First()))
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			names, err := keyspace.Crawls(c.Context, rdb)
			if err != nil {
				return fmt.Errorf("list: %w", err)
			}
			var out []listed
			for _, n := range names {
				l := listed{Name: n}
				st, err := status.Read(c.Context, rdb, n)
				switch {
				case err != nil:
					l.State, l.Error = "unreadable", err.Error()
				case st.Done:
					l.State = "done"
				case st.Hold != nil:
					l.State = "paused"
				default:
					l.State = "running"
				}
				if st != nil {
					l.Pages, l.Queued, l.InFlight, l.Workers = st.Counters["pages"], st.Frontier.Queued, st.Frontier.InFlight, len(st.Workers)
				}
				out = append(out, l)
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				for _, l := range out {
					if err := enc.Encode(l); err != nil {
						return err
					}
				}
				return nil
			}
			if len(out) == 0 {
				fmt.Fprintln(c.App.Writer, "no crawl in this Redis (crawler seed URL… makes one)")
				return nil
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CRAWL\tSTATE\tPAGES\tQUEUED\tIN FLIGHT\tWORKERS")
			for _, l := range out {
				state := l.State
				if l.Error != "" {
					state += ": " + l.Error
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", l.Name, state, l.Pages, l.Queued, l.InFlight, l.Workers)
			}
			return tw.Flush()
		},
	}
}
