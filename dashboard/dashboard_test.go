package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/dashboard"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/perhost"
	"github.com/redcrawl/crawler/frontier/rendering"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// The dashboard serves its page from the binary, the crawl's state as JSON
// and as a stream, and nothing secret: a request header of the settings
// (which may hold a credential) is not in what it sends.
func TestTheDashboardServesTheStateAndNoSecret(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		set := settings.Default()
		set.Headers = []string{"Authorization: Bearer s3cret-value"}
		seed, _ := url.Parse("http://example.test/")
		if _, err := admin.Seed(ctx, s.Client, "d", set, []*url.URL{seed}); err != nil {
			t.Fatal(err)
		}
		l, err := leader.Obtain(ctx, s.Client, "crawl:{d}:leader", "w9", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(dashboard.New(s.Client, dashboard.Config{Crawl: "d", Every: 10 * time.Millisecond}))
		defer srv.Close()

		res, err := http.Get(srv.URL + "/api/state")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var st dashboard.State
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("state %s: %v", body, err)
		}
		if st.Crawl != "d" || st.Frontier.Queued != 1 || st.Leader == nil || st.Leader.ID != "w9" || st.Leader.Epoch != l.Epoch() || st.Leader.TTL <= 0 {
			t.Fatalf("state %s; want the seed queued and w9 leading", body)
		}
		if strings.Contains(string(body), "s3cret") || strings.Contains(string(body), s.URL()) {
			t.Fatalf("the state gives a secret away: %s", body)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("Content-Security-Policy %q", csp)
		}

		// The stream sends the state again and again.
		res, err = http.Get(srv.URL + "/api/stream")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		events := 0
		for events < 2 && sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(line, `"crawl":"d"`) {
				events++
			}
		}
		res.Body.Close()
		if events < 2 {
			t.Fatalf("the stream sent %d states", events)
		}

		// The page and its script are the binary's own.
		for _, path := range []string{"/", "/app.js", "/style.css"} {
			res, err := http.Get(srv.URL + path)
			if err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %v %v", path, res, err)
			}
			res.Body.Close()
		}
	})
}

