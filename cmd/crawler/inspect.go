package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

// The commands that look at a crawl rather than crawl: status, export, reset.

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show a crawl's progress: pages, HTTP statuses, frontier, busiest hosts, Bloom filter, scheduler, workers",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON (with --watch, one object a line)"},
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "refresh until the crawl is done or Ctrl-C"},
			&cli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "with --watch, refresh this often"},
		},
		Action: func(c *cli.Context) error {
			if d := c.Duration("interval"); d < 100*time.Millisecond {
				return usage(fmt.Errorf("--interval %v: want 100ms or more", d))
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			tty := isTerminal(c.App.Writer)
			for {
				st, err := status.Read(ctx, rdb, c.String("crawl"))
				if ctx.Err() != nil {
					return nil // Ctrl-C while watching
				}
				if err != nil {
					return err
				}
				if !c.Bool("watch") {
					return printStatus(c.App.Writer, st, c.Bool("json"))
				}
				if err := watchStatus(c.App.Writer, st, c.Bool("json"), tty); err != nil || st.Done {
					return err
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(c.Duration("interval")):
				}
			}
		},
	}
}

// watchStatus prints one refresh of status --watch: on a terminal, over
// the last one; elsewhere after it, with the time.
func watchStatus(w io.Writer, st *status.Status, asJSON, tty bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(st)
	}
	if tty {
		io.WriteString(w, "\033[H\033[2J") // home, clear screen
	}
	fmt.Fprintf(w, "%s\n", time.Now().Format(time.DateTime))
	return printStatus(w, st, false)
}

func printStatus(w io.Writer, st *status.Status, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	_, err := fmt.Fprint(w, st.String())
	return err
}

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "print the crawl's result records as JSON lines",
		Description: "Reads the results stream in Redis, which keeps the newest million records: if older ones were\n" +
			"trimmed before this export, it says how many on stderr (the workers' --out files have them all).\n" +
			"With --follow it returns when the crawl is done, exit 0; stopped before that (SIGINT, SIGTERM),\n" +
			"it exits 1, so a compose service running it waits for the crawl and reports how it ended. Following, it\n" +
			"waits out a Redis it cannot reach (a restart, a failover) for up to 5 minutes and reads on where it was.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"F"}, Usage: "then print records as they arrive, until the crawl is done"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "write the records to FILE (replacing it) instead of standard output; " +
				"with --follow, say on stderr every 10 s how many so far"},
			&cli.BoolFlag{Name: "wait-workers", Usage: "with --follow, once the crawl is done also wait (up to 2 minutes) until every worker " +
				"has stopped, so their WARC and --out files are complete"},
			&cli.StringFlag{Name: "group", Usage: "with --follow, read through the consumer group `NAME`: each record is acknowledged once written " +
				"(--out is then appended to, unbuffered), a restarted export of the same --consumer is given again what it had not acknowledged " +
				"(each record carries its stream_id, to drop a repeat), exports of one group share the records, and the results are trimmed " +
				"only below what every group acknowledged (status says when a group lags toward the million the streams keep)"},
			&cli.StringFlag{Name: "consumer", Usage: "with --group, this reader's `NAME` in the group, the same across its restarts (default: the host's name; " +
				"in a container give one: its host name changes when it restarts). Records another reader left unacknowledged " +
				"are taken over once they have waited a minute, and a reader is not done while any wait"},
		},
		Action: runExport,
	}
}

