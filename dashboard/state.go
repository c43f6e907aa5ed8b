package dashboard

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/control"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/perhost"
	"github.com/redcrawl/crawler/frontier/records"
	"github.com/redcrawl/crawler/frontier/registry"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// State is what the page shows, read from Redis at one moment.
type State struct {
	Crawl string    `json:"crawl"`
	At    time.Time `json:"at"`
	Done  bool      `json:"done"`
	// Control: the dashboard serves its controls (Config.Control), so the
	// page shows their buttons.
	Control bool `json:"control,omitempty"`
	// Hold is the crawl's pause ('crawler pause'), absent when it is not
	// paused.
	Hold           *control.Hold    `json:"hold,omitempty"`
	Counters       map[string]int64 `json:"counters"`
	PagesPerSecond float64          `json:"pages_per_second"` // over the last 10 s
	// History is pages/s over the last minutes ([unix ms, pages/s], oldest
	// first), as this server saw the counters: sent in a stream's first
	// state, so that a page opened late starts with its chart.
	History     [][2]float64         `json:"history,omitempty"`
	Frontier    frontier.Sizes       `json:"frontier"`
	Shards      []ShardView          `json:"shards"`
	TopHosts    []perhost.Queue      `json:"top_hosts"`
	HostsQueued int64                `json:"hosts_queued"`
	Paused      []perhost.PausedHost `json:"paused_hosts"`
	HostRules   []perhost.Rule       `json:"host_rules"` // hosts with a rate of their own (crawler host)
	Workers     []registry.Worker    `json:"workers"`
	Leader      *leader.Info         `json:"leader,omitempty"`
	Epoch       int64                `json:"epoch"` // the newest minted
	Bloom       BloomView            `json:"bloom"`
	Revisits    status.RevisitStatus `json:"revisits"`
	Events      []events.Event       `json:"events"`
	// Timeline is the scheduler's: its lock's handovers and the sweeps its
	// fence refused, newest first, of the newest TimelineEvents events.
	Timeline []events.Event `json:"timeline"`
	Rate     any            `json:"rate"` // requests a second a host; null: no limit
	Burst    int            `json:"burst"`
	// Render is what rendering does (seed --render): the render lane,
	// what the samples taught, the render workers; absent for a crawl
	// that renders nothing.
	Render *status.RenderStatus `json:"render,omitempty"`
	// Addresses are the busiest server addresses and their hosts, with
	// politeness per address (seed --politeness ip); absent otherwise.
	Addresses []perhost.AddressLoad `json:"addresses,omitempty"`
	// Groups are the export groups reading the results (export --group),
	// and LagFill the share of a shard's cap behind (GroupState.Fill) at
	// which one is said to lag.
	Groups  []records.GroupState `json:"export_groups,omitempty"`
	LagFill float64              `json:"lag_fill"`
}

