package frontier

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
)

// What an exchange's scripts reply, read into what the Exchange did.

// endReply is finish.lua's reply object: the leases ended.
type endReply struct {
	Held string `json:"held"` // a digit a finished lease: 1 held, 2 recorded by this exchange sent before, 0 lost
}

// exchangeReply is handout.lua's reply object: what was granted.
type exchangeReply struct {
	Pages int64 `json:"pages"` // pages fetched (with a budget)
	Done  int64 `json:"done"`  // 1: the crawl is over
	// Wait: ms until some host is due within the window, when fewer URLs
	// than wanted were granted (-1: nothing queued, or the crawl paused).
	Wait int64 `json:"wait"`
	// Paused: 1 while the crawl is paused (hold.lua): nothing popped.
	Paused int64 `json:"paused"`
	// Settings: the settings version in force in the shard.
	Settings int64 `json:"settings"`
	// Rates: the popped hosts with a rate of their own (hostrules), which
	// their pop kept to (0: no limit).
	Rates map[string]float64 `json:"rates"`
	// Delays: the popped hosts that have a delay of their own (ms), which
	// their pop kept to.
	Delays map[string]int64 `json:"delays"`
	// Fresh: the popped hosts without a delay whose bucket was full (held
	// no grant) before this pop, each with the tat the pop left it (ms,
	// Redis's clock, as text: hostdelay.lua compares it with the score).
	Fresh map[string]string `json:"fresh"`
	// Resolve: due hosts not popped, their address not known (Policy.
	// PerAddress): the worker resolves them (SetAddresses).
	Resolve []string `json:"resolve"`
	// Addrs: the popped hosts whose tokens came from their address's
	// bucket too, with the address (its refund goes back there).
	Addrs map[string]string `json:"addrs"`
	// NowUs: Redis's time of the grant, µs (with URLs granted), from
	// which the lists below count.
	NowUs string `json:"now_us"`
	// Hosts and Counts: the hosts granted URLs, in order (a host may come
	// twice), and how many each; take.lua takes each host's URLs in that
	// order.
	Hosts  []string `json:"hosts"`
	Counts []int    `json:"counts"`
	// Slot, From, Until: per URL granted, in the order of Hosts, µs from
	// NowUs to its token's slot and to when its token's window opens and
	// closes (Until -1: no token, the host has no limit). None: no URL had
	// a token.
	Slot  []int64 `json:"slot"`
	From  []int64 `json:"from"`
	Until []int64 `json:"until"`
}

// againReply is back.lua's reply object: the late leases kept.
type againReply struct {
	// Again: per late lease given back that its host gave a new token,
	// {its place in back (1-based), slot, from, until}, µs from NowUs as
	// exchangeReply's lists.
	Again [][4]int64 `json:"again"`
	NowUs string     `json:"now_us"`
}

// windows sets the popped and kept leases' windows, by a call sent at
// sent whose reply arrived at got: a popped lease is held until sent +
// lease at least; a kept one as long as before.
func (x Exchanged) windows(sent, got time.Time, lease time.Duration) {
	for _, l := range x.Popped {
		l.granted(sent, lease)
		l.window(got)
	}
	for _, l := range x.Again {
		l.window(got)
	}
}

