package rendering

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

var (
	samplesScript = lua.Script("samples")
)

// What the samples of a host taught (Learned): a verdict, or still
// learning.
const (
	VerdictLearning = "?"
	VerdictRender   = keyspace.LaneRender
	VerdictPlain    = keyspace.LanePlain
)

// Sample is a page a plain worker fetched, for a render worker to render
// and compare with its plain HTML (seed --render auto).
type Sample struct {
	URL    string `json:"url"`
	Host   string `json:"host"`
	Depth  int    `json:"depth"`
	Parent string `json:"parent,omitempty"`
}

// OfferSample queues s, a page fetched plainly, unless its host needs no
// browser (VerdictPlain), is being learnt and has had reserve samples
// offered, or waiting samples number waitMost already. A page of a host
// that needs a browser is always queued (a plain worker popped it before
// the host moved to the render lane: only its rendering finds its
// links). It returns whether s was queued and the host's verdict
// (VerdictLearning while there is none).
func (f Shared) OfferSample(ctx context.Context, s Sample, reserve, waitMost int) (bool, string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return false, "", err
	}
	v, err := f.samples(ctx, "offer", s.Host, string(b), reserve, waitMost).Slice()
	if err != nil {
		return false, "", err
	}
	if len(v) != 2 {
		return false, "", fmt.Errorf("frontier: offer sample: reply %v", v)
	}
	queued, _ := v[0].(int64)
	verdict, _ := v[1].(string)
	return queued == 1, verdict, nil
}

// ClaimSample takes the oldest waiting sample for lease: until then no
// other worker claims it, after it (its worker died) the next does; with
// its host's verdict now (a sample of a host found to need no browser
// since it was offered is told at once, unrendered). ok is false when
// none waits.
func (f Shared) ClaimSample(ctx context.Context, lease time.Duration) (s Sample, raw, verdict string, ok bool, err error) {
	v, err := f.samples(ctx, "claim", lease.Milliseconds()).Slice()
	switch {
	case errors.Is(err, redis.Nil):
		return Sample{}, "", "", false, nil
	case err != nil:
		return Sample{}, "", "", false, err
	case len(v) != 2:
		return Sample{}, "", "", false, fmt.Errorf("frontier: claim sample: reply %v", v)
	}
	raw, _ = v[0].(string)
	verdict, _ = v[1].(string)
	if err := json.Unmarshal([]byte(raw), &s); err != nil || s.Host == "" {
		// Not one of ours: told as finding nothing, so it goes.
		f.samples(ctx, "tell", "", raw, 0, 1<<30)
		return Sample{}, "", "", false, fmt.Errorf("frontier: a sample not well formed, dropped: %q", raw)
	}
	return s, raw, verdict, true, nil
}

// TellSample says what rendering the claimed sample raw (ClaimSample)
// found: whether it found links or text its plain fetch missed. It
// returns the host's verdict: VerdictRender at the first sample that
// found something, VerdictPlain once most samples found nothing,
// VerdictLearning until then.
func (f Shared) TellSample(ctx context.Context, s Sample, raw string, found bool, most int) (string, error) {
	v, err := f.samples(ctx, "tell", s.Host, raw, keyspace.Flag(found), most).Text()
	if err != nil {
		return "", err
	}
	if v == "" {
		return VerdictLearning, nil
	}
	return v, nil
}

// LearnPrefix says what rendering a page under a path prefix of a host
// that needs a browser found (a render worker renders such a page and
// compares it with its own HTML, no sample needed): where hosts mix, a
// prefix whose most pages found nothing needs no browser (VerdictPlain),
// and its pages are fetched plainly. It returns the prefix's verdict, by
// the rule of a host's (TellSample).
func (f Shared) LearnPrefix(ctx context.Context, host, prefix string, found bool, most int) (string, error) {
	v, err := f.samples(ctx, "learn", host+" "+prefix, keyspace.Flag(found), most).Text()
	if err != nil {
		return "", err
	}
	if v == "" {
		return VerdictLearning, nil
	}
	return v, nil
}

// PrefixVerdict is what the pages under a path prefix of host taught
// (LearnPrefix): VerdictLearning until a verdict.
func (f Shared) PrefixVerdict(ctx context.Context, host, prefix string) (string, error) {
	v, err := f.C.HGet(ctx, f.Keys[0].Learn, host+" "+prefix).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return VerdictLearning, nil
	case err != nil:
		return "", fmt.Errorf("frontier: a prefix's verdict: %w", err)
	}
	if f := strings.Fields(v); len(f) == 3 {
		return f[2], nil
	}
	return VerdictLearning, nil
}

// Learned is what the samples taught: host -> its verdict, and how many
// samples of it were offered and told.
type Learned struct {
	Verdict       string `json:"verdict"`
	Offered, Told int    `json:"-"`
}

// LearnedHosts reads what the samples taught of every host (and, as
// "host prefix", of the path prefixes of hosts that need a browser:
// LearnPrefix), and how many samples wait.
func (f Shared) LearnedHosts(ctx context.Context) (map[string]Learned, int64, error) {
	all, err := f.C.HGetAll(ctx, f.Keys[0].Learn).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("frontier: learnt hosts: %w", err)
	}
	waiting, err := f.C.ZCard(ctx, f.Keys[0].Samples).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("frontier: samples: %w", err)
	}
	out := make(map[string]Learned, len(all))
	for h, v := range all {
		f := strings.Fields(v)
		if len(f) != 3 {
			continue
		}
		o, _ := strconv.Atoi(f[0])
		t, _ := strconv.Atoi(f[1])
		out[h] = Learned{Verdict: f[2], Offered: o, Told: t}
	}
	return out, waiting, nil
}

func (f Shared) samples(ctx context.Context, step string, args ...any) *redis.Cmd {
	k := f.Keys[0]
	cmd := samplesScript.Run(ctx, f.C, []string{k.Config, k.Learn, k.Samples}, append([]any{f.Instance, step}, args...)...)
	switch err := cmd.Err(); {
	case keyspace.IsGone(err):
		cmd.SetErr(keyspace.ErrGone)
	case err != nil && !errors.Is(err, redis.Nil):
		cmd.SetErr(fmt.Errorf("frontier: samples: %s: %w", step, err))
	}
	return cmd
}
