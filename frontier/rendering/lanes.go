package rendering

import (
	"context"
	"fmt"
	"sort"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

var (
	laneScript = lua.Script("lane")
)

// SetLane puts host in lane (keyspace.LanePlain or keyspace.LaneRender) from its shard's
// next pop on; a host queued moves with its tat. It reports whether the
// host moved between ready sets (false: it had nothing queued, or was in
// that lane already).
func (f Shared) SetLane(ctx context.Context, host, lane string) (bool, error) {
	if err := checkLane(lane); err != nil {
		return false, err
	}
	_, k := f.For(host)
	n, err := f.lane(ctx, k, host, lane)
	return n > 0, err
}

// SetDefaultLane sets the lane of every host that has none of its own
// (SetLane), in every shard: hosts queued move. One step a shard over all
// its queued hosts: meant for a crawl's seeding (seed --render always).
func (f Shared) SetDefaultLane(ctx context.Context, lane string) error {
	if err := checkLane(lane); err != nil {
		return err
	}
	for _, k := range f.Keys {
		if _, err := f.lane(ctx, k, "*", lane); err != nil {
			return err
		}
	}
	return nil
}

func checkLane(lane string) error {
	if lane != keyspace.LanePlain && lane != keyspace.LaneRender {
		return fmt.Errorf("frontier: no lane %q (%s or %s)", lane, keyspace.LanePlain, keyspace.LaneRender)
	}
	return nil
}

func (f Shared) lane(ctx context.Context, k keyspace.Keys, host, lane string) (int64, error) {
	n, err := laneScript.Run(ctx, f.C, []string{k.Config, k.Queues, k.Ready}, f.Instance, host, lane).Int64()
	switch {
	case keyspace.IsGone(err):
		return 0, keyspace.ErrGone
	case err != nil:
		return 0, fmt.Errorf("frontier: host %s: lane: %w", host, err)
	}
	return n, nil
}

// Lanes is what the shards say of lanes: the hosts given one, the lane of
// the others, and how many hosts wait in each lane's ready set.
type Lanes struct {
	Default string            `json:"default"`         // the lane of a host not in Hosts
	Hosts   map[string]string `json:"hosts,omitempty"` // host -> its own lane
	Ready   map[string]int64  `json:"ready"`           // lane -> hosts with URLs queued in it
}

// Lanes reads the lanes of every shard.
func (f Shared) Lanes(ctx context.Context) (Lanes, error) {
	out := Lanes{Default: keyspace.LanePlain, Hosts: map[string]string{}, Ready: map[string]int64{}}
	type reads struct {
		all           *redis.MapStringStringCmd
		plain, render *redis.IntCmd
	}
	rs := make([]reads, len(f.Keys))
	_, err := f.C.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range f.Keys {
			rs[i] = reads{p.HGetAll(ctx, k.Lanes()), p.ZCard(ctx, k.Ready), p.ZCard(ctx, k.ReadyIn(keyspace.LaneRender))}
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("frontier: lanes: %w", err)
	}
	for _, r := range rs {
		for h, l := range r.all.Val() {
			if h == "*" {
				out.Default = l
			} else {
				out.Hosts[h] = l
			}
		}
		out.Ready[keyspace.LanePlain] += r.plain.Val()
		out.Ready[keyspace.LaneRender] += r.render.Val()
	}
	return out, nil
}

// RenderHosts are the hosts of the render lane by their own lane, by name.
func (l Lanes) RenderHosts() []string {
	var out []string
	for h, lane := range l.Hosts {
		if lane == keyspace.LaneRender {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}
