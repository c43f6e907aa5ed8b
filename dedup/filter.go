package dedup

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

var (
	// ErrMismatch: the filter exists in Redis with other parameters.
	ErrMismatch = errors.New("dedup: filter exists with other parameters")
	// ErrNotFound: Attach found no filter at the key.
	ErrNotFound = errors.New("dedup: no filter at this key")
	// ErrRefused: the guard of a composed script refused the call (see
	// bloom_run); nothing was written, and the refusal is the tail.
	ErrRefused = errors.New("dedup: refused by the script's guard")
)

var (
	//go:embed *.lua
	luaFiles embed.FS
	// Lua is the filter's Lua: its module bloom (bloom.lua), which a
	// script that requires it calls as bloom_run(kb, ab), and the
	// filter's own scripts. bloom_run returns the reply to pass back, the
	// index of the first key and argument after the filter's, and B; with
	// Exec, the filter's keys and arguments come first (kb = ab = 1), then
	// one argument per item, then the caller's keys and fixed arguments.
	// The script must return the reply it got (it may act on its flags
	// first), which is how frontier/ marks a URL seen and queues it in one
	// atomic step.
	Lua         = script.NewLib("dedup", luaFiles)
	addScript   = Lua.Script("addnew")
	initScript  = Lua.Script("init")
	allocScript = Lua.Script("alloc")
)

// Filter is a scalable Bloom filter stored in Redis bitmaps. All state lives
// in Redis; a Filter only caches the layer count, which the scripts check.
// It is safe for use by several goroutines.
type Filter struct {
	c      redis.Scripter
	key    string
	params Params

	mu       sync.Mutex
	geometry []layer // layerAt(i), cached
	layers   int     // as last seen in Redis
	count    int64   // as last seen in Redis
}

// Params are the filter's parameters as stored in Redis.
func (f *Filter) Params() Params { return f.params }

// Key is the filter's meta key; segment keys are Key()+":<layer>:<segment>".
func (f *Filter) Key() string { return f.key }

func (f *Filter) segmentKey(l int, s int64) string {
	return f.key + ":" + strconv.Itoa(l) + ":" + strconv.FormatInt(s, 10)
}

// layer returns layer i's geometry (cached). Call with f.mu held.
func (f *Filter) layer(i int) layer {
	for len(f.geometry) <= i {
		f.geometry = append(f.geometry, f.params.layerAt(len(f.geometry)))
	}
	return f.geometry[i]
}

// AddNew marks items as seen, and reports for each whether it was new
// (absent before this call). Test and set are one atomic script per batch
// of up to maxBatch items: of two workers adding the same URL, exactly one
// gets true. An item repeated within items is new only at its first place.
func (f *Filter) AddNew(ctx context.Context, items []string) ([]bool, error) {
	flags, _, err := f.exec(ctx, addScript, true, items, nil, nil, nil)
	return flags, err
}

// Contains reports for each item whether it may have been added (with the
// filter's false-positive rate) or certainly was not.
func (f *Filter) Contains(ctx context.Context, items []string) ([]bool, error) {
	flags, _, err := f.exec(ctx, addScript, false, items, nil, nil, nil)
	return flags, err
}

// Exec runs a script that requires the module bloom (Lua) in 'add' mode over items. perItem, if
// not nil, holds one argument per item, passed right after the filter's;
// keys and fixed follow. It returns the flags bloom_run computed.
func (f *Filter) Exec(ctx context.Context, s *redis.Script, items []string, perItem []any, keys []string, fixed []any) ([]bool, error) {
	flags, _, err := f.ExecBatch(ctx, s, items, perItem, keys, func(int, int, []bool, bool) []any { return fixed })
	return flags, err
}

// ExecBatch is Exec for a script whose own work must happen once per batch
// although the items may take several calls: items go in chunks of at most
// maxBatch (each chunk one atomic call, in order), fixed(start, end, flags,
// last) gives the fixed arguments of the call for items[start:end] (flags:
// those of items[:start]; last: no call follows), and tail is what the
// last call replied after its flags. The script runs once even for no items.
// A call its guard refuses ends the batch with ErrRefused, the refusal as
// the tail, and the flags of the calls before it.
func (f *Filter) ExecBatch(ctx context.Context, s *redis.Script, items []string, perItem []any, keys []string,
	fixed func(start, end int, flags []bool, last bool) []any) (flags []bool, tail []any, err error) {
	if perItem != nil && len(perItem) != len(items) {
		return nil, nil, fmt.Errorf("dedup: %d per-item arguments for %d items", len(perItem), len(items))
	}
	return f.exec(ctx, s, true, items, perItem, keys, fixed)
}

