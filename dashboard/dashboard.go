// Package dashboard serves a crawl's live dashboard: a read-only web page,
// embedded in the binary (it loads nothing from elsewhere, so it works
// offline), that shows the crawl and its coordination as they happen —
// progress, the frontier and its shards, workers and their heartbeats,
// the scheduler's lock and epoch, hosts and their token buckets, the Bloom
// filter, and the event log of handovers, fenced sweeps and pauses. It
// needs only Redis: any machine that reaches the crawl's Redis can serve
// it, worker or not.
//
// The page polls nothing itself: /api/stream is a server-sent event
// stream of the crawl's state, one a second (/api/state gives one), read
// panel by panel (state.go; docs/dashboard.md has what each costs). It
// writes nothing to Redis (but with its controls: control.go, opt-in
// and behind the token), and shows nothing secret: no Redis address or
// password, and of the settings none of the request headers, which may
// hold credentials.
package dashboard

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed web
var web embed.FS

// Config says what to serve.
type Config struct {
	Crawl string // the crawl's name
	// Token, when not empty, must be given as ?token= (or a Bearer
	// header) on every request for the crawl's state (/api/...): a
	// dashboard listening beyond loopback needs one (CheckListen). The
	// page's own files (HTML, script, style: the same in every binary,
	// nothing of the crawl) need none, so that a browser that loads them
	// the way HTML says, without the page's query, gets them.
	Token string
	// Control adds the controls (control.go): pause and resume the crawl,
	// pause or block a host. Only with a Token; without one the dashboard
	// stays read-only whatever Control says.
	Control bool
	// Hosts are the names, besides IP addresses and localhost, that a
	// request's Host header may carry (the name of a proxy in front, say):
	// a page of another name reaching the dashboard is a DNS-rebinding
	// page in the operator's browser, and is refused.
	Hosts []string
	// Every is how often the stream sends the state (default 1 s).
	Every time.Duration
	Log   *slog.Logger
}

// Dashboard serves the dashboard of one crawl.
type Dashboard struct {
	h  http.Handler
	rd *reader
}

// New serves the dashboard of cfg.Crawl from c. Run it as well, for a
// chart with history when a page opens.
func New(c redis.UniversalClient, cfg Config) *Dashboard {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	files, _ := fs.Sub(web, "web")
	rd := &reader{c: c, name: cfg.Crawl}
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(files))
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) {
		st, err := rd.read(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	})
	mux.HandleFunc("GET /api/stream", func(w http.ResponseWriter, r *http.Request) { stream(w, r, rd, cfg) })
	if cfg.Control && cfg.Token != "" {
		controls(mux, c, cfg)
		rd.control = true
	}
	return &Dashboard{h: guard(cfg.Token, cfg.Hosts, mux), rd: rd}
}

func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.h.ServeHTTP(w, r) }

// Run samples the crawl's pages counter every HistoryEvery while no page
// is open (one HGETALL a shard), until ctx ends: the chart of a page
// opened later starts HistoryKept back. A crawl not seeded yet is tried
// again at the next sample.
func (d *Dashboard) Run(ctx context.Context) {
	t := time.NewTicker(HistoryEvery)
	defer t.Stop()
	for {
		d.rd.sample(ctx) // a failure shows on the page, when one opens
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// guard refuses a request whose Host is a name the dashboard was not
// given (DNS rebinding: a page of the attacker's name, resolved to this
// address, read by the operator's browser), and requests for the crawl's
// state without the token (when there is one); it asks browsers to load
// nothing from elsewhere and never to show the page in a frame (a page
// opened with its token, framed, could have its controls clicked).
func guard(token string, hosts []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !AllowedHost(r.Host, hosts) {
			http.Error(w, fmt.Sprintf("this dashboard does not answer for the name %q: open it by its address, or give its name with --allow-host", r.Host),
				http.StatusMisdirectedRequest)
			return
		}
		w.Header().Set("X-Frame-Options", "DENY")
		if token != "" && strings.HasPrefix(r.URL.Path, "/api/") {
			got := r.URL.Query().Get("token")
			if h := r.Header.Get("Authorization"); len(h) > 7 && h[:7] == "Bearer " {
				got = h[7:]
			}
			if !sameSecret(got, token) {
				http.Error(w, "this dashboard needs its token: open the page as /?token=SECRET, with the dashboard's --token (or the worker's --dashboard-token)", http.StatusUnauthorized)
				return
			}
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// AllowedHost reports whether a request's Host header (host or host:port)
// names the dashboard: an IP address (a rebinding page's Host is its own
// name, never an address), localhost or a name under .localhost, or one
// of names.
func AllowedHost(hostport string, names []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return host != ""
	}
	for _, n := range names {
		if strings.EqualFold(strings.TrimSuffix(n, "."), host) {
			return true
		}
	}
	return false
}

// sameSecret compares a secret given with the token, in constant time.
func sameSecret(got, token string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// stream sends the state every cfg.Every as a server-sent event, until the
// client goes.
func stream(w http.ResponseWriter, r *http.Request, rd *reader, cfg Config) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	first := true
	for {
		st, err := rd.read(r.Context())
		var b []byte
		if err != nil {
			b, _ = json.Marshal(map[string]string{"error": err.Error()})
		} else {
			if first {
				st.History, first = rd.points(), false
			}
			b, _ = json.Marshal(st)
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

// CheckListen refuses a listen address beyond loopback without a token.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: want host:port (e.g. 127.0.0.1:8090)", addr)
	}
	ip := net.ParseIP(host)
	if host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	if token == "" {
		return fmt.Errorf("--listen %s reaches beyond this machine: give --token SECRET too (the page's URL then carries it), or listen on 127.0.0.1", addr)
	}
	return nil
}

// Read gathers one state of crawl name, every panel read.
func Read(ctx context.Context, c redis.UniversalClient, name string) (*State, error) {
	rd := &reader{c: c, name: name}
	return rd.read(ctx)
}
