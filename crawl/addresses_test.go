package crawl_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

// Ten test-site hosts served by one address (named hosts on one listener,
// their DNS from the site): at --rate 2 and a burst of 1, with
// --politeness ip the site gets together at most 2 + 1 requests in any
// second, from two workers, and the crawl still fetches every page; with
// host (the default) the same crawl sends each host its own rate, ten
// times as many. Status names the address and its hosts.
func TestHostsOfOneServerShareItsRate(t *testing.T) {
	s := redistest.Real(t)
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("h%d.one.test", i))
	}
	for _, mode := range []string{crawl.PolitenessIP, crawl.PolitenessHost} {
		site, err := testsite.Start(testsite.Config{Names: names, Listen: "127.0.0.1:0", DNS: "127.0.0.1:0", Pages: 1})
		if err != nil {
			t.Fatal(err)
		}
		name := "server-" + mode
		set := crawl.DefaultSettings()
		set.Rate, set.Burst, set.AllowPrivate, set.Politeness = 2, 1, true, mode
		seedSite(t, s, site, name, set)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		w1, w2 := fastOptions("w1-"+mode), fastOptions("w2-"+mode)
		w1.DNS, w2.DNS = site.DNS().Addr(), site.DNS().Addr()
		runWorkers(t, ctx, s, name, w1, w2)
		var times []time.Time
		for _, h := range site.Hosts() {
			times = append(times, site.Times(h)...)
		}
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		most := testsite.MaxInWindow(times, time.Second)
		missing := site.Missing()
		st, err := crawl.ReadStatus(ctx, s.Client, name)
		cancel()
		site.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: at most %d requests in a second, %d in all", mode, most, len(times))
		if len(missing) > 0 {
			t.Errorf("%s: %d pages not fetched: %v", mode, len(missing), missing)
		}
		switch mode {
		case crawl.PolitenessIP:
			if most > 3 {
				t.Errorf("ip: %d requests reached the one server within a second; want at most 3 (rate 2 + burst 1)", most)
			}
			if len(st.Addresses) == 0 || st.Addresses[0].Addr != "127.0.0.1" || st.Addresses[0].Hosts != 10 ||
				!strings.Contains(st.String(), "127.0.0.1") {
				t.Errorf("status's busiest addresses: %+v; want 127.0.0.1 with its ten hosts\n%s", st.Addresses, st)
			}
		case crawl.PolitenessHost:
			if most <= 3 {
				t.Errorf("host: only %d requests within a second; ten hosts at 2/s each should make more (the check cannot fail)", most)
			}
		}
	}
}