// The page loads nothing from elsewhere: every src and stylesheet is its
// own (a link to read a package's doc is fine).
func TestThePageLoadsNothingFromElsewhere(t *testing.T) {
	for _, f := range []string{"web/index.html", "web/app.js", "web/style.css"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?:src|rel="stylesheet" href|url\(|import|fetch\(|EventSource\()\s*=?\s*["']?([^"')\s]+)`).FindAllStringSubmatch(string(b), -1) {
			if strings.Contains(m[1], "//") {
				t.Errorf("%s loads %s from elsewhere", f, m[1])
			}
		}
	}
}

// A token guards the crawl's state; the page's own files, which a browser
// loads as the HTML names them (without the page's query), need none.
// Beyond loopback a token is required.
func TestTheTokenGuardsTheDashboard(t *testing.T) {
	s := redistest.Mini(t)
	srv := httptest.NewServer(dashboard.New(s.Client, dashboard.Config{Crawl: "d", Token: "t0k", Every: time.Millisecond}))
	defer srv.Close()
	root, _ := url.Parse("http://a.example/")
	if _, err := admin.Seed(context.Background(), s.Client, "d", settings.Default(), []*url.URL{root}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"/": 200, "/?token=t0k": 200, "/app.js": 200, "/style.css": 200, "/index.html": 200,
		"/api/state": 401, "/api/state?token=wrong": 401, "/api/stream": 401, "/api/stream?token=t0k0": 401,
		"/api/state?token=t0k": 200,
	} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s: %d; want %d", path, res.StatusCode, want)
		}
		if res.StatusCode == 200 && !strings.HasPrefix(path, "/api/") && strings.Contains(string(body), "a.example") {
			t.Errorf("GET %s without the token shows the crawl's hosts", path)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/state", nil)
	req.Header.Set("Authorization", "Bearer t0k")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Errorf("the state with a Bearer token: %v %v", res.Status, err)
	} else {
		res.Body.Close()
	}
	for addr, ok := range map[string]bool{"127.0.0.1:8090": true, "localhost:8090": true, "[::1]:8090": true, "0.0.0.0:8090": false, ":8090": false, "10.0.0.5:80": false} {
		if err := dashboard.CheckListen(addr, ""); (err == nil) != ok {
			t.Errorf("CheckListen(%q, no token) = %v", addr, err)
		}
	}
	if err := dashboard.CheckListen("0.0.0.0:8090", "t0k"); err != nil {
		t.Errorf("with a token: %v", err)
	}
}

// The scheduler's timeline is the lock's events of the log (its
// handovers and the sweeps its fence refused), newest first; the event
// log has them all.
func TestTheSchedulersTimelineIsTheLocksEvents(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		seed, _ := url.Parse("http://example.test/")
		if _, err := admin.Seed(ctx, s.Client, "d", settings.Default(), []*url.URL{seed}); err != nil {
			t.Fatal(err)
		}
		fr, err := crawl.OpenFrontier(ctx, s.Client, "d", settings.Default())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []events.Event{{Kind: events.Lead, Text: "epoch 1: w1 took the lock"},
			{Kind: events.Pause, Text: "host h paused"}, {Kind: events.Fenced, Text: "a sweep under epoch 1 was refused"},
			{Kind: events.Resend, Text: "w2 resent its exchange"}} {
			if err := fr.Events.Add(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		st, err := dashboard.Read(ctx, s.Client, "d")
		if err != nil {
			t.Fatal(err)
		}
		var line, log []string
		for _, e := range st.Timeline {
			line = append(line, e.Kind)
		}
		for _, e := range st.Events {
			log = append(log, e.Kind)
		}
		if strings.Join(line, " ") != "fenced lead" || strings.Join(log, " ") != "resend fenced pause lead" {
			t.Errorf("timeline %v, log %v; want fenced, lead, and all four newest first", line, log)
		}
	})
}

// A crawl that renders shows its rendering: the lane's hosts queued, a
// render lane with no render worker to take it, and what the samples
// taught; one that renders nothing shows no rendering at all.
func TestTheDashboardShowsRendering(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		for _, mode := range []string{settings.RenderNever, settings.RenderAuto, settings.RenderAlways} {
			s.Client.FlushDB(ctx)
			set := settings.Default()
			set.Render = mode
			seed, _ := url.Parse("http://app.example.test/")
			if _, err := admin.Seed(ctx, s.Client, "r", set, []*url.URL{seed}); err != nil {
				t.Fatal(err)
			}
			if mode == settings.RenderAuto {
				stored, err := settings.Load(ctx, s.Client, "r")
				if err != nil {
					t.Fatal(err)
				}
				fr, err := crawl.OpenFrontier(ctx, s.Client, "r", stored)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := fr.Render.OfferSample(ctx, rendering.Sample{URL: "http://app.example.test/", Host: "app.example.test"}, 3, 10); err != nil {
					t.Fatal(err)
				}
			}
			r := stateOf(t, s, "r").Render
			switch mode {
			case settings.RenderNever:
				if r != nil {
					t.Errorf("--render never: the state shows rendering %+v", r)
				}
			case settings.RenderAlways:
				if r == nil || r.LaneQueued != 1 || r.Workers != 0 || !strings.Contains(r.Line, "waits for one") {
					t.Errorf("--render always, no render worker: %+v; want the seed's host queued in the render lane, and said to wait", r)
				}
			case settings.RenderAuto:
				if r == nil || r.LaneQueued != 0 || r.SamplesWaiting != 1 || r.Learned["app.example.test"] != rendering.VerdictLearning {
					t.Errorf("--render auto, a sample offered: %+v; want it waiting and the host learning", r)
				}
			}
		}
	})
}

