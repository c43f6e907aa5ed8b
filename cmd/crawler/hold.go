package main

import (
	"fmt"
	"os"
	"os/user"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/urfave/cli/v2"
)

// pauseCommand and resumeCommand pause and resume a whole crawl (admin.Pause).
func pauseCommand() *cli.Command {
	return holdCommand("pause", "stop handing out URLs to every worker, until 'crawler resume'",
		"The crawl's pops hand out nothing while it is paused (each shard's pops read the pause\n"+
			"in Redis, so every worker stops at once, whether or not it heard of it). Workers finish\n"+
			"and record the pages they hold, keep their leases, and wait; workers run with\n"+
			"--exit-when-done keep running. 'crawler status' and the dashboard say since when and by\n"+
			"whom; the event log says it too.")
}

func resumeCommand() *cli.Command {
	return holdCommand("resume", "hand out URLs again after 'crawler pause'",
		"Every worker is woken and pops at once.")
}

func holdCommand(name, usageText, desc string) *cli.Command {
	return &cli.Command{
		Name:        name,
		Usage:       usageText,
		Description: desc,
		Flags: []cli.Flag{&cli.StringFlag{Name: "by", Value: whoAmI(), DefaultText: "USER@HOST",
			Usage: "who asked, said in status and the event log"}},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usage(fmt.Errorf("%s takes no arguments (got %q): it %ss the whole crawl named by --crawl", name, c.Args().First(), name))
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			op, done, already := admin.Pause, "paused", "was paused already"
			if name == "resume" {
				op, done, already = admin.Resume, "resumed", "was not paused"
			}
			changed, err := op(c.Context, rdb, c.String("crawl"), c.String("by"))
			if err != nil {
				return err
			}
			msg := fmt.Sprintf("crawl %q %s", c.String("crawl"), done)
			if !changed {
				msg = fmt.Sprintf("crawl %q %s", c.String("crawl"), already)
			}
			fmt.Fprintln(c.App.Writer, msg)
			return nil
		},
	}
}

// whoAmI is USER@HOST, as far as they are known.
func whoAmI() string {
	name := "someone"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		name += "@" + h
	}
	return name
}
