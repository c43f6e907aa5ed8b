package dedup

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// A filter's parameters live in Redis, in its meta hash (init.lua): Open
// creates it, Attach and AttachAll read it, and every client then agrees
// on the filter's geometry.

// Open returns the filter at key, creating it with params if it does not
// exist. A filter that exists with other parameters is refused (ErrMismatch):
// workers that disagree on m and k would each see other bits.
// key should carry a hash tag ("crawl:{name}:seen"); segments share it.
func Open(ctx context.Context, c redis.Scripter, key string, params Params) (*Filter, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	params = params.withDefaults()
	stored, layers, count, err := readMeta(ctx, c, key, &params)
	if err != nil {
		return nil, err
	}
	if stored != params {
		return nil, fmt.Errorf("%w: %q was created with %s; this worker asks for %s (use the same settings, or another crawl name)",
			ErrMismatch, key, stored, params)
	}
	return newFilter(ctx, c, key, stored, layers, count)
}

// Attach returns the filter at key with the parameters stored in Redis.
func Attach(ctx context.Context, c redis.Scripter, key string) (*Filter, error) {
	stored, layers, count, err := readMeta(ctx, c, key, nil)
	if err != nil {
		return nil, err
	}
	return newFilter(ctx, c, key, stored, layers, count)
}

// AttachAll is Attach for each of keys, their parameters read in one
// pipeline (one round trip, or one a master of a Cluster): a sharded
// crawl's worker attaches to all its shards' filters at once.
func AttachAll(ctx context.Context, c redis.UniversalClient, keys []string) ([]*Filter, error) {
	pipe := c.Pipeline()
	calls := make([]*script.Queued, len(keys))
	args := []any{"", "", "", "", layout}
	for i, k := range keys {
		calls[i] = script.Queue(ctx, pipe, initScript, []string{k}, args...)
	}
	pipe.Exec(ctx) // each reply is read below
	out := make([]*Filter, len(keys))
	for i, k := range keys {
		res, err := calls[i].Cmd(ctx, c).Slice()
		p, layers, count, err := parseMeta(k, res, err)
		if err == nil {
			out[i], err = newFilter(ctx, c, k, p, layers, count)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func newFilter(ctx context.Context, c redis.Scripter, key string, p Params, layers int, count int64) (*Filter, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("dedup: %q holds unusable parameters: %w", key, err)
	}
	return &Filter{c: c, key: key, params: p, layers: layers, count: count}, nil
}

func (p Params) String() string {
	return fmt.Sprintf("capacity=%d fp-rate=%s growth=%d tightening=%s",
		p.Capacity, fmtFloat(p.FPRate), p.Growth, fmtFloat(p.Tightening))
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) } // no exponent: gopher-lua's tonumber reads none

// layout names the bit layout this code reads and writes (hash.go): one
// written in another layout would be misread, so it is refused.
const layout = "blocks512/splitmix"

// readMeta creates the meta hash when create is non-nil and it is missing,
// and returns what Redis holds.
func readMeta(ctx context.Context, c redis.Scripter, key string, create *Params) (Params, int, int64, error) {
	args := []any{"", "", "", "", layout}
	if create != nil {
		args = []any{create.Capacity, fmtFloat(create.FPRate), create.Growth, fmtFloat(create.Tightening), layout}
	}
	res, err := initScript.Run(ctx, c, []string{key}, args...).Slice()
	return parseMeta(key, res, err)
}

// parseMeta reads init.lua's reply for key.
func parseMeta(key string, res []any, err error) (Params, int, int64, error) {
	if err != nil {
		return Params{}, 0, 0, fmt.Errorf("dedup: open %q: %w", key, err)
	}
	if len(res) != 7 || res[0] == nil {
		return Params{}, 0, 0, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	if res[6] != layout {
		return Params{}, 0, 0, fmt.Errorf("%w: %q was written by an older RedCrawl in another bit layout (%v); reset that crawl or use another name",
			ErrMismatch, key, res[6])
	}
	f := make([]string, 7)
	for i, v := range res {
		f[i], _ = v.(string)
	}
	var p Params
	var layers int
	var count int64
	var errs []error
	parse := func(s string, dst any) {
		var err error
		switch d := dst.(type) {
		case *int64:
			*d, err = strconv.ParseInt(s, 10, 64)
		case *int:
			*d, err = strconv.Atoi(s)
		case *float64:
			*d, err = strconv.ParseFloat(s, 64)
		}
		errs = append(errs, err)
	}
	parse(f[0], &p.Capacity)
	parse(f[1], &p.FPRate)
	parse(f[2], &p.Growth)
	parse(f[3], &p.Tightening)
	parse(f[4], &layers)
	parse(f[5], &count)
	if err := errors.Join(errs...); err != nil || layers < 1 {
		return Params{}, 0, 0, fmt.Errorf("dedup: %q holds a damaged meta hash %q: %v", key, f, err)
	}
	return p, layers, count, nil
}
