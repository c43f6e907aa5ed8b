package frontier

import (
	"context"
	"fmt"
	"sort"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// The lanes a host's URLs are popped in (queue.lua's lanes): a host of the
// render lane is popped only by workers with a browser (Options.Lane), and
// its tokens are the same whichever lane takes them.
const (
	LanePlain  = keyspace.LanePlain
	LaneRender = keyspace.LaneRender
)

var (
	laneScript = lua.Script("lane")
)

// SetLane puts host in lane (LanePlain or LaneRender) from its shard's
// next pop on; a host queued moves with its tat. It reports whether the
// host moved between ready sets (false: it had nothing queued, or was in
// that lane already).
func (f Rendering) SetLane(ctx context.Context, host, lane string) (bool, error) {
	if err := checkLane(lane); err != nil {
		return false, err
	}
	sh := f.fs[keyspace.ShardOf(host, len(f.fs))]
	n, err := sh.lane(ctx, host, lane)
	return n > 0, err
}

// SetDefaultLane sets the lane of every host that has none of its own
// (SetLane), in every shard: hosts queued move. One step a shard over all
// its queued hosts: meant for a crawl's seeding (seed --render always).
func (f Rendering) SetDefaultLane(ctx context.Context, lane string) error {
	if err := checkLane(lane); err != nil {
		return err
	}
	for _, sh := range f.fs {
		if _, err := sh.lane(ctx, "*", lane); err != nil {
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

func (sh *shard) lane(ctx context.Context, host, lane string) (int64, error) {
	n, err := laneScript.Run(ctx, sh.c, []string{sh.keys.Config, sh.keys.Queues, sh.keys.Ready}, sh.o.Instance, host, lane).Int64()
	switch {
	case keyspace.IsGone(err):
		return 0, ErrGone
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
func (f Rendering) Lanes(ctx context.Context) (Lanes, error) {
	out := Lanes{Default: keyspace.LanePlain, Hosts: map[string]string{}, Ready: map[string]int64{}}
	type reads struct {
		all           *redis.MapStringStringCmd
		plain, render *redis.IntCmd
	}
	rs := make([]reads, len(f.fs))
	_, err := f.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sh := range f.fs {
			rs[i] = reads{p.HGetAll(ctx, sh.keys.Lanes()), p.ZCard(ctx, sh.keys.Ready), p.ZCard(ctx, sh.keys.ReadyIn(keyspace.LaneRender))}
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
