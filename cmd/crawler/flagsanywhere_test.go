package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/frontier"
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

// When records are gone before a plain export reads them, export says
// why: with export groups, their acknowledgements trimmed them, and a
// group of one's own keeps them; without, the stream's bound, as set.
func TestExportSaysWhyRecordsWereTrimmed(t *testing.T) {
	s := redistest.Mini(t)
	ctx := context.Background()
	if out, errOut, err := run(t, "--redis", s.URL(), "--crawl", "t", "seed", "--results-kept", "5000", "http://a.example/"); err != nil {
		t.Fatalf("seed: %v %s %s", err, out, errOut)
	}
	rep := admin.ExportReport{Trimmed: 204, Written: 10}
	if why := trimmedWhy(ctx, s.Client, "t", rep); !strings.Contains(why, "204 records were trimmed") || !strings.Contains(why, "newest 5000") {
		t.Errorf("without groups: %q; want the stream's bound, 5000", why)
	}
	fr, err := frontier.New(s.Client, "t", frontier.Options{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := fr.Records.JoinGroup(ctx, "archive"); err != nil {
		t.Fatal(err)
	}
	why := trimmedWhy(ctx, s.Client, "t", rep)
	if !strings.Contains(why, "export groups read this crawl (archive)") || !strings.Contains(why, "--group NAME") || strings.Contains(why, "newest") {
		t.Errorf("with a group: %q; want the group's acknowledgements named, and how to read every record", why)
	}
}

// crawler list names every crawl of a Redis with its state: none, then
// one running (seeded, no worker yet) and one paused, sorted by name.
func TestListNamesEveryCrawlWithItsState(t *testing.T) {
	s := redistest.Mini(t)
	out, _, err := run(t, "--redis", s.URL(), "list")
	if err != nil || !strings.Contains(out, "no crawl in this Redis") {
		t.Fatalf("list of an empty Redis: %v %q", err, out)
	}
	for _, name := range []string{"zeta", "alpha"} {
		if _, errOut, err := run(t, "--redis", s.URL(), "--crawl", name, "seed", "http://a.example/", "http://b.example/"); err != nil {
			t.Fatalf("seed %s: %v %s", name, err, errOut)
		}
	}
	if _, errOut, err := run(t, "--redis", s.URL(), "--crawl", "zeta", "pause"); err != nil {
		t.Fatalf("pause: %v %s", err, errOut)
	}
	out, _, err = run(t, "--redis", s.URL(), "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 || !strings.HasPrefix(lines[1], "alpha") || !strings.Contains(lines[1], "running") ||
		!strings.HasPrefix(lines[2], "zeta") || !strings.Contains(lines[2], "paused") || !strings.Contains(lines[1], " 2 ") {
		t.Fatalf("list: %v\n%s; want alpha running and zeta paused, 2 queued each", err, out)
	}
	out, _, err = run(t, "--redis", s.URL(), "list", "--json")
	if err != nil || strings.Count(out, "\n") != 2 || !strings.Contains(out, `{"name":"alpha","state":"running","pages":0,"queued":2`) {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
}
