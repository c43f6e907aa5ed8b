package main

import (
	"errors"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// Exit codes: 1 for a failure, 2 for a command line that cannot be run as
// written (a wrong flag, a bad value).
const exitUsage = 2

// usage marks an error as the command line's fault (exit code 2).
func usage(err error) error {
	if err == nil {
		return nil
	}
	return cli.Exit(err.Error(), exitUsage)
}

// globalFlags are the flags of the whole program that may also come after
// the command ('crawler status --redis URL'): they take a value.
var globalFlags = map[string]bool{"redis": true, "redis-ca": true, "redis-cert": true, "redis-key": true, "crawl": true,
	"log-format": true, "log-level": true}

// hoistGlobalFlags moves global flags written after the command to before
// it, where the flag parser looks for them.
func hoistGlobalFlags(args []string, commands map[string]bool) []string {
	if len(args) < 2 {
		return args
	}
	cmd := -1
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return args
		}
		if strings.HasPrefix(a, "-") {
			if name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "="); globalFlags[name] && !hasValue {
				i++ // its value
			}
			continue
		}
		if commands[a] {
			cmd = i
		}
		break
	}
	if cmd < 0 {
		return args
	}
	before := append([]string{}, args[:cmd]...)
	var after []string
	for i := cmd; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			after = append(after, args[i:]...)
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if i > cmd && strings.HasPrefix(a, "-") && globalFlags[name] {
			before = append(before, a)
			if !hasValue && i+1 < len(args) {
				before = append(before, args[i+1])
				i++
			}
			continue
		}
		after = append(after, a)
	}
	return append(before, after...)
}

// flagsFirst moves the flags written after a command's arguments ('crawler
// seed URL --rate 5') before them, where the flag parser, which stops at
// the first argument, reads them: one rule for every command, as users of
// other command lines expect. A flag keeps its value (the next argument,
// unless the flag is a boolean or written --flag=value); everything after
// "--" stays an argument, and "-" alone is one.
func flagsFirst(args []string, commands []*cli.Command) []string {
	byName := map[string]*cli.Command{}
	for _, c := range commands {
		for _, n := range c.Names() {
			byName[n] = c
		}
	}
	cmd := -1
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return args
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			if name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "="); globalFlags[name] && !hasValue {
				i++ // its value
			}
			continue
		}
		if byName[a] != nil {
			cmd = i
		}
		break
	}
	if cmd < 0 {
		return args
	}
	boolean := map[string]bool{"help": true, "h": true}
	for _, f := range byName[args[cmd]].Flags {
		if _, ok := f.(*cli.BoolFlag); ok {
			for _, n := range f.Names() {
				boolean[n] = true
			}
		}
	}
	flags := append([]string{}, args[:cmd+1]...)
	var positional []string
	for i := cmd + 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "="); !hasValue && !boolean[name] && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(flags, positional...)
}

// version is the module's version and VCS revision, from the build info.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " " + rev + modified
	}
	return v
}

// isUsage reports whether err asks for exit code 2.
func isUsage(err error) bool {
	var ec cli.ExitCoder
	return errors.As(err, &ec) && ec.ExitCode() == exitUsage
}

// argGiven reports whether flag was written on the command line (not
// taken from the environment): the arguments are in App.Metadata["args"].
func argGiven(c *cli.Context, flag string) bool {
	args, _ := c.App.Metadata["args"].([]string)
	for _, a := range args {
		if a == "--"+flag || a == "-"+flag || strings.HasPrefix(a, "--"+flag+"=") || strings.HasPrefix(a, "-"+flag+"=") {
			return true
		}
	}
	return false
}

// runArgs runs app on args, with global flags written after the command
// moved before it.
func runArgs(app *cli.App, args []string) error {
	commands := map[string]bool{}
	for _, c := range app.Commands {
		commands[c.Name] = true
	}
	all := flagsFirst(hoistGlobalFlags(args, commands), app.Commands)
	app.Metadata = map[string]any{"args": all}
	return app.Run(all)
}

// withEnv gives each flag an environment variable, CRAWLER_ and its name
// in capitals ('--warc-dir': CRAWLER_WARC_DIR), for containers.
func withEnv(flags []cli.Flag) []cli.Flag {
	for _, f := range flags {
		env := []string{"CRAWLER_" + strings.ToUpper(strings.ReplaceAll(f.Names()[0], "-", "_"))}
		switch f := f.(type) {
		case *cli.StringFlag:
			f.EnvVars = env
		case *cli.IntFlag:
			f.EnvVars = env
		case *cli.Int64Flag:
			f.EnvVars = env
		case *cli.BoolFlag:
			f.EnvVars = env
		case *cli.DurationFlag:
			f.EnvVars = env
		case *cli.Float64Flag:
			f.EnvVars = env
		}
	}
	return flags
}
