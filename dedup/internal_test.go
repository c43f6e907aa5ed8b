package dedup

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func within(t *testing.T, what string, hist []int, total int) {
	t.Helper()
	want := float64(total) / float64(len(hist))
	for b, c := range hist {
		if math.Abs(float64(c)-want) > 5*math.Sqrt(want) {
			t.Errorf("%s: bucket %d holds %d of %d, want about %.0f", what, b, c, total, want)
		}
	}
}

// Places must cover the whole layer evenly — segments, blocks, and bits in
// a block — also for segments at the 2^32-bit string limit and layers past
// 2^32 bits, where peers truncated offsets or saturated the filter.
func TestLocationsUniform(t *testing.T) {
	for _, g := range []struct{ blocks, nseg uint64 }{
		{(1<<32 - 128) / 512, 1}, {(1<<32 - 128) / 512, 3}, {(128<<20 - 16) / 64, 40}, {(4<<10 - 16) / 64, 7},
	} {
		const items, k = 64_000, 8
		buckets := uint64(16)
		if g.blocks < 1024 {
			buckets = g.blocks // small segments: a bucket a block
		}
		segHist := make([]int, g.nseg)
		blockHist := make([]int, buckets)
		bitHist := make([]int, 64)
		above32 := 0
		for i := 0; i < items; i++ {
			lc := locations([]byte{byte(i), byte(i >> 8), byte(i >> 16), 'x'}, 0, g.blocks, g.nseg)
			if lc.seg >= g.nseg || lc.block >= g.blocks {
				t.Fatalf("%+v: segment %d or block %d out of range", g, lc.seg, lc.block)
			}
			segHist[lc.seg]++
			blockHist[lc.block*buckets/g.blocks]++
			if (lc.seg*g.blocks+lc.block)*512 >= 1<<32 {
				above32++
			}
			for j := uint64(0); j < k; j++ {
				bitHist[lc.bit(j)/8]++
			}
		}
		within(t, fmt.Sprintf("%+v segments", g), segHist, items)
		within(t, fmt.Sprintf("%+v blocks", g), blockHist, items)
		within(t, fmt.Sprintf("%+v bytes in a block", g), bitHist, items*k)
		if m := g.blocks * 512 * g.nseg; m > 1<<33 && above32 < items/4 {
			t.Errorf("%+v: only %d items above bit 2^32", g, above32)
		}
	}
}

// An item's k bits should be k different bits: a repeat is a lost hash
// function. With b odd and the cubic term, repeats within an item are rare.
func TestBitsDistinctWithinAnItem(t *testing.T) {
	dup := 0
	for i := 0; i < 10000; i++ {
		lc := locations([]byte{byte(i), byte(i >> 8)}, 0, 1<<10, 1)
		seen := map[uint64]bool{}
		for j := uint64(0); j < 9; j++ {
			p := lc.bit(j)
			if p >= 512 {
				t.Fatalf("bit %d out of the block", p)
			}
			if seen[p] {
				dup++
			}
			seen[p] = true
		}
	}
	// Random positions would repeat ~0.07 times per item (birthday odds
	// for 9 of 512): 700 in 10 000 items.
	if dup > 1000 {
		t.Fatalf("%d repeated bits in 10 000 items", dup)
	}
}

// The sizing formula against a simulation of the same blocked filter:
// the rate blockedRate promises is the rate blocks of random items give.
func TestBlockedRateMatchesSimulation(t *testing.T) {
	const blocks, perItem = 2000, 15.6
	const k = 9
	items := int(math.Round(blocks * 512 / perItem))
	r := rand.New(rand.NewPCG(1, 2))
	filter := make([][8]uint64, blocks)
	place := func() (int, [k]int) {
		var bits [k]int
		for j := range bits {
			bits[j] = r.IntN(512)
		}
		return r.IntN(blocks), bits
	}
	for i := 0; i < items; i++ {
		b, bits := place()
		for _, x := range bits {
			filter[b][x/64] |= 1 << (x % 64)
		}
	}
	const probes = 400_000
	fp := 0
	for i := 0; i < probes; i++ {
		b, bits := place()
		all := true
		for _, x := range bits {
			if filter[b][x/64]&(1<<(x%64)) == 0 {
				all = false
				break
			}
		}
		if all {
			fp++
		}
	}
	got, want := float64(fp)/probes, blockedRate(perItem, k)
	// ~500 expected: 5 standard deviations is about 22 %.
	if math.Abs(got-want) > 0.22*want {
		t.Fatalf("simulated rate %.5f, formula %.5f", got, want)
	}
}

// Layer 0 of the classic n = 1M, p = 1 % filter: blocks cost ~5 % more
// than the classic 1.20 bytes per item (1.275 here, segments rounded up), segments fit allocator size
// classes exactly, and k is the blocked filter's best.
func TestLayerGeometry(t *testing.T) {
	p := Params{Capacity: 1_000_000, FPRate: 0.01}.withDefaults()
	l := p.layerAt(0)
	ideal := -1e6 * math.Log(0.01) / (math.Ln2 * math.Ln2)
	if float64(l.bits()) < ideal {
		t.Fatalf("m = %d below the classic %0.f", l.bits(), ideal)
	}
	if perItem := float64(l.bits()) / 8 / 1e6; perItem > 1.28 {
		t.Fatalf("%.3f bytes per item", perItem)
	}
	if c := float64(l.bits()) / 1e6; blockedRate(c, l.k) > 0.01 {
		t.Fatalf("rate %.4f at %.2f bits per item, k=%d: above 1 %%", blockedRate(c, l.k), c, l.k)
	}
	if sz := l.segBits/8 + sdsOverhead; sz&(sz-1) != 0 || l.segBits >= 1<<32 {
		t.Fatalf("segment of %d bytes plus header is not a power of two, or too large", l.segBits/8)
	}
	if l.k != 6 {
		t.Fatalf("k = %d, want 6", l.k)
	}
	l1 := p.layerAt(1)
	if l1.capacity != 2_000_000 || math.Abs(l1.fpRate-0.001) > 1e-12 || l1.k != 9 {
		t.Fatalf("layer 1 = %+v", l1)
	}
	big := Params{Capacity: 1 << 40, FPRate: 0.01}.layerAt(0)
	if big.segBits/8+sdsOverhead != maxSegmentBytes {
		t.Fatalf("huge layer uses %d-byte segments", big.segBits/8)
	}
	// The lowest rate Validate allows still gets a filter, and a sane one.
	tiny := Params{Capacity: 1000, FPRate: 1e-12}.layerAt(3)
	if c := float64(tiny.bits()) / 8000; tiny.k < 20 || c > 400 || blockedRate(float64(tiny.bits())/8000, tiny.k) > 1.01e-15 {
		t.Fatalf("layer 3 at 1e-12: %+v", tiny)
	}
}

// Two items of one block must almost never share all their bits: that is
// a false positive no filter size can fix. Positions from a 64-bit seed
// have 2^64 patterns; double hashing in a 512-bit block had 2^17, and 200 000
// items in one block shared a pattern ~150 000 times.
func TestBitPatternsDoNotCollide(t *testing.T) {
	seen := map[[9]uint64]bool{}
	same := 0
	for i := 0; i < 200_000; i++ {
		lc := locations([]byte(fmt.Sprintf("https://example.com/p/%d", i)), 0, 1, 1)
		var pattern [9]uint64
		for j := range pattern {
			pattern[j] = lc.bit(uint64(j))
		}
		if seen[pattern] {
			same++
		}
		seen[pattern] = true
	}
	if same > 0 {
		t.Fatalf("%d of 200 000 items repeat another's bit pattern", same)
	}
}
