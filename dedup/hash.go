package dedup

import (
	"math/bits"

	"github.com/spaolacci/murmur3"
)

// locations places item in a layer of nseg segments of blocks blocks each.
//
// The filter is blocked: all k bits of an item lie in one 512-bit block of
// one segment, so a script reads them with one GETRANGE and, for a new
// item, writes them with one SETRANGE — measured three times cheaper for
// Redis than k bit offsets through BITFIELD, because every string a
// script creates (an offset, a command argument) costs Redis ~0.4 µs.
// Blocks cost a few percent more bits for the same false-positive rate
// (layerAt sizes for it; see TestFalsePositiveRate).
//
// One 128-bit murmur3 hash (seeded with the layer index, so layers are
// independent) gives h1 and h2. The segment comes from the low 32 bits of
// h2, the block from h1 (the high word of a 64×64-bit product, not a
// modulo: no bias worth the name, and no wrap or truncation at 2^32 bits,
// where peers broke). The bits in the block are a + i·b + (i³−i)/6 mod 512,
// i = 0..k−1, with a from the low 9 bits of h1 and b odd from the high
// half of h2 (enhanced double hashing: Kirsch & Mitzenmacher's "less
// hashing, same performance"; b odd so that a + i·b runs through all 512
// positions before repeating, the cubic term so that b = 1 does not give a
// run of neighbours).
func locations(item []byte, layerIndex int, blocks, nseg uint64) loc {
	h1, h2 := murmur3.Sum128WithSeed(item, uint32(layerIndex))
	seg, _ := bits.Mul64(h2<<32, nseg)
	block, _ := bits.Mul64(h1, blocks)
	return loc{seg: seg, block: block, a: h1 & 511, b: (h2>>32)&511 | 1}
}

// loc is an item's place in one layer: its segment and block, and the two
// values from which its k bit positions in the block derive (bit).
type loc struct{ seg, block, a, b uint64 }

// bit is the i-th bit of the item in its block, 0..511, numbered as Redis
// numbers bits (bit 0 is the high bit of the block's first byte).
func (l loc) bit(i uint64) uint64 {
	return (l.a + i*l.b + (i*i*i-i)/6) % 512
}
