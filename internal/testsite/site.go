// Package testsite serves a deterministic synthetic web site of several
// hosts, for tests, benchmarks and the demo: either one loopback address a
// host (127.0.0.10, 127.0.0.11, …), or named hosts on one listener told
// apart by their Host header (a.site.test, b.site.test, … in a compose
// network, where DNS gives every name the site's address).
// It knows which URLs a correct crawl must fetch (/_truth) and counts what
// it was asked for (/_stats): per host, the requests and the most seen in
// any sliding one-second window, so politeness can be checked from outside.
//
// Each host serves / and /p/0.html … /p/{P-1}.html. Pages link to one
// another with navigation links, chains, relative links, several spellings
// of one URL (fragments, dot segments, default port, upper case), links to
// other hosts, redirects (/r/N), 404s (/missing/N), pages that fail once
// with 500 then work (/flaky/N), non-HTML files (/files/N.pdf), a
// meta-refresh page, an out-of-scope host, mailto: and javascript: links.
// Host 0's robots.txt disallows /private/, which its pages link to.
//
// For recrawls, pages can change (Config.Versioned, versions.go): each
// /p/N.html then has a version, validators (ETag, Last-Modified) and
// answers conditional requests 304 while unchanged; Change (or POST
// /_change?fraction=F) moves a fraction of them on, ChangeEvery makes hot
// and warm pages change by themselves, and /_truth?versions says which
// version of each page is current.
package testsite

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config shapes the site.
type Config struct {
	Hosts      int           // hosts (loopback addresses, past one /24 if need be), default 4; with Names, len(Names)
	Pages      int           // pages per host besides /, default 100
	Latency    time.Duration // added to every response
	ListenBase string        // first address, default 127.0.0.10; host i is the i-th from it (.0 and .255 skipped)
	Port       int           // the same on every host; 0 picks a free one
	// Names, when set, are the hosts' names, all served on one listener at
	// Listen and told apart by the Host header; the URLs carry Port (the
	// listener's port when 0). A request for another host gets 421, but
	// /_truth, /_fetchable and /_stats answer on any.
	Names  []string
	Listen string // with Names: the address to listen on, default ":8080"
	// DNS, with Names, is where to answer DNS for them ("127.0.0.1:0"
	// picks a port; Site.DNS): each resolves to the listener's address, so
	// a crawler told to ask there (fetch.Config.DNS) crawls ten thousand
	// host names on one loopback listener.
	DNS string
	// SlowEvery, when not 0, makes every SlowEvery-th host (1st, then
	// 1+SlowEvery …) answer ten times slower; FailEvery makes every
	// FailEvery-th host (from the 2nd) answer each page's first request
	// with a 503 and a Retry-After of 1 s: a slow and a failing minority.
	SlowEvery, FailEvery int
	// Robots: every host serves a robots.txt of its own (disallowing
	// /private/); otherwise only the first does and the others answer 404.
	Robots bool
	// Versioned pages change (versions.go): /p/N.html carries a version in
	// its body, an ETag and a Last-Modified, answers conditional requests,
	// and moves on when Site.Change says; with ChangeEvery, pages also
	// change by themselves, hot ones every period, warm ones every fourth.
	Versioned   bool
	ChangeEvery time.Duration
	// Scripted makes the last Scripted hosts application shells whose
	// links only a browser finds (scripted.go); their home page's script
	// also reaches for two traps outside the scope (loopback mode only).
	Scripted int
}

// Site is a running test site.
type Site struct {
	cfg     Config
	hosts   []string // "127.0.0.10:8080"
	servers []*http.Server
	mu      sync.Mutex
	reqs    map[string][]time.Time // host -> request times (robots.txt and /_ endpoints excluded)
	perURL  map[string]int         // URL -> requests
	flaky   map[string]bool        // flaky URLs that already failed once
	private []string               // disallowed URLs that were requested anyway
	total   map[string]int         // host -> all requests
	dns     *DNS                   // with Config.DNS
	// Versioned pages (versions.go): when the site started, the versions
	// Change gave, how many Changes and the last one's time; 304s sent,
	// and the bytes of the pages' bodies sent.
	started     time.Time
	bumped      map[string]Version
	changes     int
	lastChange  time.Time
	notModified int
	bytes       int64
	conditional map[string]int // URL -> requests with a validator
	// Scripted hosts (scripted.go): the traps' URLs, what reached them,
	// and the URLs requested with a browser's User-Agent.
	traps, trapped, browser []string
}