// bloom_run's reply statuses (bloom.lua names them alike).
const (
	statusStale     = 0 // the layer count changed: nothing written, retry
	statusOK        = 1 // done: a flag per item follows
	statusAllocate  = 2 // layers must be allocated first: nothing written
	statusNextLayer = 3 // the next layer's places are needed: nothing written
	statusRefused   = 4 // the caller's guard refused: nothing written
)

// maxBatch bounds one script call; exec also keeps a batch within one
// spare layer's capacity, so a batch can add at most one layer.
const maxBatch = 1024

func (f *Filter) exec(ctx context.Context, s *redis.Script, add bool, items []string, perItem []any, keys []string,
	fixed func(start, end int, flags []bool, last bool) []any) ([]bool, []any, error) {
	out := make([]bool, 0, len(items))
	chunk := f.MaxBatch()
	if len(items) == 0 && !add {
		return out, nil, nil
	}
	var tail []any
	// A composed script runs even for no items: its body has work of its own.
	for start := 0; start == 0 || start < len(items); start += chunk {
		end := min(start+chunk, len(items))
		var extra, fx []any
		if perItem != nil {
			extra = perItem[start:end]
		}
		if fixed != nil {
			fx = fixed(start, end, out, end == len(items))
		}
		flags, rest, err := f.execChunk(ctx, s, add, items[start:end], extra, keys, fx)
		if err != nil {
			return out, rest, err
		}
		out = append(out, flags...)
		tail = rest
	}
	return out, tail, nil
}

func (f *Filter) execChunk(ctx context.Context, s *redis.Script, add bool, items []string, perItem []any, keys []string, fixed []any) ([]bool, []any, error) {
	withNext := false
	for attempt := 0; attempt < 10; attempt++ {
		k, a := f.args(items, add, withNext, perItem, keys, fixed)
		res, err := s.Run(ctx, f.c, k, a...).Slice()
		if err != nil {
			return nil, nil, fmt.Errorf("dedup: %w", err)
		}
		flags, tail, again, err := f.read(ctx, res, len(items))
		switch {
		case err != nil:
			return nil, tail, err
		case again == retryNextLayer:
			withNext = true // the batch may fill the last layer after all
		case again == retryNone:
			return flags, tail, nil
		}
	}
	return nil, nil, errors.New("dedup: layer count kept changing under this batch")
}

// args are a call's keys and arguments: the filter's, then perItem, keys
// and fixed.
func (f *Filter) args(items []string, add, withNext bool, perItem []any, keys []string, fixed []any) ([]string, []any) {
	k, a := f.prepare(items, add, withNext)
	k = append(k, keys...)
	a = append(a, perItem...)
	return k, append(a, fixed...)
}

// How a reply asks for its call to be made again (nothing was written).
const (
	retryNone      = iota // the reply stands
	retryStale            // positions were stale, or layers were allocated: as it was
	retryNextLayer        // with the next layer's places
)

// read takes bloom_run's reply for n items: the flags and the tail after
// them, or that the call must be made again (layers it asked for are
// allocated first), or an error (ErrRefused, with the refusal as tail).
func (f *Filter) read(ctx context.Context, res []any, n int) ([]bool, []any, int, error) {
	if len(res) < 3 {
		return nil, nil, retryNone, fmt.Errorf("dedup: unexpected script reply %v", res)
	}
	status, _ := res[0].(int64)
	count, _ := res[1].(int64)
	layers, _ := res[2].(int64)
	f.mu.Lock()
	f.count, f.layers = count, int(layers)
	f.mu.Unlock()
	switch status {
	case statusStale:
		return nil, nil, retryStale, nil // another worker added a layer: recompute positions
	case statusAllocate:
		need, _ := res[3].(int64)
		if err := f.allocate(ctx, int(need)); err != nil {
			return nil, nil, retryNone, err
		}
		return nil, nil, retryStale, nil
	case statusNextLayer:
		return nil, nil, retryNextLayer, nil
	case statusRefused:
		return nil, res[3:], retryNone, ErrRefused
	case statusOK:
	default:
		return nil, nil, retryNone, fmt.Errorf("dedup: unknown script status %d", status)
	}
	if len(res) < 3+n {
		return nil, nil, retryNone, fmt.Errorf("dedup: script replied %d flags for %d items", len(res)-3, n)
	}
	flags := make([]bool, n)
	for i := range flags {
		flags[i] = res[3+i] == int64(1)
	}
	return flags, res[3+n:], retryNone, nil
}

