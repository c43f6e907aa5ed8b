package crawl_test

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redis/go-redis/v9"
)

// Ten test-site hosts served by one address (named hosts on one listener,
// their DNS from the site): at --rate 2 and a burst of 1, with
// --politeness ip the site gets together at most 2 + 1 requests in any
// second, from two workers, and the crawl still fetches every page; with
// host (the default) the same crawl sends each host its own rate, ten
// times as many. Status names the address and its hosts.
func TestHostsOfOneServerShareItsRate(t *testing.T) {
	wholeCrawl(t)
	s := redistest.Real(t)
	oneServer(t, s.Client, settings.PolitenessIP, 1)
	oneServer(t, s.Client, settings.PolitenessHost, 1)
}

// The same on a 3-master Redis Cluster, over three shards: the ten hosts'
// queues and buckets sit on different masters, and each shard takes only
// its own slots of the address's schedule (frontier/queue/addrs.lua), so the
// server still gets at most 2 + 1 requests in any second.
func TestHostsOfOneServerShareItsRateOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-master cluster: skipped with -short")
	}
	c := redistest.RealCluster(t, 3)
	oneServer(t, c.Client, settings.PolitenessIP, 3)
}

// oneServer crawls ten named hosts served on one address (their DNS the
// site's) at --rate 2 and a burst of 1, with politeness mode, over shards
// shards, two workers, and checks the most requests the server got in a
// second against the bound (ip) or beyond it (host).
func oneServer(t *testing.T, c redis.UniversalClient, mode string, shards int) {
	t.Helper()
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("h%d.one.test", i))
	}
	site, err := testsite.Start(testsite.Config{Names: names, Listen: "127.0.0.1:0", DNS: "127.0.0.1:0", Pages: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	name := fmt.Sprintf("server-%s-%d", mode, shards)
	set := settings.Default()
	set.Rate, set.Burst, set.AllowPrivate, set.Politeness, set.Shards = 2, 1, true, mode, shards
	var seeds []*url.URL
	for _, r := range site.Roots() {
		u, _ := url.Parse(r)
		seeds = append(seeds, u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := admin.Seed(ctx, c, name, set, seeds); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, id := range []string{"w1", "w2"} {
		o := fastOptions(id + "-" + name)
		o.DNS = site.DNS().Addr()
		w, err := crawl.NewWorker(ctx, c, name, o)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				t.Errorf("worker %s: %v", o.ID, err)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the workers of %s did not finish in time", name)
	}
	var times []time.Time
	for _, h := range site.Hosts() {
		times = append(times, site.Times(h)...)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	most := testsite.MaxInWindow(times, time.Second)
	t.Logf("%s over %d shards: at most %d requests in a second, %d in all", mode, shards, most, len(times))
	if missing := site.Missing(); len(missing) > 0 {
		t.Errorf("%s: %d pages not fetched: %v", mode, len(missing), missing)
	}
	st, err := status.Read(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	switch mode {
	case settings.PolitenessIP:
		if most > 3 {
			t.Errorf("ip: %d requests reached the one server within a second; want at most 3 (rate 2 + burst 1)", most)
		}
		if len(st.Addresses) == 0 || st.Addresses[0].Addr != "127.0.0.1" || st.Addresses[0].Hosts != 10 ||
			!strings.Contains(st.String(), "127.0.0.1 (") {
			t.Errorf("status's busiest addresses: %+v; want 127.0.0.1 with its ten hosts\n%s", st.Addresses, st)
		}
	case settings.PolitenessHost:
		if most <= 3 {
			t.Errorf("host: only %d requests within a second; ten hosts at 2/s each should make more (the check cannot fail)", most)
		}
	}
}