func newSite(cfg Config) *Site {
	s := &Site{cfg: cfg, reqs: map[string][]time.Time{}, perURL: map[string]int{}, flaky: map[string]bool{}, total: map[string]int{},
		started: time.Now().Truncate(time.Second), bumped: map[string]Version{}, conditional: map[string]int{}}
	s.lastChange = s.started // a change takes a later Last-Modified than the start's
	return s
}

// Start serves the site until Close.
func Start(cfg Config) (*Site, error) {
	if cfg.Pages <= 0 {
		cfg.Pages = 100
	}
	if len(cfg.Names) > 0 {
		cfg.Hosts = len(cfg.Names)
		return newSite(cfg).startNamed()
	}
	if cfg.Hosts <= 0 {
		cfg.Hosts = 4
	}
	if cfg.ListenBase == "" {
		cfg.ListenBase = "127.0.0.10"
	}
	base := net.ParseIP(cfg.ListenBase).To4()
	if base == nil || !base.IsLoopback() {
		return nil, fmt.Errorf("testsite: --listen-base %q must be an IPv4 loopback address (127.x.y.z)", cfg.ListenBase)
	}
	addrs, err := hostAddresses(base, cfg.Hosts+1) // the last: a trap's (Scripted)
	if err != nil {
		return nil, err
	}
	next := addrs[cfg.Hosts].String()
	addrs = addrs[:cfg.Hosts]
	s := newSite(cfg)
	var listeners []net.Listener
	for _, ip := range addrs {
		l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(cfg.Port)))
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return nil, fmt.Errorf("testsite: listen on %s port %d: %w", ip, cfg.Port, err)
		}
		if cfg.Port == 0 { // the first free port is used for every host
			cfg.Port = l.Addr().(*net.TCPAddr).Port
			s.cfg.Port = cfg.Port
		}
		listeners = append(listeners, l)
		s.hosts = append(s.hosts, l.Addr().String())
	}
	for i, l := range listeners {
		srv := &http.Server{Handler: s.handler(i), ReadHeaderTimeout: 10 * time.Second}
		s.servers = append(s.servers, srv)
		go srv.Serve(l)
	}
	if err := s.startTraps(next); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// hostAddresses are n loopback addresses from base on, in order, past
// one /24 when n needs it (127.0.0.0/8 is all loopback): the addresses
// ending in .0 or .255 are skipped, as some tools read them as a
// network's or its broadcast.
func hostAddresses(base net.IP, n int) ([]net.IP, error) {
	a := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	out := make([]net.IP, 0, n)
	for ; len(out) < n; a++ {
		if a>>24 != 127 || a == 127<<24|0xFFFFFF {
			return nil, fmt.Errorf("testsite: %d hosts from %s run past the end of 127.0.0.0/8", n, base)
		}
		if b := byte(a); b != 0 && b != 255 {
			out = append(out, net.IPv4(byte(a>>24), byte(a>>16), byte(a>>8), b))
		}
	}
	return out, nil
}

// Close stops every host.
func (s *Site) Close() {
	for _, srv := range s.servers {
		srv.Close()
	}
	if s.dns != nil {
		s.dns.Close()
	}
}

// Hosts are the site's host:port names.
func (s *Site) Hosts() []string { return s.hosts }

// Roots are the hosts' home pages: the seeds of a crawl of the whole site.
func (s *Site) Roots() []string {
	out := make([]string, len(s.hosts))
	for i, h := range s.hosts {
		out[i] = "http://" + h + "/"
	}
	return out
}

