package dedup

import (
	"errors"
	"fmt"
	"math"
)

// Params size a scalable Bloom filter.
//
// Layer 0 holds Capacity items at false-positive rate FPRate. When it is
// full, layer l is added, holding Capacity·Growth^l items at rate
// FPRate·Tightening^l; an item is present if any layer has it. The overall
// rate is at most 1 − Π(1 − p_l) ≤ FPRate·(1 + r/(1−r)) (1.11·FPRate with
// the default r = 0.1), however far the crawl outgrows its plan, and exactly
// FPRate while it stays within plan: layer 0 is sized for FPRate itself, so
// a crawl that planned right pays the classic ≈1.2 bytes per URL at 1 %.
type Params struct {
	Capacity   int64   // n: items layer 0 is planned for (> 0)
	FPRate     float64 // p: false-positive rate of a full layer 0 (0 < p < 1)
	Growth     int     // capacity factor between layers (2..16); 0 means 2
	Tightening float64 // rate factor between layers (0 < r < 1); 0 means 0.1
}

// ErrParams reports parameters that cannot make a filter.
var ErrParams = errors.New("dedup: invalid parameters")

func (p Params) withDefaults() Params {
	if p.Growth == 0 {
		p.Growth = 2
	}
	if p.Tightening == 0 {
		p.Tightening = 0.1
	}
	return p
}

// Validate rejects parameters that would make no filter, or a silly one
// (error rate ≥ 1 meant billions of hash functions in one peer; growth 0
// crashed a server in another).
func (p Params) Validate() error {
	p = p.withDefaults()
	switch {
	case p.Capacity <= 0:
		return fmt.Errorf("%w: capacity %d must be above 0", ErrParams, p.Capacity)
	case p.Capacity > 1<<40:
		return fmt.Errorf("%w: capacity %d is above 2^40", ErrParams, p.Capacity)
	case !(p.FPRate > 0 && p.FPRate < 1):
		return fmt.Errorf("%w: false-positive rate %v must be between 0 and 1 (exclusive)", ErrParams, p.FPRate)
	case p.FPRate < 1e-12:
		return fmt.Errorf("%w: false-positive rate %v is below 1e-12", ErrParams, p.FPRate)
	case p.Growth < 2 || p.Growth > 16:
		return fmt.Errorf("%w: growth %d must be 2..16", ErrParams, p.Growth)
	case !(p.Tightening > 0 && p.Tightening < 1):
		return fmt.Errorf("%w: tightening %v must be between 0 and 1 (exclusive)", ErrParams, p.Tightening)
	}
	return nil
}

const (
	minSegmentBytes = 4 << 10   // 4 KiB
	maxSegmentBytes = 128 << 20 // 128 MiB: each up-front allocation stalls Redis only briefly
	// sdsOverhead is room for a Redis string's header and terminator, so a
	// segment of 2^j − 16 bytes fills one allocator size class exactly.
	sdsOverhead = 16
	// segmentsPerLayer aims at this many segments, so the rounding of the
	// last one wastes at most 1/64 of the layer.
	segmentsPerLayer = 64
)

// layer is the geometry of one layer.
type layer struct {
	capacity int64   // items it holds when full
	fpRate   float64 // its false-positive rate when full
	k        int     // hash functions
	segBits  int64   // bits per segment (< 2^32: one Redis string)
	segments int64   // number of segments
}

// bits is m, the layer's size in bits.
func (l layer) bits() int64 { return l.segBits * l.segments }

// layerAt computes layer i's geometry: m = −n·ln p / ln²2, rounded up to
// whole segments, and k = round(m/n · ln 2).
func (p Params) layerAt(i int) layer {
	p = p.withDefaults()
	capacity := float64(p.Capacity) * math.Pow(float64(p.Growth), float64(i))
	rate := p.FPRate * math.Pow(p.Tightening, float64(i))
	m := math.Ceil(-capacity * math.Log(rate) / (math.Ln2 * math.Ln2))
	totalBytes := int64(math.Ceil(m / 8))
	seg := int64(minSegmentBytes)
	for seg < maxSegmentBytes && seg*segmentsPerLayer < totalBytes {
		seg *= 2
	}
	segBytes := seg - sdsOverhead
	n := (totalBytes + segBytes - 1) / segBytes
	l := layer{capacity: int64(capacity), fpRate: rate, segBits: segBytes * 8, segments: n}
	// k for the planned m, not the rounded-up one: extra bits then only
	// lower the rate, and small layers (one 4 KiB segment for a few hundred
	// items) do not pay for dozens of hash functions.
	l.k = int(math.Round(m / capacity * math.Ln2))
	if l.k < 1 {
		l.k = 1
	}
	return l
}
