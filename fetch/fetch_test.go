package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"pgregory.net/rapid"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/redcrawl/crawler/internal/testsite"
)

func testConfig() Config {
	c := DefaultConfig()
	c.AllowPrivate = true // httptest listens on loopback
	c.MaxBody = 1000
	c.HeaderTimeout = 200 * time.Millisecond
	return c
}

func serve(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestFetchHTMLAndUserAgent(t *testing.T) {
	var ua string
	u := serve(t, func(w http.ResponseWriter, r *http.Request) {
		ua = r.UserAgent()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<title>x</title>"))
	})
	res, err := New(testConfig()).Fetch(context.Background(), u+"/")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || !res.HTML || string(res.Body) != "<title>x</title>" || res.ContentType != "text/html" || res.Truncated {
		t.Fatalf("result %+v", res)
	}
	if !strings.HasPrefix(ua, "RedCrawl/") {
		t.Fatalf("User-Agent %q", ua)
	}
}

func TestBodyCapAndNonHTML(t *testing.T) {
	u := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/html")
			w.Write(bytes.Repeat([]byte("a"), 5000))
		case "/pdf":
			w.Header().Set("Content-Type", "application/pdf")
			w.Write(bytes.Repeat([]byte("b"), 500))
		case "/bomb": // 10 MB of zeros, gzip-compressed to a few KB
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(200)
			w.(http.Flusher).Flush() // headers now, not after compressing 10 MB
			gz := gzip.NewWriter(w)
			gz.Write(make([]byte, 10<<20))
			gz.Close()
		}
	})
	f := New(testConfig())
	res, err := f.Fetch(context.Background(), u+"/big")
	if err != nil || !res.Truncated || len(res.Body) != 1000 || res.Bytes != 1000 {
		t.Fatalf("big: %+v %v", res, err)
	}
	res, err = f.Fetch(context.Background(), u+"/pdf") // not a kept type: not downloaded
	if err != nil || res.HTML || res.Body != nil || res.Bytes != 0 || !res.DroppedBody {
		t.Fatalf("pdf: %+v %v", res, err)
	}
	res, err = f.Fetch(context.Background(), u+"/bomb")
	if err != nil {
		t.Fatalf("gzip bomb: %v", err)
	}
	if !res.Truncated || len(res.Body) != 1000 {
		t.Fatalf("gzip bomb: truncated=%v len=%d %v", res.Truncated, len(res.Body), err)
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	u := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new?x=1", http.StatusMovedPermanently)
			return
		}
		t.Errorf("redirect followed to %s", r.URL)
	})
	res, err := New(testConfig()).Fetch(context.Background(), u+"/old")
	if err != nil || res.Status != 301 || res.Location != u+"/new?x=1" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestClassification(t *testing.T) {
	u := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/404":
			w.WriteHeader(404)
		case "/503":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(503)
		case "/429":
			w.Header().Set("Retry-After", time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(429)
		case "/hang": // headers never come: the header timeout must fire
			<-r.Context().Done()
		}
	})
	f := New(testConfig())
	ctx := context.Background()
	if res, err := f.Fetch(ctx, u+"/404"); err != nil || res.Status != 404 || TransientStatus(res.Status) {
		t.Fatalf("404: %+v %v", res, err)
	}
	if res, err := f.Fetch(ctx, u+"/503"); err != nil || !TransientStatus(res.Status) || res.RetryAfter != 120*time.Second {
		t.Fatalf("503: %+v %v", res, err)
	}
	if res, err := f.Fetch(ctx, u+"/429"); err != nil || !TransientStatus(res.Status) || res.RetryAfter < 28*time.Second || res.RetryAfter > 30*time.Second {
		t.Fatalf("429: %+v %v", res, err)
	}
	if _, err := f.Fetch(ctx, u+"/hang"); !IsTransient(err) {
		t.Fatalf("header timeout: %v, want transient", err)
	}
	// A closed port: connection refused is transient.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	if _, err := f.Fetch(ctx, "http://"+addr+"/"); !IsTransient(err) {
		t.Fatalf("refused: %v, want transient", err)
	}
	if _, err := f.Fetch(ctx, "http://bad host/"); err == nil || IsTransient(err) {
		t.Fatalf("malformed URL: %v, want permanent", err)
	}
}

