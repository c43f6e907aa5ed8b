package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/netlab"
)

// What the web speaks that loopback tests do not: an HTTPS-only host behind
// http:// → https:// redirects, its certificate from the test's own CA,
// serving HTTP/2; a host whose name is internationalised (bücher.example,
// xn--bcher-kva.example in DNS and on the wire); and a host that speaks only
// HTTP/1.0. A plain crawl fetches every page of each, and each record says
// which HTTP version fetched it: HTTP/2.0 from the HTTPS host, except with
// WARC files, whose capture speaks HTTP/1.1 (docs/design.md says why).
func TestInTheLabHTTPSAnIDNAndHTTP10AreCrawled(t *testing.T) {
	bin, inside := lab(t)
	if !inside {
		return
	}
	const secureIP, idnIP, oldIP = "151.101.2.10", "185.199.108.153", "104.18.20.5"
	const secure, idn, old = "secure.example-shop.com", "xn--bcher-kva.example", "old.example-shop.com"
	l := netlab.Up(t, map[string]string{secure: secureIP, idn: idnIP, old: oldIP}, secureIP, idnIP, oldIP)
	var mu sync.Mutex
	protos, hosts := map[string]int{}, map[string]int{}
	note := func(r *http.Request) {
		mu.Lock()
		protos[r.Proto]++
		hosts[r.Host]++
		mu.Unlock()
	}

	// The HTTPS host: every http:// URL redirects to its https:// twin.
	redirect := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note(r)
		http.Redirect(w, r, "https://"+secure+r.URL.RequestURI(), http.StatusMovedPermanently)
	})}
	go redirect.Serve(netlab.Listen(t, secureIP+":80"))
	defer redirect.Close()
	tlsSrv := &http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{l.CA.Leaf(t, secure)}},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			note(r)
			page(w, r, 6, func(n int) string {
				if n == 3 { // an absolute http:// link: redirected again
					return "http://" + secure + "/s/3.html"
				}
				return fmt.Sprintf("/s/%d.html", n)
			})
		})}
	go tlsSrv.ServeTLS(netlab.Listen(t, secureIP+":443"), "", "")
	defer tlsSrv.Close()

	// The IDN host, its links written as a person would.
	idnSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note(r)
		page(w, r, 3, func(n int) string { return fmt.Sprintf("http://bücher.example/s/%d.html", n) })
	})}
	go idnSrv.Serve(netlab.Listen(t, idnIP+":80"))
	defer idnSrv.Close()

	// The HTTP/1.0 host: one request a connection, no chunks, no Host
	// needed.
	go serveHTTP10(netlab.Listen(t, oldIP+":80"))

	seeds := []string{"http://" + secure + "/", "http://bücher.example/", "http://" + old + "/"}
	want := map[string]string{}
	for n := 0; n <= 6; n++ {
		want[fmt.Sprintf("https://%s/s/%d.html", secure, n)] = "HTTP/2.0"
	}
	for n := 0; n <= 3; n++ {
		want[fmt.Sprintf("http://%s/s/%d.html", idn, n)] = "HTTP/1.1"
		want[fmt.Sprintf("http://%s/s/%d.html", old, n)] = "HTTP/1.0"
	}
	for _, warc := range []bool{false, true} {
		h := labHarness(t, bin)
		h.run(append([]string{"seed", "--rate", "inf"}, seeds...)...)
		flags := []string{}
		if warc {
			flags = append(flags, "--warc-dir", t.TempDir())
		}
		w := h.startWorker("w1", flags...)
		w.awaitCleanExit(t)
		recs := byURL(h)
		for u, proto := range want {
			if warc && proto == "HTTP/2.0" {
				proto = "HTTP/1.1"
			}
			r, ok := recs[u]
			switch {
			case !ok:
				t.Errorf("warc %v: %s has no record", warc, u)
			case r.Outcome != "ok" || r.Status != 200:
				t.Errorf("warc %v: %s: %s %d %s", warc, u, r.Outcome, r.Status, r.Error)
			case r.Proto != proto:
				t.Errorf("warc %v: %s: record says %q; want %q", warc, u, r.Proto, proto)
			}
		}
		if t.Failed() {
			t.Logf("records: %v\nworker:\n%s", recs, w.log.String())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("the servers saw %v; hosts %v", protos, hosts)
	if protos["HTTP/2.0"] == 0 {
		t.Error("the HTTPS host never saw HTTP/2")
	}
	for h := range hosts {
		if strings.Contains(h, "ü") {
			t.Errorf("a request's Host was %q, not in its xn-- form", h)
		}
	}
}

// page serves "/" and /s/N.html for N < n: each links to the next (link
// gives the href) and the root to the first and the last.
func page(w http.ResponseWriter, r *http.Request, n int, link func(int) string) {
	var next []int
	switch p := r.URL.Path; {
	case p == "/":
		next = []int{0, n}
	case strings.HasPrefix(p, "/s/"):
		var i int
		if _, err := fmt.Sscanf(p, "/s/%d.html", &i); err != nil || i < 0 || i > n {
			http.NotFound(w, r)
			return
		}
		if i < n {
			next = []int{i + 1}
		}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<html><head><title>%s</title></head><body>", r.URL.Path)
	for _, i := range next {
		fmt.Fprintf(w, `<a href="%s">%d</a> `, link(i), i)
	}
	fmt.Fprint(w, "</body></html>")
}

// serveHTTP10 answers as an HTTP/1.0 server does: the response, then the
// connection closed; / and /s/N.html for N ≤ 3.
func serveHTTP10(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err != nil {
				return
			}
			rec := &http10Writer{h: http.Header{}}
			page(rec, req, 3, func(n int) string { return fmt.Sprintf("/s/%d.html", n) })
			fmt.Fprintf(c, "HTTP/1.0 %d %s\r\nContent-Type: %s\r\n\r\n%s", rec.status(), http.StatusText(rec.status()),
				rec.h.Get("Content-Type"), rec.body.String())
		}()
	}
}

// http10Writer keeps what a handler wrote, for serveHTTP10 to send.
type http10Writer struct {
	h    http.Header
	code int
	body strings.Builder
}

func (w *http10Writer) Header() http.Header         { return w.h }
func (w *http10Writer) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *http10Writer) WriteHeader(code int)        { w.code = code }
func (w *http10Writer) status() int {
	if w.code == 0 {
		return 200
	}
	return w.code
}
