package neardup

import (
	"encoding/binary"
	"strings"

	"github.com/spaolacci/murmur3"
)

// A page's MinHash signature: Hashes minimum hashes of its set of
// Shingle-word shingles, each kept to its low 16 bits (b-bit minwise
// hashing, Li and König 2010: two pages agree on a value with the
// probability that they share a shingle's minimum, plus 2^-16). The
// fraction of values two signatures agree on estimates the Jaccard
// similarity of their shingle sets.
const (
	Hashes  = 64
	Shingle = 2
	// Bands of Rows values each: two pages are candidates when all the
	// values of one band agree (LSH), which pages of similarity s are
	// with probability 1 - (1 - s^Rows)^Bands: 0.996 at 0.735, 1.5e-4 at 0.055.
	Bands = 16
	Rows  = Hashes / Bands
)

// MinWords is the fewest words a page's main text has for its signature to
// say anything: a page of fewer (a script's shell, a form, a stub) shares
// most of its few shingles with any other such page, and is not judged.
const MinWords = 50

// A Signature is a page's MinHash signature.
type Signature [Hashes]uint16

// Sign is the signature of words' shingles (a page of fewer words than a
// shingle is one shingle; one of none has the signature of none, all
// values 0xffff).
func Sign(words []string) Signature {
	var mins [Hashes]uint64
	for i := range mins {
		mins[i] = ^uint64(0)
	}
	add := func(shingle string) {
		h := murmur3.Sum64([]byte(shingle))
		for i := range mins {
			if v := mix(h + uint64(i)*0x9e3779b97f4a7c15); v < mins[i] {
				mins[i] = v
			}
		}
	}
	switch {
	case len(words) == 0:
	case len(words) < Shingle:
		add(strings.Join(words, " "))
	default:
		for i := 0; i+Shingle <= len(words); i++ {
			add(words[i] + " " + words[i+1])
		}
	}
	var s Signature
	for i, m := range mins {
		s[i] = uint16(m)
	}
	return s
}

// mix is splitmix64's finalizer: the i-th hash function of a shingle is
// mix of its hash plus i times the golden ratio.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Similarity is the fraction of values s and o agree on: the estimate of
// their pages' Jaccard similarity.
func (s Signature) Similarity(o Signature) float64 {
	same := 0
	for i := range s {
		if s[i] == o[i] {
			same++
		}
	}
	return float64(same) / Hashes
}

// Bytes is the signature as Redis keeps it: Hashes values, two bytes
// each, big-endian.
func (s Signature) Bytes() []byte {
	b := make([]byte, 0, 2*Hashes)
	for _, v := range s {
		b = binary.BigEndian.AppendUint16(b, v)
	}
	return b
}
