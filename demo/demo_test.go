package demo_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/demo"
	"github.com/redcrawl/crawler/redisconn"
)

// The demo crawls its whole site, hands the scheduler over once (the
// first stopped halfway, another under a higher epoch), keeps every host
// within rate + burst, reports all of it, and leaves nothing in Redis.
func TestTheDemoReportsEachPrimitive(t *testing.T) {
	rdb, stop, err := redisconn.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	var name string
	// The crawl is held to its hosts' rates (4 hosts x 15 pages at 5/s:
	// about three seconds, the second half after the first whatever the
	// machine's load), so the demo's supervisor, which looks every 100 ms,
	// sees the half and stops the scheduler before the end. (At 100/s the
	// crawl could end between two looks.)
	cfg := demo.Config{Workers: 3, Hosts: 4, Pages: 15, Rate: 5, Burst: 1, Latency: time.Millisecond}
	err = demo.Run(ctx, rdb, cfg, &out, func(n string) (func(), error) { name = n; return func() {}, nil })
	if err != nil {
		t.Fatal(err)
	}
	report := out.String()
	m := regexp.MustCompile(`(\d+) of (\d+) truth URLs fetched`).FindStringSubmatch(report)
	if m == nil || m[1] != m[2] || m[1] == "0" {
		t.Fatalf("the report does not say every truth URL was fetched:\n%s", report)
	}
	for _, want := range []string{"stopping worker-", "leader (renewable lock + fencing): 2 terms", "robots.txt: no disallowed URL was fetched"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "OVER") {
		t.Errorf("a host went over rate + burst:\n%s", report)
	}
	if keys, _ := rdb.Keys(context.Background(), "crawl:{"+name+"}*").Result(); name == "" || len(keys) > 0 {
		t.Errorf("crawl %q left %d keys", name, len(keys))
	}
}

func TestAConfigWithNothingToCrawlIsRefused(t *testing.T) {
	for _, cfg := range []demo.Config{{}, {Workers: 1, Hosts: 1, Pages: 1, Rate: 1, Burst: 0}, {Workers: 1, Hosts: 1, Pages: 1, Burst: 1}} {
		if err := cfg.Check(); !errors.Is(err, demo.ErrConfig) {
			t.Errorf("%+v: %v; want ErrConfig", cfg, err)
		}
	}
	if err := (demo.Config{Workers: 1, Hosts: 1, Pages: 1, Rate: 0.5, Burst: 1}).Check(); err != nil {
		t.Error(err)
	}
}
