package crawl_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
)

// What a site's owner says in X-Robots-Tag headers and robots meta tags:
// nofollow in a header or a meta tag addressed to every crawler or to
// this one stops the page's links; addressed to another crawler it does
// not; the directives reach the record (a PDF's, from its header only)
// and export.
func TestRobotsDirectivesInHeadersAndMetaTags(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		page := func(w http.ResponseWriter, meta, link string) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<html><head>%s</head><body><a href="%s">x</a></body></html>`, meta, link)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/":
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, `<a href="/header">1</a><a href="/other-header">2</a><a href="/meta">3</a><a href="/other-meta">4</a><a href="/both">5</a><a href="/doc.pdf">6</a>`)
			case "/header":
				w.Header().Add("X-Robots-Tag", "noindex")
				w.Header().Add("X-Robots-Tag", "redcrawl: nofollow")
				page(w, "", "/header-child")
			case "/other-header":
				w.Header().Set("X-Robots-Tag", "otherbot: nofollow, noindex")
				page(w, "", "/other-header-child")
			case "/meta":
				page(w, `<meta name="RedCrawl" content="nofollow, nosnippet">`, "/meta-child")
			case "/other-meta":
				page(w, `<meta name="googlebot" content="none">`, "/other-meta-child")
			case "/both":
				w.Header().Set("X-Robots-Tag", "noarchive")
				page(w, `<meta name="robots" content="noindex">`, "/both-child")
			case "/doc.pdf":
				w.Header().Set("Content-Type", "application/pdf")
				w.Header().Set("X-Robots-Tag", "noindex, noarchive")
				fmt.Fprint(w, "%PDF-1.4")
			default:
				page(w, "", "/")
			}
		}))
		defer srv.Close()
		set := settings.Default()
		set.Rate, set.AllowPrivate = math.Inf(1), true
		seed, _ := url.Parse(srv.URL + "/")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.Seed(ctx, s.Client, "xrt", set, []*url.URL{seed}); err != nil {
			t.Fatal(err)
		}
		runWorkers(t, ctx, s, "xrt", fastOptions("w1"))
		recs := exportedByURL(t, ctx, s.Client, "xrt")
		for path, want := range map[string]string{
			"/header": "noindex nofollow", "/other-header": "", "/meta": "nofollow nosnippet", "/other-meta": "",
			"/both": "noindex noarchive", "/doc.pdf": "noindex noarchive",
		} {
			rec, ok := recs[srv.URL+path]
			if !ok {
				t.Errorf("%s: no record", path)
				continue
			}
			if got := strings.Join(rec.Robots, " "); got != want {
				t.Errorf("%s: robots %q; want %q", path, got, want)
			}
		}
		for path, followed := range map[string]bool{"/header-child": false, "/meta-child": false,
			"/other-header-child": true, "/other-meta-child": true, "/both-child": true} {
			if _, ok := recs[srv.URL+path]; ok != followed {
				t.Errorf("%s fetched: %v; want %v", path, ok, followed)
			}
		}
	})
}

// With --obey-noarchive, a response whose owner says noarchive (a PDF in
// its header, a page in its meta tag) is not in the WARC files and its
// record says why; the others are archived; without it, all are.
func TestObeyNoArchiveKeepsThemOutOfTheWARC(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/":
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, `<a href="/doc.pdf">1</a><a href="/private.html">2</a><a href="/open.pdf">3</a>`)
			case "/doc.pdf", "/open.pdf":
				w.Header().Set("Content-Type", "application/pdf")
				if r.URL.Path == "/doc.pdf" {
					w.Header().Set("X-Robots-Tag", "noarchive")
				}
				fmt.Fprint(w, "%PDF-1.4")
			case "/private.html":
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, `<html><head><meta name="robots" content="noarchive"></head><body>p</body></html>`)
			default:
				http.NotFound(w, r)
			}
		}))
		defer srv.Close()
		for _, obey := range []bool{true, false} {
			name := fmt.Sprintf("noarch-%v", obey)
			set := settings.Default()
			set.Rate, set.AllowPrivate, set.ObeyNoArchive = math.Inf(1), true, obey
			set.KeepTypes = []string{"text/html", "application/pdf"}
			seed, _ := url.Parse(srv.URL + "/")
			archived, recs := archivedCrawl(t, s, name, set, []*url.URL{seed})
			for path, why := range map[string]string{"/doc.pdf": "noarchive (X-Robots-Tag)", "/private.html": "noarchive (robots meta tag)", "/open.pdf": "", "/": ""} {
				if !obey {
					why = ""
				}
				u := srv.URL + path
				if (archived[u] == 1) != (why == "") || recs[u].NotArchived != why || (why == "") != (recs[u].WARC != nil) {
					t.Errorf("obey %v, %s: archived %v, record says %q (warc %v); want not archived %q", obey, path, archived[u], recs[u].NotArchived, recs[u].WARC, why)
				}
			}
		}
	})
}
