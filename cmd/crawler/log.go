package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"
)

func logFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-format", EnvVars: []string{"CRAWLER_LOG_FORMAT"}, Value: "text",
			Usage: "log lines as 'text' (key=value, for people and grep) or 'json' (one object a line, for log shippers)"},
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"CRAWLER_LOG_LEVEL"}, Value: "info",
			Usage: "least severe log lines shown: debug (each retry too), info, warn (failed pages and Redis trouble), error"},
	}
}

// checkLogFlags reports a bad --log-format or --log-level before anything runs.
func checkLogFlags(c *cli.Context) error {
	_, err := newLogger(io.Discard, c.String("log-format"), c.String("log-level"))
	return err
}

// newLogger builds the logger of --log-format and --log-level. Each line
// has a date and time to the millisecond, a level and structured
// attributes (worker, url, host, err …).
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// cliLogger is the logger the global flags ask for, writing to the app's
// error stream.
func cliLogger(c *cli.Context) *slog.Logger {
	l, err := newLogger(c.App.ErrWriter, c.String("log-format"), c.String("log-level"))
	if err != nil { // checked in Before
		return slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
	}
	return l
}
