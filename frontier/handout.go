package frontier

import (
	"context"
	"fmt"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redis/go-redis/v9"
)

// finishScript ends the leases of a worker's finished pages and records
// them (finish.lua), backScript gives back what a worker hands back, late
// URLs asking their hosts for new tokens first, and the unused tokens
// (back.lua), handoutScript grants it new URLs, their hosts and tokens
// (handout.lua),
// and takeScript takes them off their queues under fresh leases
// (take.lua): the scripts after exchange.lua in an exchange's pipeline,
// each run only where exchange.lua counted the exchange.
var (
	finishScript  = lua.Script("finish")
	backScript    = lua.Script("back")
	handoutScript = lua.Script("handout")
	takeScript    = lua.Script("take")
)

// afterCall is one exchange's call of a script that runs only after its
// exchange.lua counted the exchange (finish.lua, back.lua, handout.lua,
// take.lua), and the call's reply once its pipeline ran.
type afterCall struct {
	name string
	s    *redis.Script
	keys []string
	args []any
	cmd  *redis.Cmd
}

// backCall is one exchange's back.lua call: the leases given back, in
// the order sent (the reply's again counts places among them).
type backCall struct {
	afterCall
	back []*Lease
}

// handoutArgs are the arguments the scripts that take tokens share
// (back.lua, handout.lua): a host's bucket and the horizon, the settings
// they come from, politeness per address; f.exchanges is the count before
// exchange.lua's, which they must find one more.
func (f *shard) handoutArgs() exchangeArgs {
	p := f.policy()
	a := f.baseArgs()
	a.Expect, a.Settings = f.exchanges+1, p.Version
	a.Rate, a.Burst = p.HostRate, max(p.HostBurst, 1)
	a.AheadMs, a.LeastMs = p.PopAhead.Milliseconds(), politeness.LeastWindow.Milliseconds()
	return a
}

// newEnd prepares the call that ends the finished pages' leases, by a
// (endArgs); none without pages.
func (f *shard) newEnd(a exchangeArgs) *afterCall {
	if len(a.Done) == 0 {
		return nil
	}
	return &afterCall{name: "finish", s: finishScript, keys: f.exchangeKeys(), args: a.encode()}
}

// newBack prepares the call that gives back the leases handed back (the
// late ones, Lease.Late, asking their hosts for new tokens first) and the
// tokens finish.lua left for it; none when there are no leases and no
// page whose token goes back (refund).
func (f *shard) newBack(back []*Lease, refund bool) *backCall {
	if len(back) == 0 && !refund {
		return nil
	}
	a := f.handoutArgs()
	a.Budget = f.pageBudget(f.policy())
	a.backArgs(back)
	for i, l := range back {
		if l.Late {
			a.BackAgain = append(a.BackAgain, i+1)
		}
	}
	return &backCall{afterCall{name: "back", s: backScript, keys: f.exchangeKeys(), args: a.encode()}, back}
}

// newHandout prepares the grant of want URLs, the late leases given back
// that back.lua keeps counted among them.
func (f *shard) newHandout(want int, late []*Lease) *afterCall {
	a := f.handoutArgs()
	a.Want, a.LeaseMs, a.Budget = want, f.o.Lease.Milliseconds(), f.pageBudget(f.policy())
	a.IPShard, a.IPShards = f.index, f.shards
	for _, l := range late {
		a.Kept = append(a.Kept, a.text(l.Member()))
	}
	return &afterCall{name: "handout", s: handoutScript, keys: f.exchangeKeys(), args: a.encode()}
}

// newTake prepares the take of what the handout grants, under lease ids
// ids (as many as the URLs wanted); none without ids: a handout for no
// URLs grants none.
func (f *shard) newTake(ids []string) *afterCall {
	if len(ids) == 0 {
		return nil
	}
	a := f.baseArgs()
	a.Expect = f.exchanges + 1
	a.LeaseMs, a.Budget = f.o.Lease.Milliseconds(), f.pageBudget(f.policy())
	for i, id := range ids {
		if i == 0 {
			a.IDs = a.text(id)
		} else {
			a.text(id)
		}
	}
	return &afterCall{name: "take", s: takeScript, keys: f.exchangeKeys(), args: a.encode()}
}

// queue adds the call to pipe.
func (h *afterCall) queue(ctx context.Context, pipe redis.Pipeliner) {
	h.cmd = h.s.EvalSha(ctx, pipe, h.keys, h.args...)
}

// noScript: Redis had not the call's script when its pipeline ran.
func (h *afterCall) noScript() bool { return h != nil && script.IsNoScript(h.cmd.Err()) }

// result is the call's reply after its leading 1. A call that ran before
// exchange.lua counted the exchange (exchange.lua went again on its own:
// its filter grew, its script was missing) wrote nothing and goes again
// now, as one missing its script; one that finds Redis's count of the
// process's exchanges another is refused as exchange.lua's guard refuses
// (ErrRolledBack, ErrReplyLost).
func (h *afterCall) result(ctx context.Context, f *shard) ([]any, error) {
	if h == nil {
		return nil, nil
	}
	res, err := h.cmd.Slice()
	if n, refused := handoutRefusal(res); script.IsNoScript(err) || err == nil && refused && n == f.exchanges-1 {
		res, err = h.s.Run(ctx, f.c, h.keys, h.args...).Slice()
	}
	if keyspace.IsGone(err) {
		return nil, ErrGone
	}
	if se := keyspace.ScriptErr(h.name, err); se != nil {
		return nil, se
	}
	if err != nil {
		return nil, fmt.Errorf("frontier: %s: %w", h.name, err)
	}
	if n, refused := handoutRefusal(res); refused {
		ahead := n > f.exchanges
		f.exchanges = n // from now on, Redis's count is the truth
		if ahead {
			return nil, ErrReplyLost
		}
		return nil, ErrRolledBack
	}
	if len(res) < 1 {
		return nil, fmt.Errorf("frontier: %s: malformed reply %v", h.name, res)
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

// lateOf is the late leases among those given back (Lease.Late), which
// back.lua asks their hosts about again.
func lateOf(back []*Lease) (late []*Lease) {
	for _, l := range back {
		if l.Late {
			late = append(late, l)
		}
	}
	return late
}
