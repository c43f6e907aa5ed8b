package dedup

import (
	"context"
	"fmt"
	"math"
)

var statsScript = Lua.Script("stats")

// LayerStats describes one layer.
type LayerStats struct {
	Capacity int64   `json:"capacity"` // items it holds when full
	Items    int64   `json:"items"`    // items added to it
	Bits     int64   `json:"bits"`     // m
	K        int     `json:"k"`        // bits set per item
	Segments int64   `json:"segments"` // Redis strings it is split into
	BitsSet  int64   `json:"bits_set"` // bits that are 1
	FPRate   float64 `json:"fp_rate"`  // estimated from the fill (estimatedRate)
}

// Stats describes the whole filter.
type Stats struct {
	Params
	Layers  []LayerStats `json:"layers"`
	Count   int64        `json:"count"` // items added (new ones only)
	Bits    int64        `json:"bits"`  // Σ m over layers in use
	BitsSet int64        `json:"bits_set"`
	// EstimatedFPRate is 1 − Π(1 − FPRate_l): the chance that a URL never
	// seen is reported as seen, and so silently skipped, right now.
	EstimatedFPRate float64 `json:"estimated_fp_rate"`
}

// Stats reads the filter's state (BITCOUNT over every segment: O(m), meant
// for status pages, not for the hot path).
func (f *Filter) Stats(ctx context.Context) (Stats, error) {
	_, layers, count, err := readMeta(ctx, f.c, f.key, nil)
	if err != nil {
		return Stats{}, err
	}
	f.mu.Lock()
	geo := make([]layer, layers)
	var keys []string
	for l := range geo {
		geo[l] = f.layer(l)
		for s := int64(0); s < geo[l].segments; s++ {
			keys = append(keys, f.segmentKey(l, s))
		}
	}
	f.mu.Unlock()
	counts, err := statsScript.Run(ctx, f.c, keys).Int64Slice()
	if err != nil {
		return Stats{}, fmt.Errorf("dedup: stats: %w", err)
	}
	st := Stats{Params: f.params, Count: count}
	notFP := 1.0
	left := count
	i := 0
	for l, g := range geo {
		ls := LayerStats{Capacity: g.capacity, Bits: g.bits(), K: g.k, Segments: g.segments}
		ls.Items = min(left, g.capacity)
		if l == len(geo)-1 {
			ls.Items = left
		}
		left -= ls.Items
		for s := int64(0); s < g.segments; s++ {
			ls.BitsSet += counts[i]
			i++
		}
		ls.FPRate = estimatedRate(ls.BitsSet, ls.Bits, ls.K)
		notFP *= 1 - ls.FPRate
		st.Bits += ls.Bits
		st.BitsSet += ls.BitsSet
		st.Layers = append(st.Layers, ls)
	}
	st.EstimatedFPRate = 1 - notFP
	return st, nil
}

// estimatedRate is a layer's false-positive rate judged from its fill: the
// items the fill implies (n = −m/k · ln(1 − fill)), at the blocked
// filter's rate for m/n bits an item. (fill^k, the classic estimate, is
// too low for a blocked filter: crowded blocks answer yes more often.)
func estimatedRate(set, bits int64, k int) float64 {
	fill := float64(set) / float64(bits)
	switch {
	case set == 0:
		return 0
	case fill >= 1:
		return 1
	}
	n := -float64(bits) / float64(k) * math.Log1p(-fill)
	return blockedRate(float64(bits)/n, k)
}
