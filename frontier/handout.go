package frontier

import (
	"context"
	"fmt"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redis/go-redis/v9"
)

// handoutScript hands a worker new URLs (handout.lua): the second of an
// exchange's two scripts, in the pipeline right after exchange.lua, which
// ended the worker's leases and counted the exchange.
var handoutScript = lua.Script("handout")

// handoutCall is one exchange's handout.lua call: the late leases it asks
// their hosts about again, in the order sent (the reply's again counts
// places among them), and the call's reply once its pipeline ran.
type handoutCall struct {
	keys []string
	args []any
	late []*Lease
	cmd  *redis.Cmd
}

// newHandout prepares the handout of want URLs under lease ids ids, late
// being the late leases given back (Lease.Late); f.exchanges is the count
// before exchange.lua's, which the handout must find one more.
func (f *shard) newHandout(late []*Lease, want int, ids []string) *handoutCall {
	p := f.policy()
	a := f.baseArgs()
	a.Expect, a.Want = f.exchanges+1, want
	a.LeaseMs, a.Budget, a.Settings = f.o.Lease.Milliseconds(), f.pageBudget(p), p.Version
	a.Rate, a.Burst = p.HostRate, max(p.HostBurst, 1)
	a.AheadMs, a.LeastMs = p.PopAhead.Milliseconds(), politeness.LeastWindow.Milliseconds()
	a.IP, a.IPShard, a.IPShards = p.PerAddress, f.index, f.shards
	a.backArgs(late)
	for i := range late {
		a.BackAgain = append(a.BackAgain, i+1)
	}
	for i, id := range ids {
		if i == 0 {
			a.IDs = a.text(id)
		} else {
			a.text(id)
		}
	}
	return &handoutCall{keys: f.exchangeKeys(), args: a.encode(), late: late}
}

// queue adds the call to pipe.
func (h *handoutCall) queue(ctx context.Context, pipe redis.Pipeliner) {
	h.cmd = handoutScript.EvalSha(ctx, pipe, h.keys, h.args...)
}

// result is the call's reply after its leading 1: the object
// (exchangeReply) and the popped items. A call that ran before
// exchange.lua counted the exchange (exchange.lua went again on its own:
// its filter grew, its script was missing) wrote nothing and goes again
// now, as one missing its script; one that finds Redis's count of the
// process's exchanges another is refused as exchange.lua's guard refuses
// (ErrRolledBack, ErrReplyLost).
func (h *handoutCall) result(ctx context.Context, f *shard) ([]any, error) {
	res, err := h.cmd.Slice()
	if n, refused := handoutRefusal(res); script.IsNoScript(err) || err == nil && refused && n == f.exchanges-1 {
		res, err = handoutScript.Run(ctx, f.c, h.keys, h.args...).Slice()
	}
	if keyspace.IsGone(err) {
		return nil, ErrGone
	}
	if se := keyspace.ScriptErr("handout", err); se != nil {
		return nil, se
	}
	if err != nil {
		return nil, fmt.Errorf("frontier: handout: %w", err)
	}
	if n, refused := handoutRefusal(res); refused {
		ahead := n > f.exchanges
		f.exchanges = n // from now on, Redis's count is the truth
		if ahead {
			return nil, ErrReplyLost
		}
		return nil, ErrRolledBack
	}
	if len(res) < 2 {
		return nil, fmt.Errorf("frontier: handout: malformed reply %v", res)
	}
	return res[1:], nil
}

// handoutRefusal reads a refused handout's reply, {0, Redis's count}.
func handoutRefusal(res []any) (int64, bool) {
	if len(res) != 2 {
		return 0, false
	}
	if ok, _ := res[0].(int64); ok != 0 {
		return 0, false
	}
	n, _ := res[1].(int64)
	return n, true
}

// splitLate parts leases given back into the late ones (Lease.Late),
// which the handout asks their hosts about again, and the others, which
// exchange.lua gives back.
func splitLate(back []*Lease) (others, late []*Lease) {
	for _, l := range back {
		if l.Late {
			late = append(late, l)
		} else {
			others = append(others, l)
		}
	}
	return others, late
}
