package alternatives

import (
	"context"
	"math"

	"github.com/redis/go-redis/v9"
	"github.com/spaolacci/murmur3"
)

// PlainBloom is the textbook Bloom filter of the seeds: M bits in one
// Redis bitmap, K positions an item by double hashing, a SETBIT or a
// GETBIT a position (pipelined here: one round trip a batch, but K
// commands an item, and a check and an add that are two calls).
type PlainBloom struct {
	Key  string
	M, K uint64
}

// SizedFor is the plain filter sized for n items at false-positive rate
// p: m = −n·ln p / ln²2 bits, k = m/n·ln 2 positions.
func SizedFor(key string, n int, p float64) PlainBloom {
	m := math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2))
	return PlainBloom{Key: key, M: uint64(m), K: uint64(math.Round(m / float64(n) * math.Ln2))}
}

// Positions are item's K bits.
func (b PlainBloom) Positions(item string) []int64 {
	h1, h2 := murmur3.Sum128([]byte(item))
	pos := make([]int64, b.K)
	for i := range pos {
		pos[i] = int64((h1 + uint64(i)*h2) % b.M)
	}
	return pos
}

// Add sets the items' bits.
func (b PlainBloom) Add(ctx context.Context, c redis.Cmdable, items []string) error {
	pipe := c.Pipeline()
	for _, it := range items {
		for _, p := range b.Positions(it) {
			pipe.SetBit(ctx, b.Key, p, 1)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Contains says, for each item, whether all its bits are set.
func (b PlainBloom) Contains(ctx context.Context, c redis.Cmdable, items []string) ([]bool, error) {
	pipe := c.Pipeline()
	cmds := make([][]*redis.IntCmd, len(items))
	for i, it := range items {
		for _, p := range b.Positions(it) {
			cmds[i] = append(cmds[i], pipe.GetBit(ctx, b.Key, p))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]bool, len(items))
	for i, bits := range cmds {
		out[i] = true
		for _, c := range bits {
			out[i] = out[i] && c.Val() == 1
		}
	}
	return out, nil
}
