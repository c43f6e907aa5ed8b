package frontier

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
)

// hostIn is a host name of shard sh of n.
func hostIn(sh, n int) string {
	for i := 0; ; i++ {
		if h := fmt.Sprintf("h%d.test", i); keyspace.ShardOf(h, n) == sh {
			return h
		}
	}
}

// leaseOf is a lease of a URL of host h.
func leaseOf(id, h string) *Lease {
	return &Lease{ID: id, Host: h, Item: Item{URL: "http://" + h + "/" + id}}
}

// answer is what a shard's call did: the URLs it popped, when it has
// more (NextDue), or its error.
type answer struct {
	popped  []*Lease
	nextDue time.Duration
	err     error
}

// reply fills in each part's call as answers say (a part not called: no
// answer) and its pages as held.
func reply(parts []*part, answers map[int]answer) {
	for sh, p := range parts {
		a, ok := answers[sh]
		if !ok || !p.used() {
			continue
		}
		if p.err = a.err; a.err != nil {
			continue
		}
		p.x = Exchanged{Popped: a.popped, Info: PopInfo{NextDue: a.nextDue}, Held: make([]bool, len(p.done)),
			Queued: make([][]bool, len(p.done)), recordedNow: make([]bool, len(p.done))}
		for j := range p.done {
			p.x.Held[j], p.x.recordedNow[j] = true, true
		}
	}
}

func pops(parts []*part) []int {
	out := make([]int, len(parts))
	for sh, p := range parts {
		out[sh] = p.pop
	}
	return out
}

