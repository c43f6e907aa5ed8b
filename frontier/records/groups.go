package records

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Consumer groups on the results streams: a sink that reads through a
// group (crawler export --follow --group) acknowledges each record once it
// is written; one that dies and restarts is given again what it read but
// had not acknowledged (its pending records, at least once), several
// readers of one group share the records, and the streams are trimmed
// below what every group has acknowledged (TrimAcked) rather than by
// their length alone. The length cap (ResultsKept) stays the memory
// bound: a group that lags past it loses its oldest unread records to
// the cap, and Groups says so.

// Delivery is one record a group's reader was given: its shard and the
// record.
type Delivery struct {
	Shard  int
	Record Stored
}

// JoinGroup creates group on every shard's stream (from its first record)
// where it is not there yet.
func (f Streams) JoinGroup(ctx context.Context, group string) error {
	if group == "" || strings.ContainsAny(group, " \n") {
		return fmt.Errorf("frontier: group %q: want a name without spaces", group)
	}
	for i, sh := range f.shards {
		err := f.c.XGroupCreateMkStream(ctx, sh.Results, group, "0").Err()
		if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
			return f.in(i, fmt.Errorf("frontier: group %s: %w", group, err))
		}
	}
	return nil
}

// ReadGroup gives consumer of group up to n records a shard: its own
// pending ones (delivered to it, not acknowledged: a reader that died
// before it acked) when pending, else records no reader of the group was
// given yet. It waits for none.
func (f Streams) ReadGroup(ctx context.Context, group, consumer string, pending bool, n int64) ([]Delivery, error) {
	id := ">"
	if pending {
		id = "0"
	}
	var out []Delivery
	for i, sh := range f.shards {
		res, err := f.c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: consumer,
			Streams: []string{sh.Results, id}, Count: n, Block: -1}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return out, f.in(i, fmt.Errorf("frontier: reading group %s: %w", group, err))
		}
		for _, s := range res {
			for _, m := range s.Messages {
				if m.Values == nil {
					continue // delivered once, trimmed since: nothing to give
				}
				out = append(out, Delivery{Shard: i, Record: stored(m)})
			}
		}
	}
	return out, nil
}

// ClaimIdle gives consumer up to n records a shard that another reader of
// group was given and has left unacknowledged for minIdle or longer (a
// reader that vanished under another name): they are its pending records
// now, delivered again.
func (f Streams) ClaimIdle(ctx context.Context, group, consumer string, minIdle time.Duration, n int64) ([]Delivery, error) {
	var out []Delivery
	for i, sh := range f.shards {
		msgs, _, err := f.c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: sh.Results, Group: group, Consumer: consumer,
			MinIdle: minIdle, Start: "0", Count: n}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return out, f.in(i, fmt.Errorf("frontier: claiming group %s's idle records: %w", group, err))
		}
		for _, m := range msgs {
			if m.Values != nil {
				out = append(out, Delivery{Shard: i, Record: stored(m)})
			}
		}
	}
	return out, nil
}

// Ack acknowledges records group's reader wrote.
func (f Streams) Ack(ctx context.Context, group string, ds []Delivery) error {
	by := map[int][]string{}
	for _, d := range ds {
		by[d.Shard] = append(by[d.Shard], d.Record.ID)
	}
	for i, ids := range by {
		if err := f.c.XAck(ctx, f.shards[i].Results, group, ids...).Err(); err != nil {
			return f.in(i, fmt.Errorf("frontier: acking group %s: %w", group, err))
		}
	}
	return nil
}

// GroupState is one group over every shard: its readers, the records
// given to them and not acknowledged, and those no reader was given yet;
// Fill is the most it is behind in any shard, as a share of that shard's
// cap (its share of Options.ResultsKept): past 1 the shard's length cap
// drops records the group has not read. Shards fill unevenly (by their
// hosts), so a group behind by less than the whole cap may already be
// near one shard's.
type GroupState struct {
	Name      string  `json:"name"`
	Consumers int64   `json:"consumers"`
	Pending   int64   `json:"pending"`
	Lag       int64   `json:"lag"`
	Fill      float64 `json:"fill"`
}

// Behind is what the group has not acknowledged.
func (g GroupState) Behind() int64 { return g.Pending + g.Lag }

