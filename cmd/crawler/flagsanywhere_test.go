package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/urfave/cli/v2"
)

// Every command reads its flags wherever they are written: before its
// arguments, after them, or between them, a flag keeping its value (a
// boolean none), and "--" ending the flags.
func TestEveryCommandTakesFlagsAfterItsArguments(t *testing.T) {
	app := newApp()
	for _, c := range app.Commands {
		var valued, boolean string
		for _, f := range c.Flags {
			if _, ok := f.(*cli.BoolFlag); ok {
				boolean = cmpOr(boolean, f.Names()[0])
			} else {
				valued = cmpOr(valued, f.Names()[0])
			}
		}
		if valued == "" && boolean == "" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			var after, want []string
			if valued != "" {
				after = []string{"crawler", c.Name, "a1", "--" + valued, "v", "a2"}
				want = []string{"crawler", c.Name, "--" + valued, "v", "a1", "a2"}
				check(t, after, want, app)
				check(t, []string{"crawler", "--redis", "r", c.Name, "a1", "--" + valued + "=v"}, []string{"crawler", "--redis", "r", c.Name, "--" + valued + "=v", "a1"}, app)
			}
			if boolean != "" {
				check(t, []string{"crawler", c.Name, "a1", "--" + boolean, "a2"}, []string{"crawler", c.Name, "--" + boolean, "a1", "a2"}, app)
			}
			check(t, []string{"crawler", c.Name, "a1", "--", "--not-a-flag"}, []string{"crawler", c.Name, "a1", "--", "--not-a-flag"}, app)
		})
	}
}

func check(t *testing.T, args, want []string, app *cli.App) {
	t.Helper()
	if got := flagsFirst(args, app.Commands); !slices.Equal(got, want) {
		t.Errorf("flagsFirst(%q) = %q; want %q", args, got, want)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// seed URL --rate 5 makes the crawl at rate 5 (it once read --rate as a
// URL, failed, and made the crawl at rate 1 all the same).
func TestSeedWithItsFlagsAfterTheURLs(t *testing.T) {
	s := redistest.Mini(t)
	if out, errOut, err := run(t, "--redis", s.URL(), "seed", "http://a.example/", "--rate", "5", "http://b.example/", "--burst", "3"); err != nil {
		t.Fatalf("seed: %v\n%s%s", err, out, errOut)
	}
	out, _, err := run(t, "--redis", s.URL(), "status")
	if err != nil || !strings.Contains(out, "5 req/s") || !strings.Contains(out, "2 queued") {
		t.Fatalf("status after seed URL --rate 5 URL --burst 3: %v\n%s", err, out)
	}
}