func runExport(c *cli.Context) error {
	if c.Bool("wait-workers") && !c.Bool("follow") {
		return usage(errors.New("--wait-workers waits after --follow: give both"))
	}
	if c.String("group") != "" || c.IsSet("consumer") {
		return runExportGroup(c)
	}
	rdb, err := connect(c)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, finish, err := exportOut(c.App.Writer, c.String("out"))
	if err != nil {
		return err
	}
	counted := &lineCounter{w: out}
	if c.String("out") != "" && c.Bool("follow") {
		pctx, stopProgress := context.WithCancel(ctx)
		defer stopProgress()
		go func() {
			for sleep(pctx, 10*time.Second) {
				fmt.Fprintf(c.App.ErrWriter, "crawler: export: %d records so far\n", counted.n.Load())
			}
		}()
	}
	rep, err := admin.Export(ctx, rdb, c.String("crawl"), counted, c.Bool("follow"))
	if ferr := finish(); err == nil {
		err = ferr
	}
	if rep.Trimmed > 0 {
		fmt.Fprintf(c.App.ErrWriter, "crawler: export: %s\n", trimmedWhy(context.WithoutCancel(ctx), rdb, c.String("crawl"), rep))
	}
	if err != nil {
		return err
	}
	exportSummary(c, rep)
	if c.Bool("follow") && !rep.Done {
		return errors.New("export: stopped before the crawl was done")
	}
	if c.Bool("follow") && c.Bool("wait-workers") {
		return awaitWorkers(ctx, c, rdb, 2*time.Minute)
	}
	return nil
}

// exportOut is where export writes: stdout, or the file name (replaced),
// buffered; finish flushes, syncs and closes it, and says what failed.
func exportOut(stdout io.Writer, name string) (io.Writer, func() error, error) {
	if name == "" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, fmt.Errorf("--out: %v", err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	return bw, func() error {
		defer f.Close()
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("--out %s: %v", name, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("--out %s: %v", name, err)
		}
		return f.Close()
	}, nil
}

// exportSummary says on stderr how many records went where, and, of a
// recrawl, how many pages changed (stdout holds only the records).
func exportSummary(c *cli.Context, rep admin.ExportReport) {
	switch line := rep.ChangeLine(); {
	case c.String("out") != "" && line != "":
		fmt.Fprintf(c.App.ErrWriter, "crawler: export: %d records written to %s (pages: %s)\n", rep.Written, c.String("out"), line)
	case c.String("out") != "":
		fmt.Fprintf(c.App.ErrWriter, "crawler: export: %d records written to %s\n", rep.Written, c.String("out"))
	case rep.Changes[crawl.ChangeChanged]+rep.Changes[crawl.ChangeUnchanged]+rep.Changes[crawl.ChangeGone] > 0:
		fmt.Fprintf(c.App.ErrWriter, "crawler: export: %d records (pages: %s)\n", rep.Written, line)
	}
}

// lineCounter counts the records (lines) written through it.
type lineCounter struct {
	w io.Writer
	n atomic.Int64
}

func (l *lineCounter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	l.n.Add(int64(bytes.Count(p[:n], []byte{'\n'})))
	return n, err
}

// awaitWorkers waits until no worker of the crawl is alive (each
// deregisters once its files are closed), at most limit.
func awaitWorkers(ctx context.Context, c *cli.Context, rdb redis.UniversalClient, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	said := false
	for {
		st, err := status.Read(ctx, rdb, c.String("crawl"))
		if err != nil {
			return fmt.Errorf("export: waiting for the workers: %w", err)
		}
		if len(st.Workers) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(c.App.ErrWriter, "crawler: export: the crawl is done, but %d workers still run %v later (%s; "+
				"started without --exit-when-done?); not waiting longer\n", len(st.Workers), limit, strings.Join(st.Workers, ", "))
			return nil
		}
		if !said {
			fmt.Fprintf(c.App.ErrWriter, "crawler: export: the crawl is done; waiting for %d workers to stop\n", len(st.Workers))
			said = true
		}
		if !sleep(ctx, 250*time.Millisecond) {
			return errors.New("export: stopped while waiting for the workers")
		}
	}
}

func resetCommand() *cli.Command {
	return &cli.Command{
		Name:  "reset",
		Usage: "delete every key of the crawl (found with SCAN)",
		Description: "Refused while workers are alive (see 'crawler status'), unless --force: then the\n" +
			"workers are told the crawl is gone, stop with an error, and the keys are deleted once\n" +
			"every worker has stopped (at most a lease, about 10 s), so none reappears.",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "reset even while workers are alive: they stop with an error"}},
		Action: func(c *cli.Context) error {
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			rep, err := admin.Reset(c.Context, rdb, c.String("crawl"), c.Bool("force"))
			if err != nil {
				return err
			}
			msg := fmt.Sprintf("crawl %q: %d keys deleted", c.String("crawl"), rep.Deleted)
			if len(rep.Stopped) > 0 {
				msg += fmt.Sprintf(" after %d workers stopped (%s)", len(rep.Stopped), strings.Join(rep.Stopped, ", "))
			}
			if len(rep.Silent) > 0 {
				msg += fmt.Sprintf("; %d went silent without saying they stopped (%s: hung, or cut off from Redis): "+
					"if they reach Redis again, a crawl seeded anew under this name refuses them and they stop",
					len(rep.Silent), strings.Join(rep.Silent, ", "))
			}
			fmt.Fprintln(c.App.Writer, msg)
			return nil
		},
	}
}