// Groups are the results streams' groups, by name.
func (f Streams) Groups(ctx context.Context) ([]GroupState, error) {
	by := map[string]*GroupState{}
	for i, sh := range f.shards {
		gs, err := f.c.XInfoGroups(ctx, sh.Results).Result()
		if err != nil {
			if strings.Contains(err.Error(), "no such key") || errors.Is(err, redis.Nil) {
				continue
			}
			return nil, f.in(i, fmt.Errorf("frontier: groups: %w", err))
		}
		for _, g := range gs {
			s := by[g.Name]
			if s == nil {
				s = &GroupState{Name: g.Name}
				by[g.Name] = s
			}
			lag := f.lag(ctx, sh.Results, g)
			s.Consumers += g.Consumers
			s.Pending += g.Pending
			s.Lag += lag
			s.Fill = max(s.Fill, float64(g.Pending+lag)/float64(sh.Cap))
		}
	}
	var out []GroupState
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// lag is how many records of stream group g was not given yet: none when
// its last delivered is the stream's last; else what Redis says (XINFO's
// lag), or, where it cannot say, the length less the entries it read.
func (f Streams) lag(ctx context.Context, stream string, g redis.XInfoGroup) int64 {
	last, err := f.c.XRevRangeN(ctx, stream, "+", "-", 1).Result()
	if err != nil || len(last) == 0 || !idLess(g.LastDeliveredID, last[0].ID) {
		return 0
	}
	n, _ := f.c.XLen(ctx, stream).Result()
	if g.Lag >= 0 && g.Lag <= n {
		return g.Lag
	}
	return max(n-g.EntriesRead, 0)
}

// TrimAcked trims each shard's stream below what every group of it has
// acknowledged, and returns how many records went: a group keeps its
// oldest pending record (given, not acknowledged) and everything after
// it, or, with none pending, everything after the last it was given. A
// stream without groups is left to its length cap.
func (f Streams) TrimAcked(ctx context.Context) (int64, error) {
	var n int64
	for i, sh := range f.shards {
		gs, err := f.c.XInfoGroups(ctx, sh.Results).Result()
		if err != nil || len(gs) == 0 {
			continue // no stream, or no group: nothing to trim by
		}
		keep := ""
		for _, g := range gs {
			from := nextID(g.LastDeliveredID)
			if g.Pending > 0 {
				p, err := f.c.XPending(ctx, sh.Results, g.Name).Result()
				if err != nil {
					return n, f.in(i, fmt.Errorf("frontier: trimming: %w", err))
				}
				from = p.Lower
			}
			if keep == "" || idLess(from, keep) {
				keep = from
			}
		}
		got, err := f.c.XTrimMinID(ctx, sh.Results, keep).Result()
		if err != nil {
			return n, f.in(i, fmt.Errorf("frontier: trimming: %w", err))
		}
		n += got
	}
	return n, nil
}

// idLess orders stream ids ("ms-seq").
func idLess(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	if am != bm {
		return am < bm
	}
	return as < bs
}

func splitID(id string) (uint64, uint64) {
	var ms, seq uint64
	fmt.Sscanf(strings.Replace(id, "-", " ", 1), "%d %d", &ms, &seq)
	return ms, seq
}

// nextID is the id just after id.
func nextID(id string) string {
	ms, seq := splitID(id)
	return fmt.Sprintf("%d-%d", ms, seq+1)
}

// GroupPoll is how long a group's reader that found nothing waits before
// it looks again.
const GroupPoll = 200 * time.Millisecond

// Lengths are the records each shard's results stream holds.
func (f Streams) Lengths(ctx context.Context) ([]int64, error) {
	out := make([]int64, len(f.shards))
	for i, sh := range f.shards {
		n, err := f.c.XLen(ctx, sh.Results).Result()
		if err != nil {
			return nil, f.in(i, fmt.Errorf("frontier: results' length: %w", err))
		}
		out[i] = n
	}
	return out, nil
}

// Pending are the records given to group's readers and not acknowledged,
// by reader, over every shard (XPENDING's summary).
func (f Streams) Pending(ctx context.Context, group string) (map[string]int64, error) {
	out := map[string]int64{}
	for i, sh := range f.shards {
		p, err := f.c.XPending(ctx, sh.Results, group).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, f.in(i, fmt.Errorf("frontier: group %s's pending records: %w", group, err))
		}
		if p != nil {
			for c, n := range p.Consumers {
				out[c] += n
			}
		}
	}
	return out, nil
}