// A crawl polite per server address shows its busiest addresses with
// their hosts, once a pop took their tokens; one polite per host shows
// none.
func TestTheDashboardShowsTheBusiestServers(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		for _, mode := range []string{settings.PolitenessHost, settings.PolitenessIP} {
			s.Client.FlushDB(ctx)
			set := settings.Default()
			set.Politeness = mode
			var seeds []*url.URL
			for _, h := range []string{"a.example.test", "b.example.test"} {
				u, _ := url.Parse("http://" + h + "/")
				seeds = append(seeds, u)
			}
			if _, err := admin.Seed(ctx, s.Client, "ip", set, seeds); err != nil {
				t.Fatal(err)
			}
			stored, err := settings.Load(ctx, s.Client, "ip")
			if err != nil {
				t.Fatal(err)
			}
			fr, err := crawl.OpenFrontier(ctx, s.Client, "ip", stored)
			if err != nil {
				t.Fatal(err)
			}
			if err := fr.Hosts.SetAddresses(ctx, []perhost.Address{{Host: "a.example.test", Addr: "192.0.2.1", TTL: time.Hour},
				{Host: "b.example.test", Addr: "192.0.2.1", TTL: time.Hour}}); err != nil {
				t.Fatal(err)
			}
			want := map[string]int{settings.PolitenessHost: 2, settings.PolitenessIP: 1}[mode] // a token a host, or the server's one
			if x, err := fr.Exchange(ctx, nil, nil, 2); err != nil || len(x.Popped) != want {
				t.Fatalf("%s: popped %d, %v; want %d", mode, len(x.Popped), err, want)
			}
			st := stateOf(t, s, "ip")
			want = 0
			if mode == settings.PolitenessIP {
				want = 1
			}
			if len(st.Addresses) != want || want == 1 && (st.Addresses[0].Addr != "192.0.2.1" || st.Addresses[0].Tokens != 1 || st.Addresses[0].Hosts != 2) {
				t.Errorf("%s: the state's addresses %+v; want %d (192.0.2.1: a request, two hosts)", mode, st.Addresses, want)
			}
		}
	})
}

// stateOf is what a dashboard of crawl name serves at /api/state.
func stateOf(t *testing.T, s *redistest.Server, name string) dashboard.State {
	t.Helper()
	srv := httptest.NewServer(dashboard.New(s.Client, dashboard.Config{Crawl: name, Every: 10 * time.Millisecond}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st dashboard.State
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// A crawl read through export groups shows them, each with what it has
// not acknowledged.
func TestTheDashboardShowsExportGroups(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		set := settings.Default()
		seed, _ := url.Parse("http://a.example.test/")
		if _, err := admin.Seed(ctx, s.Client, "g", set, []*url.URL{seed}); err != nil {
			t.Fatal(err)
		}
		if st := stateOf(t, s, "g"); len(st.Groups) != 0 {
			t.Fatalf("groups %+v before any", st.Groups)
		}
		stored, err := settings.Load(ctx, s.Client, "g")
		if err != nil {
			t.Fatal(err)
		}
		fr, err := crawl.OpenFrontier(ctx, s.Client, "g", stored)
		if err != nil {
			t.Fatal(err)
		}
		s.Client.XAdd(ctx, &redis.XAddArgs{Stream: keyspace.KeysFor("g").Results, Values: []string{"rec", `{"url":"http://a.example.test/"}`, "new_links", "0"}})
		if err := fr.Records.JoinGroup(ctx, "sink"); err != nil {
			t.Fatal(err)
		}
		st := stateOf(t, s, "g")
		if len(st.Groups) != 1 || st.Groups[0].Name != "sink" || st.Groups[0].Behind() != 1 || st.Groups[0].Fill <= 0 || st.LagFill <= 0 {
			t.Errorf("groups %+v, lag at %v; want sink, one record behind", st.Groups, st.LagFill)
		}
	})
}
