// Command crawler is RedCrawl's command line: a distributed web crawler
// whose workers meet only in Redis.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/redisconn"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/urfave/cli/v2"
)

func main() {
	// go-redis logs every failed dial; our errors already say it once, in one line.
	redis.SetLogger(&logging.VoidLogger{})
	if err := runArgs(newApp(), os.Args); err != nil {
		var ec cli.ExitCoder
		msg := strings.TrimSpace(redisconn.HideSecret(err.Error(), redisFromArgs(os.Args)))
		if msg != "" {
			fmt.Fprintln(os.Stderr, "crawler:", msg)
		}
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}

// redisFromArgs is the --redis URL as given on the command line or in the
// environment, for redisconn.HideSecret.
func redisFromArgs(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--redis="); ok {
			return v
		}
		if (a == "--redis" || a == "-redis") && i+1 < len(args) {
			return args[i+1]
		}
	}
	return os.Getenv("CRAWLER_REDIS")
}

func newApp() *cli.App {
	app := &cli.App{
		Name:  "crawler",
		Usage: "a distributed web crawler coordinated through Redis",
		Description: "Run 'crawler seed URL...' once, then 'crawler work' on as many machines as you like,\n" +
			"all pointed at the same Redis. Workers share a reliable frontier, a Bloom filter of\n" +
			"seen URLs, per-host token buckets and an elected scheduler.\n\n" +
			"Try it on one machine, with an embedded Redis and a local test site: crawler demo",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "redis", EnvVars: []string{"CRAWLER_REDIS"}, Value: redisconn.Default,
				Usage: "Redis URL (redis:// or rediss://, password allowed; host:port alone for a server without password or TLS; a Redis Cluster: any node, or host:port,host:port,...; Sentinel: redis-sentinel://host:port[,host:port]/MASTER; 'crawl' and 'demo' embed one when this is not given)"},
			&cli.StringFlag{Name: "redis-ca", EnvVars: []string{"CRAWLER_REDIS_CA"}, Usage: "PEM `FILE` of the CA certificates that signed " +
				"the Redis server's certificate, for rediss:// (default: the system's)"},
			&cli.StringFlag{Name: "redis-cert", EnvVars: []string{"CRAWLER_REDIS_CERT"}, Usage: "PEM `FILE` of a client certificate, " +
				"for a rediss:// server that asks for one (with --redis-key)"},
			&cli.StringFlag{Name: "redis-key", EnvVars: []string{"CRAWLER_REDIS_KEY"}, Usage: "PEM `FILE` of the client certificate's private key"},
			&cli.StringFlag{Name: "crawl", EnvVars: []string{"CRAWLER_CRAWL"}, Value: "default",
				Usage: "crawl name (letters, digits, - _ .; at most 64); every key of the crawl starts crawl:{NAME}: or crawl:{NAME/"},
		}, logFlags()...),
		Commands: []*cli.Command{
			seedCommand(), workCommand(), statusCommand(), listCommand(), pauseCommand(), resumeCommand(), setCommand(), hostCommand(), exportCommand(), recrawlCommand(), dashboardCommand(), resetCommand(),
			crawlCommand(), waczCommand(), testsiteCommand(), teststoreCommand(), demoCommand(),
		},
		Version: version(),
		// --extract takes CSS selectors, which have commas of their own.
		DisableSliceFlagSeparator: true,
		// A bad --crawl is reported before Redis is contacted.
		Before: func(c *cli.Context) error {
			if err := crawl.CheckName(c.String("crawl")); err != nil {
				return usage(fmt.Errorf("--crawl: %v", strings.TrimPrefix(err.Error(), "crawl: ")))
			}
			if err := checkLogFlags(c); err != nil {
				return usage(err)
			}
			return nil
		},
		OnUsageError:   usageError,
		ExitErrHandler: func(*cli.Context, error) {}, // main prints the one line
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(c.App.ErrWriter, "crawler: unknown command %q (see 'crawler --help')\n", name)
			os.Exit(exitUsage)
		},
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = usageError
	}
	return app
}

// usageError turns a wrong flag into one line that says what to do next,
// instead of the whole help text.
func usageError(c *cli.Context, err error, _ bool) error {
	name := c.App.Name
	if c.Command != nil && c.Command.HelpName != "" {
		name = c.Command.HelpName
	}
	return usage(fmt.Errorf("%v (see '%s --help')", err, name))
}
