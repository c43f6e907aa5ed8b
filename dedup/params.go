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
	Capacity   int64   `json:"capacity"`   // n: items layer 0 is planned for (> 0)
	FPRate     float64 `json:"fp_rate"`    // p: false-positive rate of a full layer 0 (0 < p < 1)
	Growth     int     `json:"growth"`     // capacity factor between layers (2..16); 0 means 2
	Tightening float64 `json:"tightening"` // rate factor between layers (0 < r < 1); 0 means 0.1
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

// blockBytes is the size of a block: all k bits of an item lie in one
// 512-bit block (one cache line), which a script reads with one GETRANGE
// and writes with one SETRANGE.
const blockBytes = 64

// layer is the geometry of one layer.
type layer struct {
	capacity int64   // items it holds when full
	fpRate   float64 // its false-positive rate when full
	k        int     // bits set per item, all in one block
	segBits  int64   // bits per segment (< 2^32: one Redis string)
	blocks   int64   // blocks per segment (the last bytes of a segment, less than a block, are unused)
	segments int64   // number of segments
}

// bits is m, the layer's usable size in bits.
func (l layer) bits() int64 { return l.blocks * blockBytes * 8 * l.segments }

// layerAt computes layer i's geometry: the fewest bits per item, and the k,
// for which a blocked filter's false-positive rate (blockedRate) is at
// most the layer's rate, rounded up to whole segments. Blocking costs a few
// percent more bits than the classic m = −n·ln p / ln²2 at the usual rates
// (+4 % at 1 %, +8 % at 0.1 %), more at very low rates.
func (p Params) layerAt(i int) layer {
	p = p.withDefaults()
	capacity := float64(p.Capacity) * math.Pow(float64(p.Growth), float64(i))
	rate := p.FPRate * math.Pow(p.Tightening, float64(i))
	c, k := blockedSize(rate)
	m := math.Ceil(capacity * c)
	totalBytes := int64(math.Ceil(m / 8))
	seg := int64(minSegmentBytes)
	for seg < maxSegmentBytes && seg*segmentsPerLayer < totalBytes {
		seg *= 2
	}
	segBytes := seg - sdsOverhead
	blocks := segBytes / blockBytes
	totalBlocks := (totalBytes + blockBytes - 1) / blockBytes
	n := (totalBlocks + blocks - 1) / blocks
	return layer{capacity: int64(capacity), fpRate: rate, k: k, segBits: segBytes * 8, blocks: blocks, segments: n}
}

// blockedSize returns the fewest bits per item c (to 1 %) and the k with
// which a filter of 512-bit blocks keeps its false-positive rate ≤ rate.
func blockedSize(rate float64) (float64, int) {
	c := -math.Log(rate) / (math.Ln2 * math.Ln2) // the classic filter's, a lower bound
	for step := 0; ; step++ {
		best, bestK := 1.0, 1
		for k := 1; k <= 64; k++ {
			r := blockedRate(c, k)
			if r > best {
				break // the rate falls, then rises with k
			}
			best, bestK = r, k
		}
		if best <= rate || step == 2000 {
			return c, bestK
		}
		c *= 1.01
	}
}

// blockedRate is the false-positive rate of a Bloom filter of 512-bit
// blocks with c bits per item and k bits set per item: a block holds a
// Poisson number j of items (mean 512/c), and a query's k bits are all set
// with probability (1 − (1 − 1/512)^{jk})^k (Putze, Sanders and Singler,
// "Cache-, hash- and space-efficient Bloom filters", 2007).
func blockedRate(c float64, k int) float64 {
	const b = blockBytes * 8
	mean := b / c
	sum, logP := 0.0, -mean
	for j := 0; j < int(6*mean)+80; j++ {
		set := -math.Expm1(float64(j*k) * math.Log1p(-1.0/b))
		sum += math.Exp(logP) * math.Pow(set, float64(k))
		logP += math.Log(mean) - math.Log(float64(j+1))
	}
	return sum
}

// FirstLayerBytes is what a filter of p allocates when it is made (its
// layer 0, whole): the memory its Redis must have to spare.
func (p Params) FirstLayerBytes() int64 {
	l := p.layerAt(0)
	return l.segments * (l.segBits/8 + sdsOverhead)
}
