package neardup

import (
	"math/bits"
	"strings"

	"github.com/spaolacci/murmur3"
)

// SimHash is the 64-bit SimHash (Charikar) of words' shingles of n
// words each (n >= 1; a page shorter than n is one shingle): each
// shingle's 64-bit hash votes on each bit, and a bit is set where more
// shingles had it set than not. Pages whose shingles mostly agree have
// fingerprints a few bits apart.
func SimHash(words []string, n int) uint64 {
	var votes [64]int
	vote := func(f string) {
		h := murmur3.Sum64([]byte(f))
		for b := range 64 {
			if h&(1<<b) != 0 {
				votes[b]++
			} else {
				votes[b]--
			}
		}
	}
	if len(words) < n {
		vote(strings.Join(words, " "))
	}
	for i := 0; i+n <= len(words); i++ {
		vote(strings.Join(words[i:i+n], " "))
	}
	var fp uint64
	for b, v := range votes {
		if v > 0 {
			fp |= 1 << b
		}
	}
	return fp
}

// Distance is the Hamming distance of two fingerprints: the bits in
// which they differ.
func Distance(a, b uint64) int { return bits.OnesCount64(a ^ b) }