// ShardView is one shard's share of the crawl.
type ShardView struct {
	Tag      string `json:"tag"` // its keys' hash tag: {NAME} or {NAME/i}
	Queued   int64  `json:"queued"`
	InFlight int64  `json:"in_flight"`
	Pages    int64  `json:"pages"`
	Hosts    int64  `json:"hosts"` // with URLs queued (read every SlowEvery)
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

// SlowEvery is how often the panels that cost Redis most, and change
// least, are read again: the Bloom filter (a BITCOUNT over every
// segment), the scan for the longest host queues, and the crawl's
// settings. Each state reads the rest (BenchmarkRefresh measures both).
const SlowEvery = 10 * time.Second

// TimelineEvents is how many of the newest events the scheduler's
// timeline is drawn from, and TimelineLen how many it shows.
const (
	TimelineEvents = 100
	TimelineLen    = 10
)

// TopHosts is how many hosts the page lists, the longest queues first.
const TopHosts = 10

// view is what every panel reads through: the crawl's settings and its
// frontier, opened as they lay it out.
type view struct {
	c    redis.UniversalClient
	name string
	s    settings.Settings
	fr   *frontier.Frontier
	top  []string // the hosts the page lists (the slow scan's)
}

// A panel reads its part of the state. Slow ones are read every
// SlowEvery, the others for every state.
type panel struct {
	name string
	slow bool
	read func(ctx context.Context, v *view, st *State) error
}

// panels are the page's, in its order. Each names what it reads in
// docs/dashboard.md's table of costs.
var panels = []panel{
	{name: "progress", read: func(ctx context.Context, v *view, st *State) error {
		each, err := v.fr.ShardStats(ctx)
		if err != nil {
			return err
		}
		st.Counters = map[string]int64{}
		if len(st.Shards) != len(each) {
			st.Shards = make([]ShardView, len(each))
		}
		for i, m := range each {
			for k, n := range m {
				st.Counters[k] += n
			}
			st.Shards[i].Pages = m["pages"]
		}
		if st.Done, err = v.fr.Done(ctx); err != nil {
			return err
		}
		st.Hold, err = v.fr.Control.Paused(ctx)
		return err
	}},
	{name: "frontier", read: func(ctx context.Context, v *view, st *State) error {
		each, err := v.fr.ShardSizes(ctx)
		if err != nil {
			return err
		}
		if len(st.Shards) != len(each) {
			st.Shards = make([]ShardView, len(each))
		}
		st.Frontier = frontier.Sizes{}
		for i, sz := range each {
			st.Frontier.Queued += sz.Queued
			st.Frontier.InFlight += sz.InFlight
			st.Frontier.Deferred += sz.Deferred
			st.Frontier.Failed += sz.Failed
			st.Frontier.AtCap += sz.AtCap
			st.Shards[i].Tag, st.Shards[i].Queued, st.Shards[i].InFlight = hashTag(v.name, i), sz.Queued, sz.InFlight
		}
		return nil
	}},
	{name: "scheduler", read: func(ctx context.Context, v *view, st *State) error {
		info, last, err := leader.Current(ctx, v.c, v.fr.LeaderKey())
		st.Leader, st.Epoch = nil, last
		switch {
		case err == nil:
			st.Leader = &info
		case !errors.Is(err, leader.ErrNoLeader):
			return err
		}
		return nil
	}},
	{name: "workers", read: func(ctx context.Context, v *view, st *State) (err error) {
		st.Workers, err = v.fr.Registry.WorkersNow(ctx)
		return err
	}},
	{name: "host queues (scan)", slow: true, read: func(ctx context.Context, v *view, st *State) error {
		top, hosts, err := v.fr.Hosts.QueueNames(ctx, TopHosts)
		if err != nil {
			return err
		}
		v.top, st.HostsQueued = top, 0
		for i, n := range hosts {
			st.HostsQueued += n
			if i < len(st.Shards) {
				st.Shards[i].Hosts = n
			}
		}
		return nil
	}},
	{name: "hosts and token buckets", read: func(ctx context.Context, v *view, st *State) (err error) {
		if st.TopHosts, err = v.fr.Hosts.Now(ctx, v.top); err != nil {
			return err
		}
		if st.Paused, err = v.fr.Hosts.Paused(ctx); err != nil {
			return err
		}
		st.HostRules, err = v.fr.Hosts.Rules(ctx)
		return err
	}},
	{name: "export groups", slow: true, read: func(ctx context.Context, v *view, st *State) (err error) {
		st.LagFill = crawl.LagWarnAt
		st.Groups, err = v.fr.Records.Groups(ctx)
		return err
	}},
	{name: "server addresses", slow: true, read: func(ctx context.Context, v *view, st *State) (err error) {
		st.Addresses = nil
		if v.s.Politeness != settings.PolitenessIP {
			return nil
		}
		st.Addresses, err = v.fr.Hosts.BusiestAddresses(ctx, 10)
		return err
	}},
	{name: "rendering", slow: true, read: func(ctx context.Context, v *view, st *State) (err error) {
		if !v.s.Renders() {
			st.Render = nil
			return nil
		}
		var alive []string
		for _, w := range st.Workers {
			if w.Alive {
				alive = append(alive, w.ID)
			}
		}
		st.Render, err = status.ReadRender(ctx, v.fr, v.s, alive)
		return err
	}},
	{name: "bloom filter", slow: true, read: func(ctx context.Context, v *view, st *State) error {
		b, err := v.fr.BloomStats(ctx)
		st.Bloom = BloomView{Count: b.Count, Capacity: b.Capacity, Layers: len(b.Layers), Bits: b.Bits, BitsSet: b.BitsSet,
			FPRate: b.FPRate, EstimatedFPRate: b.EstimatedFPRate}
		return err
	}},
	{name: "revisits", read: func(ctx context.Context, v *view, st *State) (err error) {
		st.Revisits, err = status.ReadRevisits(ctx, v.fr, v.s)
		return err
	}},
	{name: "event log", read: func(ctx context.Context, v *view, st *State) error {
		all, err := v.fr.Events.Read(ctx, TimelineEvents)
		if err != nil {
			return err
		}
		st.Events, st.Timeline = all[:min(len(all), status.StatusEvents)], nil
		for _, e := range all {
			switch e.Kind {
			case events.Lead, events.Resign, events.Lost, events.Fenced:
				if len(st.Timeline) < TimelineLen {
					st.Timeline = append(st.Timeline, e)
				}
			}
		}
		return nil
	}},
}

// open reads the crawl's settings and opens its frontier (the "settings"
// row of the costs: read every SlowEvery).
func open(ctx context.Context, c redis.UniversalClient, name string) (*view, error) {
	s, err := settings.Load(ctx, c, name)
	if err != nil {
		return nil, err
	}
	fr, err := crawl.OpenFrontier(ctx, c, name, s)
	if err != nil {
		return nil, err
	}
	return &view{c: c, name: name, s: s, fr: fr}, nil
}

// reader reads the states of one crawl for all of a server's pages: a
// state at most every second whoever asks (two viewers cost Redis what one
// does), the slow panels every SlowEvery, and the history of the pages
// counter for the chart.
type reader struct {
	c       redis.UniversalClient
	name    string
	control bool // the page may show its controls (Config.Control)

	mu     sync.Mutex
	v      *view
	last   State // the newest state; its slow panels' parts are reused
	lastAt time.Time
	slowAt time.Time // when the slow panels were read
	hist   history
}

// fresh is how old a state may be and still be sent again.
const fresh = 900 * time.Millisecond

func (rd *reader) read(ctx context.Context) (*State, error) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	now := time.Now()
	if rd.v != nil && now.Sub(rd.lastAt) < fresh {
		st := rd.last
		return &st, nil
	}
	slow := rd.v == nil || now.Sub(rd.slowAt) >= SlowEvery
	if slow {
		v, err := open(ctx, rd.c, rd.name)
		if err != nil {
			return nil, err
		}
		if rd.v != nil {
			v.top = rd.v.top
		}
		rd.v = v
	}
	st := rd.last // the slow panels' parts stay until read again
	st.Shards = append([]ShardView(nil), rd.last.Shards...)
	st.Crawl, st.At, st.History, st.Control = rd.name, now.UTC(), nil, rd.control
	st.Rate, st.Burst = rateOf(rd.v.s), rd.v.s.Burst
	for _, p := range panels {
		if p.slow && !slow {
			continue
		}
		if err := p.read(ctx, rd.v, &st); err != nil {
			return nil, err
		}
	}
	if slow {
		rd.slowAt = now
	}
	rd.hist.add(now, st.Counters["pages"])
	st.PagesPerSecond = rd.hist.rate()
	if math.IsNaN(st.PagesPerSecond) { // no count 2 s old yet: the records of the last 10 s say
		n, err := rd.v.fr.Records.Recent(ctx, 10*time.Second)
		if err != nil {
			return nil, err
		}
		st.PagesPerSecond = float64(n) / 10
	}
	rd.last, rd.lastAt = st, now
	return &st, nil
}

// sample adds the pages counter to the history when no state was read
// lately (Run calls it while nobody watches).
func (rd *reader) sample(ctx context.Context) error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.v == nil {
		v, err := open(ctx, rd.c, rd.name)
		if err != nil {
			return err
		}
		rd.v = v
	}
	if time.Since(rd.lastAt) < HistoryEvery {
		return nil
	}
	n, err := rd.v.fr.Stats(ctx)
	if err != nil {
		return err
	}
	rd.hist.add(time.Now(), n["pages"])
	return nil
}

// hashTag is shard i's hash tag: {NAME} or {NAME/i}.
func hashTag(name string, i int) string {
	return strings.TrimSuffix(strings.TrimPrefix(keyspace.Tag(name, i), "crawl:"), ":")
}

// rateOf is the crawl's rate a host as the page shows it: nil for no limit.
func rateOf(s settings.Settings) any {
	if s.Rate <= 0 || math.IsInf(s.Rate, 1) {
		return nil
	}
	return s.Rate
}

// points is the chart's history so far.
func (rd *reader) points() [][2]float64 {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.hist.points()
}
