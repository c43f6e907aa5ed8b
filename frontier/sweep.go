package frontier

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/registry"
	"github.com/redis/go-redis/v9"
)

// Sweep is what one scheduler pass moved, and whether the crawl is over.
type Sweep struct {
	Released, Reclaimed, Failed int
	Revisits                    int // URLs due for a revisit put back in the queues
	CrawlOver                   bool
	// NextDeferred is when the next deferred item is due (-1: none): the
	// scheduler sweeps again then.
	NextDeferred time.Duration
	// Busy are, with several shards, the wake channels of those this sweep
	// found not empty: until each has said "drained" there, another sweep
	// cannot find the crawl over, so a "drained" from another shard need
	// not bring one.
	Busy []string
	// Again: every shard was empty, and one more sweep that finds the
	// same ends the crawl: it is due at once.
	Again bool
	// Records are the records this sweep wrote to the results stream
	// (SweptRecord, JSON), for the scheduler to keep with its own.
	Records []string
	// Settings is the newest settings version in force in the shards
	// swept: newer than the scheduler's (Policy.Version), it reads the
	// settings again, and until it has, no sweep ends the crawl.
	Settings int64
	empty    bool  // nothing queued, leased or deferred in this shard
	enqueued int64 // URLs ever queued at the back of this shard's queues
	// With a page budget over shards: this shard's pages fetched, URLs in
	// flight, share of the budget, and URLs queued or deferred.
	pages, leases, allow, work int64
	// outbox: the shard's outbox entries no ack came for in time (id,
	// entry, id, entry …), for Schedule to deliver.
	outbox []string
}

// The modes of a sweep (schedule_end.lua's mode).
const (
	sweepAlone  = "1"   // the crawl's only shard: the sweep decides whether the crawl is done
	sweepReport = "0"   // a shard of several: report, Shards decides
	sweepEnd    = "end" // Shards decided the crawl is over: end this shard
	// sweepFinish: Shards decided the crawl is over: write this shard's
	// last records, without setting its done flag (CrawlOver: all written).
	sweepFinish = "finish"
)

// fenced runs a fenced script as the scheduler of epoch: against the
// leader's epoch counter, or, for a shard with a Fence key (whose slot the
// counter is not in), against that key (fence.Script.RunRaising).
func (f *shard) fenced(ctx context.Context, s *fence.Script, epochKey string, epoch int64, keys []string, args ...any) (any, error) {
	if f.keys.Fence != "" {
		return s.RunRaising(ctx, f.c, f.keys.Fence, epoch, keys, args...)
	}
	return s.Run(ctx, f.c, epochKey, epoch, keys, args...)
}

// schedule is the sweep, in one of the modes above. pageBudget -1 is
// this shard's share of the budget (Frontier.Schedule).
func (f *shard) schedule(ctx context.Context, epochKey string, epoch int64, maxAttempts, limit int, pageBudget int64, mode string) (Sweep, error) {
	pipe := f.c.Pipeline()
	calls := f.queueSchedule(ctx, pipe, epochKey, epoch, maxAttempts, limit, pageBudget, mode)
	pipe.Exec(ctx) // the calls' errors are read below
	return f.readSchedule(ctx, calls)
}

// sweepCalls are one shard's sweep: schedule.lua's call (due work back to
// the queues), then schedule_end.lua's (the sweep's end), in one pipeline.
type sweepCalls [2]*fence.Pending

// queueSchedule adds the sweep's two calls to pipe (Frontier.Schedule
// sends every shard's in one pipeline); readSchedule reads them. Both
// take the same keys and arguments, each reading what it needs.
func (f *shard) queueSchedule(ctx context.Context, pipe redis.Pipeliner, epochKey string, epoch int64, maxAttempts, limit int, pageBudget int64, mode string) sweepCalls {
	key, raising := epochKey, false
	if f.keys.Fence != "" {
		key, raising = f.keys.Fence, true
	}
	keys := keysOf(scheduleKeyList, f)
	args := scheduleArgs{MaxAttempts: maxAttempts, Limit: limit, FailedCap: failedCap, Budget: pageBudget,
		ForgetMs: registry.ForgetAfter.Milliseconds(), ResultsCap: f.resultsCap, Mode: mode, OutboxAge: f.o.outboxAge().Milliseconds(),
		Continuous: f.o.Continuous, Instance: f.o.Instance, Settings: f.policy().Version}.encode()
	return sweepCalls{scheduleScript.Queue(ctx, pipe, raising, key, epoch, keys, args),
		scheduleEndScript.Queue(ctx, pipe, raising, key, epoch, keys, args)}
}

