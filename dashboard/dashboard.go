// Package dashboard serves a crawl's live dashboard: a read-only web page,
// embedded in the binary (it loads nothing from elsewhere, so it works
// offline), that shows the crawl and its coordination as they happen —
// progress, hosts, workers, the scheduler's lock and epoch, the Bloom
// filter, and the event log of handovers, fenced sweeps and pauses. It
// needs only Redis: any machine that reaches the crawl's Redis can serve
// it, worker or not.
//
// The page polls nothing itself: /api/stream is a server-sent event
// stream of the crawl's state, one a second (/api/state gives one). It
// writes nothing to Redis, and shows nothing secret: no Redis address or
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
	"sync"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

//go:embed web
var web embed.FS

// Config says what to serve.
type Config struct {
	Crawl string // the crawl's name
	// Token, when not empty, must be given as ?token= (or a Bearer
	// header) on every request: a dashboard listening beyond loopback
	// needs one (CheckListen).
	Token string
	// Every is how often the stream sends the state (default 1 s).
	Every time.Duration
	Log   *slog.Logger
}

// Handler serves the dashboard of cfg.Crawl from c.
func Handler(c redis.UniversalClient, cfg Config) http.Handler {
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
	return guard(cfg.Token, mux)
}

// guard refuses requests without the token (when there is one), and asks
// browsers to load nothing from elsewhere.
func guard(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" {
			got := r.URL.Query().Get("token")
			if h := r.Header.Get("Authorization"); len(h) > 7 && h[:7] == "Bearer " {
				got = h[7:]
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				http.Error(w, "this dashboard needs its token: open the URL 'crawler dashboard' printed", http.StatusUnauthorized)
				return
			}
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
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
	for {
		st, err := rd.read(r.Context())
		var b []byte
		if err != nil {
			b, _ = json.Marshal(map[string]string{"error": err.Error()})
		} else {
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

// State is what the page shows, read from Redis at one moment.
type State struct {
	Crawl          string                   `json:"crawl"`
	At             time.Time                `json:"at"`
	Done           bool                     `json:"done"`
	Counters       map[string]int64         `json:"counters"`
	PagesPerSecond float64                  `json:"pages_per_second"`
	Frontier       frontier.Sizes           `json:"frontier"`
	TopHosts       []frontier.HostQueue     `json:"top_hosts"`
	HostsQueued    int64                    `json:"hosts_queued"`
	Paused         map[string]time.Duration `json:"paused_hosts_ns,omitempty"`
	Workers        []string                 `json:"workers"`
	Leader         *leader.Info             `json:"leader,omitempty"`
	Epoch          int64                    `json:"epoch"`
	LockTTL        time.Duration            `json:"lock_ttl_ns"`
	Bloom          BloomView                `json:"bloom"`
	Revisits       crawl.RevisitStatus      `json:"revisits"`
	Events         []frontier.Event         `json:"events"`
	Shards         int                      `json:"shards"`
	Rate           any                      `json:"rate"` // requests a second a host; null: no limit
	Burst          int                      `json:"burst"`
}

// BloomView is the Bloom filter as the page shows it.
type BloomView struct {
	Count           int64   `json:"count"`
	Capacity        int64   `json:"capacity"`
	Layers          int     `json:"layers"`
	Bits            int64   `json:"bits"`
	BitsSet         int64   `json:"bits_set"`
	FPRate          float64 `json:"fp_rate"` // the bound it was sized for
	EstimatedFPRate float64 `json:"estimated_fp_rate"`
}

// BloomEvery is how often the page's Bloom filter panel is read again: a
// BITCOUNT over every segment is most of a refresh's Redis CPU
// (BenchmarkRefresh), and the fill changes slowly.
const BloomEvery = 10 * time.Second

// reader reads the states of one crawl for all of a server's pages, the
// Bloom filter at most every BloomEvery.
type reader struct {
	c    redis.UniversalClient
	name string

	mu        sync.Mutex
	bloom     BloomView
	bloomRead time.Time
}

func (rd *reader) read(ctx context.Context) (*State, error) {
	rd.mu.Lock()
	fresh := time.Since(rd.bloomRead) < BloomEvery
	bloom := rd.bloom
	rd.mu.Unlock()
	st, err := read(ctx, rd.c, rd.name, fresh)
	if err != nil {
		return nil, err
	}
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if fresh {
		st.Bloom = bloom
	} else {
		rd.bloom, rd.bloomRead = st.Bloom, time.Now()
	}
	return st, nil
}

// Read gathers the state of crawl name (crawl.ReadStatus, less what is
// secret or not the page's).
func Read(ctx context.Context, c redis.UniversalClient, name string) (*State, error) {
	return read(ctx, c, name, false)
}

func read(ctx context.Context, c redis.UniversalClient, name string, noBloom bool) (*State, error) {
	st, err := crawl.ReadStatusWith(ctx, c, name, crawl.StatusOptions{NoBloom: noBloom})
	if err != nil {
		return nil, err
	}
	out := &State{Crawl: st.Crawl, At: time.Now().UTC(), Done: st.Done, Counters: st.Counters, PagesPerSecond: st.PagesPerSecond,
		Frontier: st.Frontier, TopHosts: st.TopHosts, HostsQueued: st.HostsQueued, Paused: st.Paused, Workers: st.Workers,
		Leader: st.Leader, Epoch: st.Epoch, Revisits: st.Revisits, Events: st.Events, Shards: st.Settings.Shards,
		Rate: st.SettingsJSON["rate"], Burst: st.Settings.Burst}
	if st.Leader != nil {
		out.LockTTL = st.Leader.TTL
	}
	b := st.Bloom
	out.Bloom = BloomView{Count: b.Count, Capacity: b.Capacity, Layers: len(b.Layers), Bits: b.Bits, BitsSet: b.BitsSet,
		FPRate: b.FPRate, EstimatedFPRate: b.EstimatedFPRate}
	return out, nil
}

// ReadWithoutBloom is Read leaving the Bloom filter out, as the stream
// reads most of its states.
func ReadWithoutBloom(ctx context.Context, c redis.UniversalClient, name string) (*State, error) {
	return read(ctx, c, name, true)
}