// prepare builds the keys and arguments bloom_run expects. In 'add' mode
// the next layer's positions go along only when the batch may fill the
// last layer (withNext, or the count last seen says so): they double the
// arguments, and Redis pays for each.
// A batch touches at most 2^16 segments (one index is 2 bytes): maxBatch
// items in at most two layers are far fewer.
func (f *Filter) prepare(items []string, add, withNext bool) ([]string, []any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	L := f.layers
	next := add && (withNext || f.count+int64(len(items)) > f.cumulative(L))
	nl := L
	if next {
		nl = L + 1
	}
	geo := make([]layer, nl)
	for i := range geo {
		geo[i] = f.layer(i)
	}
	mode := "test"
	var spare int64
	if add {
		mode, spare = "add", -1
		if next {
			spare = geo[L].capacity
		}
	}
	keys := []string{f.key}
	type seg struct {
		l int
		s int64
	}
	index := map[seg]int{}
	args := make([]any, 0, 6+2*nl+len(items)*nl)
	args = append(args, mode, L, len(items), 0, f.cumulative(L), spare)
	for _, g := range geo {
		args = append(args, g.k, g.segBits)
	}
	var packed []byte
	for _, item := range items {
		for l, g := range geo {
			lc := locations([]byte(item), l, uint64(g.blocks), uint64(g.segments))
			id := seg{l, int64(lc.seg)}
			idx, ok := index[id]
			if !ok {
				idx = len(keys) - 1
				index[id] = idx
				keys = append(keys, f.segmentKey(l, id.s))
			}
			args = append(args, string(packPlace(packed[:0], idx, lc, g.k)))
		}
	}
	args[3] = len(keys) - 1
	return keys, args
}

// packPlace appends an item's place in a layer as bloom.lua reads it: the
// segment's key index (2 bytes), the block's first and last byte offset
// (each a length byte and decimal digits), and for each of the k bits its
// byte in the block and its mask (Redis numbers bit 0 as a byte's high bit).
func packPlace(b []byte, segIndex int, lc loc, k int) []byte {
	b = append(b, byte(segIndex>>8), byte(segIndex))
	first := lc.block * blockBytes
	for _, off := range []uint64{first, first + blockBytes - 1} {
		var d [20]byte
		digits := strconv.AppendUint(d[:0], off, 10)
		b = append(append(b, byte(len(digits))), digits...)
	}
	for i := 0; i < k; i++ {
		bit := lc.bit(uint64(i))
		b = append(b, byte(bit/8), byte(0x80>>(bit%8)))
	}
	return b
}

// allocate creates every segment of layers 0..need-1, each whole, one
// script call per segment (so no single call stalls Redis for long), and
// then records that they exist. The calls are pipelined, allocBatch to a
// round trip: the default filter's 60 segments cost 2 round trips, not 60
// (30 s over a 400 ms link). The one that records comes last, after every
// segment of the same slot, so the record never runs ahead of the bitmaps.
func (f *Filter) allocate(ctx context.Context, need int) error {
	f.mu.Lock()
	geo := make([]layer, need)
	for l := range geo {
		geo[l] = f.layer(l)
	}
	f.mu.Unlock()
	type segment struct {
		key  string
		size int64
		mark int
	}
	var all []segment
	for l, g := range geo {
		for s := int64(0); s < g.segments; s++ {
			seg := segment{key: f.segmentKey(l, s), size: g.segBits / 8}
			if l == need-1 && s == g.segments-1 {
				seg.mark = need
			}
			all = append(all, seg)
		}
	}
	pc, pipelined := f.c.(interface{ Pipeline() redis.Pipeliner })
	if pipelined {
		if err := allocScript.Load(ctx, f.c).Err(); err != nil {
			return fmt.Errorf("dedup: allocate: %w", err)
		}
	}
	for len(all) > 0 {
		batch := all[:min(len(all), allocBatch)]
		all = all[len(batch):]
		if pipelined {
			pipe := pc.Pipeline()
			for _, seg := range batch {
				allocScript.EvalSha(ctx, pipe, []string{f.key, seg.key}, seg.size, seg.mark)
			}
			_, err := pipe.Exec(ctx)
			if err == nil {
				continue
			}
			if !script.IsNoScript(err) {
				return fmt.Errorf("dedup: allocate: %w", err)
			}
			// The script cache was flushed meanwhile: this batch one by one.
		}
		for _, seg := range batch {
			if err := allocScript.Run(ctx, f.c, []string{f.key, seg.key}, seg.size, seg.mark).Err(); err != nil {
				return fmt.Errorf("dedup: allocate: %w", err)
			}
		}
	}
	return nil
}

// allocBatch is how many segment allocations go in one pipeline.
const allocBatch = 32

// cumulative is the number of items layers 0..n-1 hold when full. Call with f.mu held.
func (f *Filter) cumulative(n int) int64 {
	var sum int64
	for i := 0; i < n; i++ {
		sum += f.layer(i).capacity
	}
	return sum
}