func (s *Site) handler(hi int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch p {
		case "/_truth":
			if _, ok := r.URL.Query()["versions"]; ok {
				writeJSON(w, s.Versions())
				return
			}
			if _, ok := r.URL.Query()["plain"]; ok {
				writeJSON(w, s.PlainTruth())
				return
			}
			writeJSON(w, s.Truth())
			return
		case "/_fetchable":
			writeJSON(w, s.Fetchable())
			return
		case "/_stats":
			writeJSON(w, s.Stats())
			return
		case "/_change":
			s.serveChange(w, r)
			return
		}
		failOnce, failFirst := s.count(hi, r)
		if latency := s.cfg.Latency; latency > 0 {
			if s.cfg.SlowEvery > 0 && hi%s.cfg.SlowEvery == 0 {
				latency *= 10
			}
			time.Sleep(latency)
		}
		if failFirst {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if s.scripted(hi) && s.serveScripted(w, r, hi) {
			return
		}
		switch {
		case p == "/robots.txt":
			if hi == 0 || s.cfg.Robots {
				w.Header().Set("Content-Type", "text/plain")
				fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
				return
			}
			http.NotFound(w, r)
		case p == "/" || strings.HasPrefix(p, "/p/") || strings.HasPrefix(p, "/flaky/") || strings.HasPrefix(p, "/private/"):
			if failOnce {
				http.Error(w, "try again", http.StatusInternalServerError)
				return
			}
			s.servePage(w, r, hi)
		case strings.HasPrefix(p, "/r/"):
			n, err := strconv.Atoi(strings.TrimPrefix(p, "/r/"))
			if err != nil || n < 0 || n >= s.cfg.Pages {
				http.NotFound(w, r)
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/p/%d.html", n), http.StatusMovedPermanently)
		case strings.HasPrefix(p, "/files/"):
			w.Header().Set("Content-Type", "application/pdf")
			fmt.Fprint(w, "%PDF-1.4 not really\n")
		default:
			http.NotFound(w, r)
		}
	})
}

// count counts request r to host hi (for /_stats), and says whether it
// fails: a /flaky/ page's first request (failOnce), and with FailEvery
// every page's first request to one host in so many (failFirst).
func (s *Site) count(hi int, r *http.Request) (failOnce, failFirst bool) {
	p := r.URL.Path
	host := s.hosts[hi]
	full := "http://" + host + r.URL.RequestURI()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total[host]++
	s.perURL[full]++
	if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
		s.conditional[full]++
	}
	if p != "/robots.txt" {
		s.reqs[host] = append(s.reqs[host], time.Now())
	}
	if browserAgent(r.UserAgent()) {
		s.browser = append(s.browser, full)
	}
	if hi == 0 && strings.HasPrefix(p, "/private/") {
		s.private = append(s.private, full)
	}
	failOnce = strings.HasPrefix(p, "/flaky/") && !s.flaky[full]
	if failOnce {
		s.flaky[full] = true
	}
	failFirst = s.cfg.FailEvery > 0 && hi%s.cfg.FailEvery == 1%s.cfg.FailEvery && p != "/robots.txt" && s.perURL[full] == 1
	return failOnce, failFirst
}

// servePage serves a page of host hi: its links, a version when the site
// is versioned (with validators, answered 304 while unchanged), and on
// some pages a meta refresh.
func (s *Site) servePage(w http.ResponseWriter, r *http.Request, hi int) {
	p, host := r.URL.Path, s.hosts[hi]
	links, ok := s.pageLinks(hi, p)
	if !ok {
		http.NotFound(w, r)
		return
	}
	n, numbered := pageNumber(p)
	numbered = numbered && strings.HasPrefix(p, "/p/")
	var ver *Version
	if numbered && s.versioned() {
		v := s.version(hi, n, time.Now())
		ver = &v
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html><html><head><title>%s %s</title>", host, p)
	if numbered && n%60 == 11 {
		fmt.Fprintf(&b, `<meta http-equiv="refresh" content="0; url=/p/%d.html">`, s.refreshTarget(n))
	}
	fmt.Fprint(&b, "</head><body>\n")
	if ver != nil {
		fmt.Fprintf(&b, "<p>version %d</p>\n", ver.Version)
	}
	if s.scripted(hi) {
		s.writeShell(&b, hi, p)
	}
	for _, l := range links {
		if l.href != "" && !s.scripted(hi) {
			fmt.Fprintf(&b, "<a href=\"%s\">link</a>\n", l.href)
		}
	}
	fmt.Fprint(&b, "</body></html>\n")
	if s.versioned() {
		// Every page has validators, as a static server's do: a page that
		// never changes has an ETag of its content.
		if ver == nil {
			ver = &Version{ETag: fmt.Sprintf(`"s-%08x"`, crc32.ChecksumIEEE([]byte(b.String()))), Modified: s.started}
		}
		w.Header().Set("ETag", ver.ETag)
		w.Header().Set("Last-Modified", ver.Modified.UTC().Format(http.TimeFormat))
		if notModified(r, *ver) {
			s.mu.Lock()
			s.notModified++
			s.mu.Unlock()
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.mu.Lock()
	s.bytes += int64(b.Len())
	s.mu.Unlock()
	io.WriteString(w, b.String())
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
