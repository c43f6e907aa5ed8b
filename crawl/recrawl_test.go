package crawl_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

// A recrawl over shards: the versioned test site on three hosts, three
// shards; a third of the pages change; Recrawl(all) and a worker again:
// every page is refetched, the changed ones counted changed, the others
// unchanged (304), and the crawl ends again.
func TestARecrawlOverShardsRefetchesEveryPage(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 3, Pages: 30, Versioned: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(site.Close)
		set := settings.Default()
		set.Rate, set.AllowPrivate, set.Shards = math.Inf(1), true, 3
		seedSite(t, s, site, "rs", set)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		runWorkers(t, ctx, s, "rs", fastOptions("w1"))
		changed := site.Change(0.3)
		rep, err := admin.Recrawl(ctx, s.Client, "rs", true)
		if err != nil || rep.Due < 90 || rep.Due != rep.Scheduled {
			t.Fatalf("Recrawl = %+v, %v; want every page due", rep, err)
		}
		before := site.Stats().NotModified
		runWorkers(t, ctx, s, "rs", fastOptions("w2"))
		st, err := status.Read(ctx, s.Client, "rs")
		if err != nil {
			t.Fatal(err)
		}
		versioned := len(site.Versions())
		if got := st.Counters["change:changed"]; got != int64(len(changed)) {
			t.Errorf("%d pages counted changed; %d changed", got, len(changed))
		}
		if got, want := site.Stats().NotModified-before, versioned-len(changed); got < want {
			t.Errorf("%d 304s; want at least the %d unchanged pages", got, want)
		}
		if !st.Done || st.Revisits.Scheduled < int64(versioned) || st.Revisits.DueNow != 0 {
			t.Errorf("after the recrawl: done %v, revisits %+v; want it over, every page back on the schedule, none due", st.Done, st.Revisits)
		}
	})
}

// Content archived once is not archived again: two URLs with the same
// page are one response and one identical-payload revisit referring to it
// (the crawl's digest index); on a recrawl the page with an ETag is a
// server-not-modified revisit, the ones without are identical-payload
// revisits of their first copies.
func TestTheSamePayloadIsArchivedOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		var mu sync.Mutex
		asked := map[string]string{} // path -> If-None-Match of the last request
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			asked[r.URL.Path] = r.Header.Get("If-None-Match")
			mu.Unlock()
			w.Header().Set("Content-Type", "text/html")
			switch r.URL.Path {
			case "/robots.txt":
				http.NotFound(w, r)
			case "/":
				w.Header().Set("ETag", `"root"`)
				if r.Header.Get("If-None-Match") == `"root"` {
					w.WriteHeader(http.StatusNotModified)
					return
				}
				io.WriteString(w, `<html><body><a href="/a">a</a> <a href="/b">b</a></body></html>`)
			case "/a", "/b":
				io.WriteString(w, "<html><body>the same page at two URLs</body></html>")
			default:
				http.NotFound(w, r)
			}
		}))
		defer srv.Close()
		s.FollowWallClock(t)
		set := settings.Default()
		set.Rate, set.AllowPrivate, set.DedupPayloads = math.Inf(1), true, true
		root, _ := url.Parse(srv.URL + "/")
		if _, err := admin.Seed(context.Background(), s.Client, "same", set, []*url.URL{root}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		dir := t.TempDir()
		// One fetch at a time: /a and /b fetched at once would both be
		// archived whole (a revisit refers only to an earlier response).
		o := fastOptions("w1")
		o.WARC, o.Concurrency = &archive.Config{Dir: dir}, 1
		runWorkers(t, ctx, s, "same", o)
		if _, err := admin.Recrawl(ctx, s.Client, "same", true); err != nil {
			t.Fatal(err)
		}
		o = fastOptions("w2")
		o.WARC, o.Concurrency = &archive.Config{Dir: dir}, 1
		runWorkers(t, ctx, s, "same", o)
		mu.Lock()
		root304 := asked["/"]
		mu.Unlock()
		if root304 != `"root"` {
			t.Errorf("the root was refetched with If-None-Match %q; want its ETag", root304)
		}

		type rec struct{ typ, uri, date, profile, refURI, refDate string }
		var recs []rec
		eachWARCRecord(t, dir, func(wr gowarc.Record) {
			h := wr.WarcRecord.WarcHeader()
			if typ := wr.WarcRecord.Type(); typ == gowarc.Response || typ == gowarc.Revisit {
				recs = append(recs, rec{typ.String(), h.Get(gowarc.WarcTargetURI), h.Get(gowarc.WarcDate), h.Get(gowarc.WarcProfile),
					h.Get(gowarc.WarcRefersToTargetURI), h.Get(gowarc.WarcRefersToDate)})
			}
		})
		responses := map[string]rec{}
		count := map[string]int{}
		for _, r := range recs {
			count[fmt.Sprintf("%s %s", r.typ, r.profile)]++
			if r.typ == "response" {
				responses[r.uri+" "+r.date] = r
			}
		}
		// First crawl: / and one of /a, /b whole, the other a revisit; the
		// recrawl: / not modified, /a and /b identical payloads.
		if count["response "] != 2 || count["revisit "+archive.IdenticalPayloadDigest] != 3 || count["revisit "+archive.ServerNotModified] != 1 {
			t.Fatalf("records %v; want 2 responses, 3 identical-payload revisits, 1 server-not-modified", count)
		}
		for _, r := range recs {
			if r.typ != "revisit" {
				continue
			}
			if _, ok := responses[r.refURI+" "+r.refDate]; !ok || r.refDate >= r.date {
				t.Errorf("revisit of %s at %s refers to %s at %s: not an earlier response", r.uri, r.date, r.refURI, r.refDate)
			}
		}
	})
}
