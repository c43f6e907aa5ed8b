// Command crawler is RedCrawl's command line: a distributed web crawler
// whose workers meet only in Redis.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "crawler:", err)
		os.Exit(1)
	}
}

func newApp() *cli.App {
	return &cli.App{
		Name:  "crawler",
		Usage: "a distributed web crawler coordinated through Redis",
		Description: "Run 'crawler seed URL...' once, then 'crawler work' on as many machines as you like,\n" +
			"all pointed at the same Redis. Workers share a reliable frontier, a Bloom filter of\n" +
			"seen URLs, per-host token buckets and an elected scheduler.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "redis", EnvVars: []string{"CRAWLER_REDIS"}, Value: "redis://127.0.0.1:6379/0",
				Usage: "Redis URL (redis:// or rediss://, password allowed)"},
			&cli.StringFlag{Name: "crawl", EnvVars: []string{"CRAWLER_CRAWL"}, Value: "default",
				Usage: "crawl name; every key of the crawl lives under crawl:{NAME}"},
		},
		HideHelpCommand: true,
		OnUsageError:    usageError,
	}
}

// usageError turns a wrong flag into one line that says what to do next,
// instead of the whole help text.
func usageError(c *cli.Context, err error, _ bool) error {
	return fmt.Errorf("%v (see '%s --help')", err, c.Command.HelpName)
}