// The cross-shard exchange's state, stepped with no Redis: each case
// plans calls, answers them as a pipeline might, and settles, and checks
// what the state keeps for the next exchange.
func TestCrossingAcrossCalls(t *testing.T) {
	const n = 3
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	a, b, c := hostIn(0, n), hostIn(1, n), hostIn(2, n)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, x *crossing)
	}{
		{"URLs a failed exchange popped are handed out first, those not wanted go back", func(t *testing.T, x *crossing) {
			la := leaseOf("1", a)
			parts, _ := x.plan([]Finished{{Lease: la}}, nil, popShare+1, t0) // shards 0 (called anyway) and 1
			reply(parts, map[int]answer{0: {err: errors.New("i/o timeout")}, 1: {popped: []*Lease{leaseOf("p1", b), leaseOf("p2", b)}}})
			if _, err := x.settle(parts, []Finished{{Lease: la}}, nil, popShare+1, t0); err == nil || len(x.spare) != 2 {
				t.Fatalf("settle: %v, spare %d; want shard 0's error, b's 2 URLs kept", err, len(x.spare))
			}
			parts, handed := x.plan(nil, nil, 1, t0)
			if len(handed) != 1 || handed[0].ID != "p1" || len(parts[1].back) != 1 || parts[1].back[0].ID != "p2" || x.spare != nil {
				t.Fatalf("handed %v, back to shard 1 %v, spare %v; want p1 handed, p2 given back", handed, parts[1].back, x.spare)
			}
			if got := pops(parts); got[0]+got[1]+got[2] != 0 {
				t.Fatalf("pops %v; want none: the one URL wanted was handed", got)
			}
		}},
		{"a shard that popped nothing is not asked until its next due, or until woken", func(t *testing.T, x *crossing) {
			parts, _ := x.plan(nil, nil, 3*popShare, t0)
			if got := pops(parts); got[0] == 0 || got[1] == 0 || got[2] == 0 {
				t.Fatalf("pops %v; want every shard asked for %d", got, 3*popShare)
			}
			reply(parts, map[int]answer{0: {nextDue: 2 * time.Second}, 1: {popped: []*Lease{leaseOf("p", b)}, nextDue: -1}, 2: {nextDue: -1}})
			out, err := x.settle(parts, nil, nil, 3*popShare, t0)
			if err != nil || len(out.Popped) != 1 || out.Info.NextDue != 2*time.Second {
				t.Fatalf("settle: %v popped %d next due %v; want 1 URL, next due 2s", err, len(out.Popped), out.Info.NextDue)
			}
			if !x.idle[0].Equal(t0.Add(2*time.Second)) || !x.idle[2].Equal(t0.Add(idleFor)) || !x.idle[1].IsZero() {
				t.Fatalf("idle %v; want shard 0 for 2s, shard 2 for idleFor, shard 1 not", x.idle)
			}
			parts, _ = x.plan(nil, nil, 3*popShare, t0.Add(time.Second))
			if got := pops(parts); got[0] != 0 || got[2] != 0 || got[1] != 3*popShare {
				t.Fatalf("pops %v; want shard 1 alone asked", got)
			}
			reply(parts, map[int]answer{1: {nextDue: -1}})
			out, _ = x.settle(parts, nil, nil, 3*popShare, t0.Add(time.Second))
			if out.Info.NextDue != time.Second {
				t.Fatalf("next due %v; want 1s, when shard 0 is due", out.Info.NextDue)
			}
			x.woken(2)
			if parts, _ = x.plan(nil, nil, popShare, t0.Add(time.Second)); pops(parts)[2] == 0 {
				t.Fatalf("pops %v; want the woken shard 2 asked", pops(parts))
			}
		}},
		{"the turn moves on: a small want asks another shard each time", func(t *testing.T, x *crossing) {
			seen := map[int]bool{}
			for i := 0; i < n; i++ {
				parts, _ := x.plan(nil, nil, 1, t0)
				for sh, k := range pops(parts) {
					if k > 0 {
						seen[sh] = true
					}
				}
				reply(parts, map[int]answer{0: {popped: []*Lease{leaseOf("x", a)}}, 1: {popped: []*Lease{leaseOf("y", b)}}, 2: {popped: []*Lease{leaseOf("z", c)}}})
				x.settle(parts, nil, nil, 1, t0)
			}
			if len(seen) != n {
				t.Fatalf("shards asked %v over %d calls; want each", seen, n)
			}
		}},
		{"the acks of a failed call wait for the next, at most maxAcks", func(t *testing.T, x *crossing) {
			for i := 0; i < maxAcks+10; i++ {
				x.acks[1] = append(x.acks[1], outboxAck{ID: fmt.Sprint(i)})
			}
			parts, _ := x.plan(nil, nil, 0, t0)
			if len(parts[1].acks) != maxAcks+10 || x.acks[1] != nil {
				t.Fatalf("acks in the call %d, kept %d; want all sent, none kept", len(parts[1].acks), len(x.acks[1]))
			}
			reply(parts, map[int]answer{1: {err: errors.New("connection refused")}})
			out, err := x.settle(parts, nil, nil, 0, t0)
			if err != nil || out.Unasked == nil {
				t.Fatalf("settle: %v, unasked %v; want the failure of a call with acks only reported, not returned", err, out.Unasked)
			}
			if len(x.acks[1]) != maxAcks || x.acks[1][maxAcks-1].ID != fmt.Sprint(maxAcks+9) {
				t.Fatalf("kept %d acks; want the newest %d", len(x.acks[1]), maxAcks)
			}
		}},
		{"an outbox entry is acked only when every offer it depends on went through", func(t *testing.T, x *crossing) {
			link := Item{URL: "http://" + b + "/away"}
			done := []Finished{{Lease: leaseOf("1", a), Outcome: Outcome{Children: []Item{link}}}}
			for _, failOffer := range []bool{true, false} {
				parts, _ := x.plan(done, nil, 0, t0)
				parts[0].outboxID = "ob"
				answers := map[int]answer{0: {}, 1: {}}
				if failOffer {
					answers[1] = answer{err: errors.New("connection refused")}
				}
				reply(parts, answers)
				if !failOffer {
					parts[1].offered = []bool{true}
				}
				if _, err := x.settle(parts, done, nil, 0, t0); err != nil {
					t.Fatal(err)
				}
				acked := len(x.acks[0]) == 1 && x.acks[0][0].ID == "ob"
				if acked == failOffer {
					t.Fatalf("offer failed %v: acks %v", failOffer, x.acks[0])
				}
				if acked && x.acks[0][0].Extra[0] != 1 {
					t.Fatalf("ack %v; want the one new away link counted", x.acks[0][0])
				}
				x.acks[0] = nil
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newCrossing(n)) })
	}
}
