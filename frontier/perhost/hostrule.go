package perhost

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

var (
	hostRuleScript = lua.Script("hostrule")
)

// Rule is a host's own rate and burst, set by hand: the pops keep to
// it instead of the crawl's (a Crawl-delay or an adaptive interval slower
// than it still holds).
type Rule struct {
	Host  string  `json:"host"`
	Rate  float64 `json:"rate"` // requests a second; 0: no limit (as Options.HostRate)
	Burst int     `json:"burst"`
	// Blocked: the host is blocked (Hosts.Block); Rate and Burst are 0.
	Blocked bool `json:"blocked,omitempty"`
}

// SetRule gives host its own rate (requests a second; 0 or +Inf: no
// limit) and burst, from its shard's next pop on.
func (f Controls) SetRule(ctx context.Context, host string, rate float64, burst int) error {
	if math.IsInf(rate, 1) {
		rate = 0
	}
	if rate < 0 || math.IsNaN(rate) || burst < 1 {
		return fmt.Errorf("frontier: a host's rate must be 0 (no limit) or above, and its burst at least 1 (got %v, %d)", rate, burst)
	}
	return f.hostRule(ctx, "set", host, strconv.FormatFloat(rate, 'f', -1, 64), strconv.Itoa(burst)) // no exponent: gopher-lua's tonumber reads none
}

// ClearRule drops host's own rate and lifts its pause: the crawl's
// rate holds, and the host is due again at once.
func (f Controls) ClearRule(ctx context.Context, host string) error {
	return f.hostRule(ctx, "clear", host, "", "")
}

// Block blocks host: from now on no pop hands out its URLs and no
// link to it is queued (counted as skipped_links:blocked), and every URL
// queued for it ends with a record (outcome skipped, its error saying
// so), blockBatch a call until its queue is empty; it returns how many.
// URLs of the host already popped are the workers' to give back (they
// come back to its queue, and the pops end them too). A rate set after
// (Controls.SetRule) or Controls.ClearRule unblocks it.
func (f Controls) Block(ctx context.Context, host string) (int64, error) {
	return f.BlockFor(ctx, host, "")
}

// BlockFor is Block by the crawl itself, for a reason why (its login
// failed): the records of the host's URLs say "not fetched: " and why. An
// empty why is Block's, by hand.
func (f Controls) BlockFor(ctx context.Context, host, why string) (int64, error) {
	why = strings.ReplaceAll(why, "\n", " ")
	var ended int64
	for {
		v, err := f.hostRuleRun(ctx, "block", host, strconv.Itoa(blockBatch), strconv.FormatInt(f.ResultsCap, 10), why).Int64Slice()
		if err != nil {
			return ended, err
		}
		if len(v) != 2 {
			return ended, fmt.Errorf("frontier: host %s: block: reply %v", host, v)
		}
		if ended += v[0]; v[1] == 1 {
			return ended, nil
		}
	}
}

// blockBatch is how many of a blocked host's URLs one call ends: a few
// milliseconds of Redis's time.
const blockBatch = 1000

func (f Controls) hostRule(ctx context.Context, mode, host, rate, burst string) error {
	return f.hostRuleRun(ctx, mode, host, rate, burst).Err()
}

func (f Controls) hostRuleRun(ctx context.Context, mode, host, a, b string, more ...any) *redis.Cmd {
	_, k := f.For(host)
	cmd := hostRuleScript.Run(ctx, f.C, []string{k.Config, k.HostRules, f.bucketKey(host), k.Pauses, k.Ready, k.Refill,
		k.Queues, k.Stats, k.Lengths, k.Results}, append([]any{f.Instance, mode, host, a, b}, more...)...)
	switch err := cmd.Err(); {
	case keyspace.IsGone(err):
		cmd.SetErr(keyspace.ErrGone)
	case err != nil:
		cmd.SetErr(fmt.Errorf("frontier: host %s: %w", host, err))
	}
	return cmd
}

// Rules lists the hosts with a rate of their own, by name.
func (f Controls) Rules(ctx context.Context) ([]Rule, error) {
	cmds := make([]*redis.MapStringStringCmd, len(f.Keys))
	_, err := f.C.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range f.Keys {
			cmds[i] = p.HGetAll(ctx, k.HostRules)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("frontier: host rules: %w", err)
	}
	var out []Rule
	for _, c := range cmds {
		for host, v := range c.Val() {
			if v == blocked || strings.HasPrefix(v, blocked+"\n") {
				out = append(out, Rule{Host: host, Blocked: true})
			} else if r, b, ok := parseHostRule(v); ok { // one not well formed: the pops ignore it too
				out = append(out, Rule{Host: host, Rate: r, Burst: b})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out, nil
}

// blocked is a blocked host's hostrules value (base.lua's FR_BLOCKED).
const blocked = "block"

// parseHostRule reads a hostrules value, "rate burst" (hostbucket.lua's
// hb_parse_rule): ok is false for one not well formed.
func parseHostRule(v string) (rate float64, burst int, ok bool) {
	rs, bs, _ := strings.Cut(v, " ")
	r, err1 := strconv.ParseFloat(rs, 64)
	b, err2 := strconv.Atoi(bs)
	if err1 != nil || err2 != nil || r < 0 || b < 1 {
		return 0, 0, false
	}
	return r, b, true
}

// Leases is how many of host's URLs are leased to workers now (popped,
// not yet finished or given back), by a scan of its shard's leases.
func (f Controls) Leases(ctx context.Context, host string) (int, error) {
	_, k := f.For(host)
	n := 0
	iter := f.C.ZScan(ctx, k.Leases, 0, "*\n"+globEscape(host)+"\n*", 1000).Iterator()
	for i := 0; iter.Next(ctx); i++ {
		if i%2 == 0 { // member, score, member, …
			n++
		}
	}
	if err := iter.Err(); err != nil {
		return 0, fmt.Errorf("frontier: leases of %s: %w", host, err)
	}
	return n, nil
}

// globEscape escapes s for a Redis MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\^-`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
