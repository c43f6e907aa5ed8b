package dedup

import (
	"math/bits"

	"github.com/spaolacci/murmur3"
)

// locations places item in a layer of nseg segments of blocks blocks each.
//
// The filter is blocked: all k bits of an item lie in one 512-bit block of
// one segment, so a script reads them with one GETRANGE and, for a new
// item, writes them with one SETRANGE — far cheaper for Redis than k bit
// offsets through BITFIELD, because every string a script creates (an
// offset, a command argument) costs Redis time (bench/README.md).
// Blocks cost a few percent more bits for the same false-positive rate
// (layerAt sizes for it; see TestFalsePositiveRate).
//
// One 128-bit murmur3 hash (seeded with the layer index, so layers are
// independent) gives h1 and h2. The segment comes from the low 32 bits of
// h2, the block from h1 (the high word of a 64×64-bit product, not a
// modulo: no bias worth the name, and no wrap or truncation at 2^32 bits,
// where peers broke). The k bits in the block are 9-bit pieces of a
// SplitMix64 stream seeded with both halves: independent positions, as
// the sizing formula assumes. (Double hashing, a + i·b mod 512, was tried
// first: it has only 2^17 patterns a block, so two URLs of one block shared
// all their bits once in 131 072 — a URL silently lost about once in 70
// crawls of 3 000 pages, and a floor under the rate of later layers.)
func locations(item []byte, layerIndex int, blocks, nseg uint64) loc {
	h1, h2 := murmur3.Sum128WithSeed(item, uint32(layerIndex))
	seg, _ := bits.Mul64(h2<<32, nseg)
	block, _ := bits.Mul64(h1, blocks)
	return loc{seg: seg, block: block, seed: h1 ^ bits.RotateLeft64(h2, 32)}
}

// loc is an item's place in one layer: its segment and block, and the
// seed of its bits in the block (bit).
type loc struct{ seg, block, seed uint64 }

// bit is the i-th bit of the item in its block, 0..511, numbered as Redis
// numbers bits (bit 0 is the high bit of the block's first byte): the i%7-th
// 9-bit piece of the (i/7)-th SplitMix64 output.
func (l loc) bit(i uint64) uint64 {
	return splitmix64(l.seed+(i/7+1)*0x9e3779b97f4a7c15) >> (9 * (i % 7)) & 511
}

// splitmix64 is SplitMix64's output function (Steele, Lea and Flood, 2014).
func splitmix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
