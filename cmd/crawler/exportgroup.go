package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/urfave/cli/v2"
)

// runExport with --group: the records through a consumer group, each
// acknowledged once written (admin.ExportGroup).
func runExportGroup(c *cli.Context) error {
	group := c.String("group")
	switch {
	case group == "":
		return usage(errors.New("--consumer names a reader of a --group: give the group"))
	case !c.Bool("follow"):
		return usage(errors.New("--group reads as the records come: give --follow too"))
	case strings.ContainsAny(group, " \n") || strings.ContainsAny(c.String("consumer"), " \n"):
		return usage(fmt.Errorf("--group %q, --consumer %q: names without spaces", group, c.String("consumer")))
	case c.Bool("wait-workers"):
		return usage(errors.New("--wait-workers is for a plain --follow, not --group"))
	}
	consumer := c.String("consumer")
	if consumer == "" {
		consumer, _ = os.Hostname()
	}
	rdb, err := connect(c)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var out io.Writer = c.App.Writer
	if name := c.String("out"); name != "" {
		// Appended to, unbuffered: a record is acknowledged once written,
		// and a restarted export adds to what the last one wrote.
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--out: %v", err)
		}
		defer f.Close()
		out = f
	}
	rep, err := admin.ExportGroupWith(ctx, rdb, c.String("crawl"), group, consumer, out, admin.GroupOptions{
		Say: func(why string) { fmt.Fprintf(c.App.ErrWriter, "crawler: export: %s\n", why) }})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "crawler: export: %d records through group %s as %s\n", rep.Written, group, consumer)
	if !rep.Done {
		return errors.New("export: stopped before the crawl was done")
	}
	return nil
}