func TestSSRFGuard(t *testing.T) {
	var hit atomic.Bool
	u := serve(t, func(w http.ResponseWriter, r *http.Request) { hit.Store(true) })
	cfg := testConfig()
	cfg.AllowPrivate = false
	f := New(cfg)
	// By IP and by a name that resolves to loopback: both refused at dial time.
	for _, target := range []string{u, strings.Replace(u, "127.0.0.1", "localhost", 1)} {
		_, err := f.Fetch(context.Background(), target+"/")
		if !errors.Is(err, ErrBlockedAddress) || IsTransient(err) {
			t.Fatalf("%s: %v, want ErrBlockedAddress (permanent)", target, err)
		}
	}
	if hit.Load() {
		t.Fatal("the guarded fetch reached the server")
	}
	for ip, want := range map[string]bool{
		"127.0.0.1": true, "10.1.2.3": true, "192.168.0.1": true, "172.16.5.4": true, "169.254.169.254": true,
		"0.0.0.0": true, "::1": true, "fe80::1": true, "fc00::1": true, "100.64.0.1": true,
		"93.184.216.34": false, "2606:4700::1111": false,
	} {
		if got := Blocked(net.ParseIP(ip)); got != want {
			t.Errorf("Blocked(%s) = %v", ip, got)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"": 0, "10": 10 * time.Second, "-5": 0, "junk": 0, "999999": time.Hour,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	} {
		if got := retryAfter(in, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

// readBody reads what the server sends, whatever it announced: shorter,
// exact or longer than Content-Length, or none (-1).
func TestReadBodyWhateverWasAnnounced(t *testing.T) {
	body := strings.Repeat("x", 5000)
	for _, announced := range []int64{-1, 0, 10, 4999, 5000, 5001, 1 << 20} {
		got, err := readBody(iotest.OneByteReader(strings.NewReader(body)), announced, 1<<30)
		if err != nil || string(got) != body {
			t.Fatalf("announced %d: read %d bytes, %v; want %d", announced, len(got), err, len(body))
		}
	}
	if got, _ := readBody(strings.NewReader(body), 5000, 1<<30); cap(got) != 5001 {
		t.Fatalf("a body of the announced length grew its buffer to %d", cap(got))
	}
}

// A sitemap may be 50 MB (sitemaps.org); MaxBody (5 MiB) cut a valid
// 10 MiB one of 50 000 URLs to 24 730, plain and gzip-encoded alike.
// FetchBodyUpTo reads it whole.
func TestFetchBodyUpToReadsALargeSitemapWhole(t *testing.T) {
	body := bytes.Repeat([]byte("<url><loc>https://a.example/page/0000000000000000000000000000000000000000</loc></url>\n"), 10<<20/86+1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		if r.URL.Path == "/gz" {
			w.Header().Set("Content-Encoding", "gzip")
			z := gzip.NewWriter(w)
			z.Write(body)
			z.Close()
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	cfg := testConfig()
	cfg.HeaderTimeout = 30 * time.Second // gzipping 10 MiB under the race detector takes a while
	f := New(cfg)
	for _, p := range []string{"/plain", "/gz"} {
		r, err := f.FetchBodyUpTo(context.Background(), srv.URL+p, 50<<20)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if r.Truncated || len(r.Body) != len(body) {
			t.Fatalf("%s: read %d of %d bytes (truncated %v)", p, len(r.Body), len(body), r.Truncated)
		}
		if r, err := f.FetchBody(context.Background(), srv.URL+p); err != nil || !r.Truncated {
			t.Fatalf("%s: FetchBody: %v; want the body cut at MaxBody", p, err)
		}
	}
}

// Host names are resolved once for as long as their TTL says, not for
// every connection: ten names fetched five times each, every response
// closing its connection, ask the DNS server once a name (an A and an
// AAAA question), where an uncached resolver asked fifty times. A name
// the server does not know fails the fetch, as the web's would.
func TestNamesAreResolvedOncePerTTL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>hi</body></html>")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("h%d.site.test", i))
	}
	d, err := testsite.StartDNS("127.0.0.1:0", names, net.IPv4(127, 0, 0, 1), 60)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg := DefaultConfig()
	cfg.AllowPrivate, cfg.DNS = true, d.Addr()
	f := New(cfg)
	for range 5 {
		for _, n := range names {
			r, err := f.Fetch(context.Background(), "http://"+net.JoinHostPort(n, port)+"/")
			if err != nil || r.Status != 200 {
				t.Fatalf("fetch %s: %+v, %v", n, r, err)
			}
		}
	}
	if q := d.Queries.Load(); q != 2*int64(len(names)) {
		t.Fatalf("%d DNS questions for %d names fetched 5 times over new connections; want one A and one AAAA a name", q, len(names))
	}
	if _, err := f.Fetch(context.Background(), "http://"+net.JoinHostPort("nowhere.site.test", port)+"/"); err == nil {
		t.Fatal("a name the DNS server does not know was fetched")
	}
}

// A conditional fetch with what the last response said of its version is
// answered 304, with no body, while the page is unchanged; once it
// changed, by a full response with its new validators.
func TestFetchIfAsksWhetherThePageChanged(t *testing.T) {
	site, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 10, Versioned: true, ListenBase: "127.0.0.40"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	f := New(testConfig())
	ctx := context.Background()
	u := "http://" + site.Hosts()[0] + "/p/3.html"
	first, err := f.Fetch(ctx, u)
	if err != nil || first.Status != 200 || first.Headers["etag"] == "" || first.Headers["last-modified"] == "" {
		t.Fatalf("first fetch: %+v, %v; want 200 with an ETag and a Last-Modified", first, err)
	}
	v := Validators{ETag: first.Headers["etag"], LastModified: first.Headers["last-modified"]}
	for _, cond := range []Validators{v, {ETag: v.ETag}, {LastModified: v.LastModified}} {
		again, err := f.FetchIf(ctx, u, cond)
		if err != nil || again.Status != http.StatusNotModified || again.Bytes != 0 || len(again.Body) != 0 {
			t.Errorf("FetchIf(%+v): %+v, %v; want 304 and no body", cond, again, err)
		}
	}
	site.Change(1) // every page moves on
	changed, err := f.FetchIf(ctx, u, v)
	if err != nil || changed.Status != 200 || !strings.Contains(string(changed.Body), "version 1") || changed.Headers["etag"] == v.ETag {
		t.Fatalf("FetchIf after a change: %+v, %v; want 200 with the new version", changed, err)
	}
	if none, err := f.FetchIf(ctx, u, Validators{}); err != nil || none.Status != 200 {
		t.Errorf("FetchIf with no validators: %+v, %v; want a plain 200", none, err)
	}
}

// Retry-After over its whole range: seconds from 0 to past int64 (the
// cap, never an overflow to 0, as 9300000000, 9223372037 and 18446744073
// once gave), and dates from year 1 to 9999 (the time until them, from 0
// to the cap). The pause is always in [0, cap] and never shorter than a
// smaller header's.
func TestRetryAfterOverTheWholeRange(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"9300000000": maxRetryAfter, "9223372037": maxRetryAfter, "18446744073": maxRetryAfter,
		"99999999999999999999999": maxRetryAfter, "3599": 3599 * time.Second, "3600": maxRetryAfter, "0": 0,
		"+5": 0, "5s": 0, "1e3": 0,
	} {
		if got := retryAfter(in, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", in, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		var a, b time.Duration
		if rapid.Bool().Draw(t, "seconds") {
			// Digits of every length: a number, or one past int64.
			x := rapid.Uint64().Draw(t, "x")
			y := rapid.Uint64Range(0, x).Draw(t, "y")
			extra := rapid.StringMatching(`[0-9]{0,12}`).Draw(t, "more digits")
			a, b = retryAfter(strconv.FormatUint(y, 10), now), retryAfter(strconv.FormatUint(x, 10)+extra, now)
			want := time.Duration(min(y, uint64(maxRetryAfter/time.Second))) * time.Second
			if y >= uint64(maxRetryAfter/time.Second) {
				want = maxRetryAfter
			}
			if a != want {
				t.Fatalf("retryAfter(%d) = %v; want %v", y, a, want)
			}
		} else {
			lo := rapid.Int64Range(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Unix()).Draw(t, "lo")
			hi := rapid.Int64Range(lo, time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Unix()).Draw(t, "hi")
			a = retryAfter(time.Unix(lo, 0).UTC().Format(http.TimeFormat), now)
			b = retryAfter(time.Unix(hi, 0).UTC().Format(http.TimeFormat), now)
			want := min(max(time.Unix(lo, 0).Sub(now), 0), maxRetryAfter)
			if a != want {
				t.Fatalf("retryAfter(%s) = %v; want %v", time.Unix(lo, 0).UTC().Format(http.TimeFormat), a, want)
			}
		}
		if a < 0 || b > maxRetryAfter || b < a {
			t.Fatalf("pauses %v then %v for a later header: want 0 ≤ first ≤ second ≤ %v", a, b, maxRetryAfter)
		}
	})
}
