package dedup

import (
	"math/bits"

	"github.com/spaolacci/murmur3"
)

// locations places item in a layer of nseg segments of segBits bits each.
//
// The filter is blocked: all k bits of an item lie in one segment (one
// Redis string), so the script sets them with a single BITFIELD call
// instead of k SETBIT calls. With segments of at least 32 Kibit
// holding thousands of items each, blocking costs no measurable
// false-positive rate (see TestFalsePositiveRate).
//
// One 128-bit murmur3 hash (seeded with the layer index, so layers are
// independent) gives h1 and h2. The segment comes from the low 32 bits of
// h2; with a and b the reductions of h1 and h2 to [0, segBits), offset i is
// a + i·b + (i³−i)/6 mod segBits (enhanced double hashing: Kirsch
// & Mitzenmacher's "less hashing, same performance", with a cubic term so
// that a small h2 does not repeat offsets). Every reduction to a range takes
// the high word of a 64×64-bit product instead of a modulo: no bias worth the
// name, and no wrap or truncation at 2^32 bits, where peers broke.
func locations(item []byte, layerIndex int, segBits, nseg uint64) loc {
	h1, h2 := murmur3.Sum128WithSeed(item, uint32(layerIndex))
	seg, _ := bits.Mul64(h2<<32, nseg)
	a, _ := bits.Mul64(h1, segBits)
	b, _ := bits.Mul64(h2, segBits)
	return loc{seg: seg, a: a, b: b}
}

// loc is an item's place in one layer: its segment, and the two values
// from which the script derives its k offsets (offset).
type loc struct{ seg, a, b uint64 }

// offset is the i-th bit offset: a + i·b + (i³−i)/6 mod segBits (no wrap:
// a, b < 2^32 and i < 64 keep every term far below 2^64). The client
// computes offsets and sends them as text: Lua turning numbers into
// command arguments was most of the script's cost (bloom.lua).
func (l loc) offset(i, segBits uint64) uint64 {
	return (l.a + i*l.b + (i*i*i-i)/6) % segBits
}