// sleep waits d; false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func recrawlCommand() *cli.Command {
	return &cli.Command{
		Name:  "recrawl",
		Usage: "fetch a crawl's pages again: those due by their schedule, or --all",
		Description: "Queues again the URLs the crawl fetched, keeping its settings, Bloom filter and records;\n" +
			"run 'crawler work' to fetch them. Each is asked for with its last ETag and Last-Modified\n" +
			"(a 304 is recorded as unchanged and, with --warc-dir, archived as a revisit record), and\n" +
			"its schedule learns from it: a page that changed comes due sooner, one that did not later\n" +
			"(seed's --revisit, --revisit-min, --revisit-max). Without --all only the pages due by now\n" +
			"are fetched: after a day, at first. The scheduler moves them to the queues under its fence.",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "every page fetched, due or not (not those gone: 404 or 410 on 3 revisits in a row)"}},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usage(fmt.Errorf("recrawl takes no arguments (got %q): it refetches the crawl's own pages; 'crawler seed' adds URLs", c.Args().First()))
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			rep, err := admin.Recrawl(c.Context, rdb, c.String("crawl"), c.Bool("all"))
			if err != nil {
				return err
			}
			msg := fmt.Sprintf("crawl %q: %d of %d pages due for a refetch; run 'crawler work' to fetch them", c.String("crawl"), rep.Due, rep.Scheduled)
			switch {
			case rep.Scheduled == 0:
				msg = fmt.Sprintf("crawl %q: no page fetched yet, nothing to refetch", c.String("crawl"))
			case rep.Due == 0 && rep.NextDue >= 0:
				msg = fmt.Sprintf("crawl %q: none of its %d pages is due yet (the first in %v); --all refetches every one now", c.String("crawl"), rep.Scheduled, rep.NextDue.Round(time.Minute))
			case rep.Continuous:
				msg = fmt.Sprintf("crawl %q: %d of %d pages due for a refetch (the crawl is continuous: its workers fetch them as they come due)", c.String("crawl"), rep.Due, rep.Scheduled)
			}
			fmt.Fprintln(c.App.Writer, msg)
			return nil
		},
	}
}

// trimmedWhy says why records were gone before an export read them, and
// where they are: with export groups, the groups' acknowledgements trimmed
// them (the stream keeps what a group still has to read); without, the
// stream's bound (seed --results-kept).
func trimmedWhy(ctx context.Context, rdb redis.UniversalClient, name string, rep admin.ExportReport) string {
	kept := "--results-kept"
	if s, err := settings.Load(ctx, rdb, name); err == nil {
		kept = fmt.Sprintf("%d, seed --results-kept", s.ResultsKept)
	}
	st, err := status.Read(ctx, rdb, name)
	if err == nil && len(st.Groups) > 0 {
		names := make([]string, len(st.Groups))
		for i, g := range st.Groups {
			names[i] = g.Name
		}
		return fmt.Sprintf("%d records were gone from the results stream before this export read them: export groups read this crawl "+
			"(%s), and a record every group has acknowledged is trimmed. %d exported. Every record is in the workers' --out files; "+
			"from now on, read them through a group of your own (crawler export --follow --group NAME), which keeps them until it has read them",
			rep.Trimmed, strings.Join(names, ", "), rep.Written)
	}
	return fmt.Sprintf("%d records were trimmed from the results stream before they could be read (it keeps the newest %s); "+
		"%d exported; the workers' --out files have every record", rep.Trimmed, kept, rep.Written)
}
