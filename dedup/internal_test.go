package dedup

import (
	"fmt"
	"math"
	"testing"
)

// Positions must cover the whole layer evenly, also for layers past 2^32
// bits and segments at the 2^32-bit string limit, where peers truncated
// offsets or saturated the filter.
func TestLocationsUniformAcross2to32(t *testing.T) {
	within := func(t *testing.T, what string, hist []int, total int) {
		t.Helper()
		want := float64(total) / float64(len(hist))
		for b, c := range hist {
			if math.Abs(float64(c)-want) > 5*math.Sqrt(want) {
				t.Errorf("%s: bucket %d holds %d of %d, want about %.0f", what, b, c, total, want)
			}
		}
	}
	for _, g := range []struct{ segBits, nseg uint64 }{
		{1<<32 - 128, 1}, {1<<32 - 128, 3}, {(128<<20 - 16) * 8, 40}, {(4<<10 - 16) * 8, 7},
	} {
		const items, k, buckets = 64_000, 8, 16
		segHist := make([]int, g.nseg)
		offHist := make([]int, buckets)
		above32 := 0
		for i := 0; i < items; i++ {
			lc := locations([]byte{byte(i), byte(i >> 8), byte(i >> 16), 'x'}, 0, g.segBits, g.nseg)
			if lc.seg >= g.nseg {
				t.Fatalf("%+v: segment %d out of range", g, lc.seg)
			}
			segHist[lc.seg]++
			for j := uint64(0); j < k; j++ {
				o := lc.offset(j, g.segBits)
				if o >= g.segBits {
					t.Fatalf("%+v: offset %d out of range", g, o)
				}
				if lc.seg*g.segBits+o >= 1<<32 {
					above32++
				}
				offHist[o*buckets/g.segBits]++
			}
		}
		within(t, fmt.Sprintf("%+v segments", g), segHist, items)
		within(t, fmt.Sprintf("%+v offsets", g), offHist, items*k)
		if m := g.segBits * g.nseg; m > 1<<33 && above32 < items*k/4 {
			t.Errorf("%+v: only %d positions above 2^32", g, above32)
		}
	}
}

func TestLocationsDistinctWithinAnItem(t *testing.T) {
	// A constant h2 would repeat positions; the cubic term must keep k positions apart.
	dup := 0
	for i := 0; i < 10000; i++ {
		lc := locations([]byte{byte(i), byte(i >> 8)}, 0, 1<<20, 1)
		seen := map[uint64]bool{}
		for j := uint64(0); j < 10; j++ {
			p := lc.offset(j, 1<<20)
			if seen[p] {
				dup++
			}
			seen[p] = true
		}
	}
	// Birthday odds for 10 positions in 2^20 bits: ~45 per 10 000 items.
	if dup > 150 {
		t.Fatalf("%d repeated positions in 10 000 items", dup)
	}
}

// Layer 0 of the classic n = 1M, p = 1 % filter fits allocator size classes
// exactly and costs at most 1.22 bytes per item.
func TestLayerGeometry(t *testing.T) {
	p := Params{Capacity: 1_000_000, FPRate: 0.01}.withDefaults()
	l := p.layerAt(0)
	ideal := -1e6 * math.Log(0.01) / (math.Ln2 * math.Ln2)
	if float64(l.bits()) < ideal {
		t.Fatalf("m = %d below the ideal %0.f", l.bits(), ideal)
	}
	if perItem := float64(l.bits()) / 8 / 1e6; perItem > 1.22 {
		t.Fatalf("%.3f bytes per item", perItem)
	}
	if sz := l.segBits/8 + sdsOverhead; sz&(sz-1) != 0 || l.segBits >= 1<<32 {
		t.Fatalf("segment of %d bytes plus header is not a power of two, or too large", l.segBits/8)
	}
	if l.k != 7 {
		t.Fatalf("k = %d, want 7", l.k)
	}
	l1 := p.layerAt(1)
	if l1.capacity != 2_000_000 || math.Abs(l1.fpRate-0.001) > 1e-12 {
		t.Fatalf("layer 1 = %+v", l1)
	}
	big := Params{Capacity: 1 << 40, FPRate: 0.01}.layerAt(0)
	if big.segBits/8+sdsOverhead != maxSegmentBytes {
		t.Fatalf("huge layer uses %d-byte segments", big.segBits/8)
	}
}
