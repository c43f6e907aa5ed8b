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

// The modes of a sweep (schedule.lua's ARGV[8]).
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
	p := f.queueSchedule(ctx, pipe, epochKey, epoch, maxAttempts, limit, pageBudget, mode)
	pipe.Exec(ctx) // the call's error is read below
	return f.readSchedule(ctx, p)
}

// queueSchedule adds the sweep to pipe (Frontier.Schedule sends every
// shard's in one pipeline); readSchedule reads it.
func (f *shard) queueSchedule(ctx context.Context, pipe redis.Pipeliner, epochKey string, epoch int64, maxAttempts, limit int, pageBudget int64, mode string) *fence.Pending {
	key, raising := epochKey, false
	if f.keys.Fence != "" {
		key, raising = f.keys.Fence, true
	}
	return scheduleScript.Queue(ctx, pipe, raising, key, epoch,
		keysOf(scheduleKeyList, f), scheduleArgs{MaxAttempts: maxAttempts, Limit: limit, FailedCap: failedCap, Budget: pageBudget,
			ForgetMs: registry.ForgetAfter.Milliseconds(), ResultsCap: f.resultsCap, Mode: mode, OutboxAge: f.o.outboxAge().Milliseconds(),
			Continuous: f.o.Continuous, Instance: f.o.Instance, Settings: f.policy().Version}.encode())
}

// scheduleArgs are schedule.lua's arguments after the fence's epoch, one
// JSON object read by name (its header says what each is).
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

func (f *shard) readSchedule(ctx context.Context, p *fence.Pending) (Sweep, error) {
	res, err := p.Result(ctx, f.c)
	if keyspace.IsGone(err) {
		return Sweep{}, ErrGone
	}
	if se := keyspace.ScriptErr("sweep", err); se != nil {
		return Sweep{}, se
	}
	if err != nil {
		return Sweep{}, fmt.Errorf("frontier: schedule: %w", err)
	}
	var r sweepReply
	if raw, ok := res.(string); !ok || keyspace.DecodeReply([]byte(raw), &r) != nil {
		return Sweep{}, fmt.Errorf("frontier: schedule: unexpected reply %v", res)
	}
	return Sweep{Released: r.Released, Revisits: r.Revisits, Reclaimed: r.Reclaimed, Failed: r.Failed, CrawlOver: r.Done == 1, Settings: r.Settings,
		NextDeferred: time.Duration(r.DueIn) * time.Millisecond, empty: r.Empty == 1, enqueued: r.Enqueued,
		pages: r.Pages, leases: r.Leases, allow: r.Budget, work: r.Work, outbox: r.Outbox, Records: r.Records}, nil
}

// sweepReply is schedule.lua's reply, which its header explains field by
// field.
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