// readReply reads an exchange's replies after the links' flags:
// finish.lua's object (endReply; none without pages), back.lua's (againReply; none when no
// late lease was kept), handout.lua's (exchangeReply), and take.lua's URLs (host,
// item-json …) under the new lease ids in order, each with the next token
// its host was granted. back is the leases back.lua gave back, the late
// ones asking their hosts again.
func (f *shard) readReply(flags []bool, ended, again, granted, taken []any, offset []int, ids []string, back []*Lease) (Exchanged, []Finished, error) {
	nd := len(offset) - 1
	var e endReply
	if nd > 0 && len(ended) == 0 {
		return Exchanged{}, nil, fmt.Errorf("frontier: finish: malformed reply %v", ended)
	}
	if nd > 0 {
		if raw, ok := ended[0].(string); !ok || keyspace.DecodeReply([]byte(raw), &e) != nil || len(e.Held) != nd {
			return Exchanged{}, nil, fmt.Errorf("frontier: finish: reply %v for %d pages", ended, nd)
		}
	}
	var r exchangeReply
	if len(granted) == 0 {
		return Exchanged{}, nil, fmt.Errorf("frontier: handout: malformed reply %v", granted)
	}
	if raw, ok := granted[0].(string); !ok || keyspace.DecodeReply([]byte(raw), &r) != nil || len(r.Hosts) != len(r.Counts) {
		return Exchanged{}, nil, fmt.Errorf("frontier: handout: malformed reply %v", granted)
	}
	m := len(taken) / 2
	if len(taken)%2 != 0 || m > len(ids) {
		return Exchanged{}, nil, fmt.Errorf("frontier: take: reply %v for %d URLs wanted", taken, len(ids))
	}
	x := Exchanged{Queued: make([][]bool, nd), Held: make([]bool, nd), recordedNow: make([]bool, nd)}
	for d := 0; d < nd; d++ {
		x.Queued[d] = flags[offset[d]:offset[d+1]]
		x.Held[d] = e.Held[d] == '1' || e.Held[d] == '2' // 2: recorded by this exchange sent before
		x.recordedNow[d] = e.Held[d] == '1'
	}
	x.Info = PopInfo{Pages: r.Pages, CrawlOver: r.Done == 1, NextDue: time.Duration(r.Wait) * time.Millisecond, Paused: r.Paused == 1,
		Settings: r.Settings, Resolve: r.Resolve}
	if len(again) > 0 { // none: no late lease kept
		var ar againReply
		if raw, ok := again[0].(string); !ok || keyspace.DecodeReply([]byte(raw), &ar) != nil {
			return Exchanged{}, nil, fmt.Errorf("frontier: back: malformed reply %v", again)
		}
		for _, a := range ar.Again {
			if a[0] < 1 || a[0] > int64(len(back)) || !back[a[0]-1].Late {
				return Exchanged{}, nil, fmt.Errorf("frontier: back: reply %v keeps lease %d of %d given back, not a late one", again, a[0], len(back))
			}
			l := back[a[0]-1]
			l.retoken(ar.NowUs, a[1], a[2], a[3])
			x.Again = append(x.Again, l)
		}
	}
	tokens := r.tokens()
	var bad []Finished
	for i := 0; i < m; i++ {
		host, _ := taken[2*i].(string)
		raw, _ := taken[2*i+1].(string)
		t := tokens[host]
		if len(t) == 0 {
			return Exchanged{}, nil, fmt.Errorf("frontier: take: reply %v takes more of %q than the handout granted", taken, host)
		}
		tokens[host] = t[1:]
		l := &Lease{ID: ids[i], raw: raw, Host: host, HostDelay: time.Duration(r.Delays[host]) * time.Millisecond, now: f.o.now}
		l.freshAt, l.addr = r.Fresh[host], r.Addrs[host]
		l.OwnRate, l.HasOwnRate = r.Rates[host]
		if k := t[0]; k < len(r.Slot) && k < len(r.From) && k < len(r.Until) {
			l.token(r.NowUs, r.Slot[k], r.From[k], r.Until[k])
		} else {
			l.closes = -1
		}
		if err := json.Unmarshal([]byte(raw), &l.Item); err != nil {
			bad = append(bad, Finished{Lease: l, Outcome: Outcome{Stat: OutcomeFailed, Failed: fmt.Sprintf("undecodable queue item: %v", err)}})
			continue
		}
		x.Popped = append(x.Popped, l)
	}
	return x, bad, nil
}

// tokens is, per host granted, the places of its URLs' tokens in Slot,
// From and Until, in the order take.lua takes its URLs.
func (r *exchangeReply) tokens() map[string][]int {
	t := map[string][]int{}
	k := 0
	for i, host := range r.Hosts {
		for range r.Counts[i] {
			t[host] = append(t[host], k)
			k++
		}
	}
	return t
}
