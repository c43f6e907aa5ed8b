package frontier

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed hostrule.lua
	hostRuleSrc    string
	hostRuleScript = redis.NewScript(lib + hostRuleSrc)
)

// HostRule is a host's own rate and burst, set by hand: the pops keep to
// it instead of the crawl's (a Crawl-delay or an adaptive interval slower
// than it still holds).
type HostRule struct {
	Host  string  `json:"host"`
	Rate  float64 `json:"rate"` // requests a second; 0: no limit (as Options.HostRate)
	Burst int     `json:"burst"`
}

// SetHostRule gives host its own rate (requests a second; 0 or +Inf: no
// limit) and burst, from its shard's next pop on.
func (f *Frontier) SetHostRule(ctx context.Context, host string, rate float64, burst int) error {
	if math.IsInf(rate, 1) {
		rate = 0
	}
	if rate < 0 || math.IsNaN(rate) || burst < 1 {
		return fmt.Errorf("frontier: a host's rate must be 0 (no limit) or above, and its burst at least 1 (got %v, %d)", rate, burst)
	}
	return f.hostRule(ctx, "set", host, strconv.FormatFloat(rate, 'g', -1, 64), strconv.Itoa(burst))
}

// ClearHostRule drops host's own rate and lifts its pause: the crawl's
// rate holds, and the host is due again at once.
func (f *Frontier) ClearHostRule(ctx context.Context, host string) error {
	return f.hostRule(ctx, "clear", host, "", "")
}

func (f *Frontier) hostRule(ctx context.Context, mode, host, rate, burst string) error {
	sh := f.fs[ShardOf(host, len(f.fs))]
	err := hostRuleScript.Run(ctx, sh.c, []string{sh.keys.Config, sh.keys.HostRules, f.RateKey(host), sh.keys.Pauses, sh.keys.Ready, sh.keys.Refill},
		f.o.Instance, mode, host, rate, burst).Err()
	switch {
	case isGone(err):
		return ErrGone
	case err != nil:
		return fmt.Errorf("frontier: host %s: %w", host, err)
	}
	return nil
}

// HostRules lists the hosts with a rate of their own, by name.
func (f *Frontier) HostRules(ctx context.Context) ([]HostRule, error) {
	cmds := make([]*redis.MapStringStringCmd, len(f.fs))
	_, err := f.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sh := range f.fs {
			cmds[i] = p.HGetAll(ctx, sh.keys.HostRules)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("frontier: host rules: %w", err)
	}
	var out []HostRule
	for _, c := range cmds {
		for host, v := range c.Val() {
			if r, b, ok := parseHostRule(v); ok { // one not well formed: the pops ignore it too
				out = append(out, HostRule{Host: host, Rate: r, Burst: b})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out, nil
}

// parseHostRule reads a hostrules value, "rate burst" (exchange_steps.lua's
// ex_parse_rule): ok is false for one not well formed.
func parseHostRule(v string) (rate float64, burst int, ok bool) {
	rs, bs, _ := strings.Cut(v, " ")
	r, err1 := strconv.ParseFloat(rs, 64)
	b, err2 := strconv.Atoi(bs)
	if err1 != nil || err2 != nil || r < 0 || b < 1 {
		return 0, 0, false
	}
	return r, b, true
}