// scheduleArgs are the sweep's arguments after the fence's epoch, one
// JSON object read by name (the scripts' headers say what each is).
type scheduleArgs struct {
	MaxAttempts int    `json:"max_attempts"`
	Limit       int    `json:"limit"`
	FailedCap   int    `json:"failed_cap"`
	Budget      int64  `json:"budget"`
	ForgetMs    int64  `json:"forget_ms"`
	ResultsCap  int64  `json:"results_cap"`
	Mode        string `json:"mode"`
	OutboxAge   int64  `json:"outbox_age"`
	Continuous  bool   `json:"continuous"`
	Instance    string `json:"instance"`
	Settings    int64  `json:"settings"`
}

func (a scheduleArgs) encode() string {
	b, err := json.Marshal(a)
	if err != nil {
		panic("frontier: schedule arguments: " + err.Error()) // strings and numbers only: cannot fail
	}
	return string(b)
}

// readSchedule reads a shard's sweep. Where the first call went through
// and the second did not (a new leader in between: fenced), the error is
// the second's, and the sweep returned has the first's records, which the
// scheduler still keeps with its own.
func (f *shard) readSchedule(ctx context.Context, calls sweepCalls) (Sweep, error) {
	due, err := f.readSweepCall(ctx, calls[0])
	if err != nil {
		return Sweep{}, err
	}
	end, err := f.readSweepCall(ctx, calls[1])
	if err != nil {
		return Sweep{Records: due.Records}, err
	}
	return Sweep{Released: due.Released, Revisits: due.Revisits, Reclaimed: due.Reclaimed, Failed: due.Failed,
		CrawlOver: end.Done == 1, Settings: end.Settings, NextDeferred: time.Duration(end.DueIn) * time.Millisecond,
		empty: end.Empty == 1, enqueued: end.Enqueued, pages: end.Pages, leases: end.Leases, allow: end.Budget,
		work: end.Work, outbox: end.Outbox, Records: append(due.Records, end.Records...)}, nil
}

// readSweepCall reads one of a sweep's calls.
func (f *shard) readSweepCall(ctx context.Context, p *fence.Pending) (sweepReply, error) {
	res, err := p.Result(ctx, f.c)
	if keyspace.IsGone(err) {
		return sweepReply{}, ErrGone
	}
	if se := keyspace.ScriptErr("sweep", err); se != nil {
		return sweepReply{}, se
	}
	if err != nil {
		return sweepReply{}, fmt.Errorf("frontier: schedule: %w", err)
	}
	var r sweepReply
	if raw, ok := res.(string); !ok || keyspace.DecodeReply([]byte(raw), &r) != nil {
		return sweepReply{}, fmt.Errorf("frontier: schedule: unexpected reply %v", res)
	}
	return r, nil
}

// sweepReply is the reply of either of a sweep's scripts (schedule.lua's:
// the first four counts and records; schedule_end.lua's: the rest and
// records), which their headers explain field by field.
type sweepReply struct {
	Released, Reclaimed, Failed int
	Revisits                    int
	Done                        int
	DueIn                       int64 `json:"due_in"`
	Empty                       int
	Enqueued, Pages, Leases     int64
	Budget, Work                int64
	Settings                    int64
	Outbox                      []string
	Records                     []string
}

// moveAllowance changes this shard's share of the page budget by d (a
// negative d takes back at most what the shard leaves unused), as the
// scheduler of epoch, and returns the change made (allow.lua).
func (f *shard) moveAllowance(ctx context.Context, epochKey string, epoch, d int64) (int64, error) {
	res, err := f.fenced(ctx, allowScript, epochKey, epoch, []string{f.keys.Stats, f.keys.Leases, f.keys.Settings}, d, f.keys.Wake(), f.policy().Version)
	if err != nil {
		return 0, fmt.Errorf("frontier: move the page budget: %w", err)
	}
	moved, _ := res.(int64)
	return moved, nil
}
