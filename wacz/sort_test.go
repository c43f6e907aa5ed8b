package wacz

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Whatever the lines and however little memory the sorter is given (so
// that it spills runs to disk and merges them), it writes every line
// once, in order, and leaves no run behind.
func TestSorterSortsInBoundedMemory(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		lines := rapid.SliceOfN(rapid.StringMatching(`[a-c,)/ ]{0,12}`), 0, 300).Draw(rt, "lines")
		s := newSorter(t.TempDir(), rapid.IntRange(1, 400).Draw(rt, "limit"))
		for _, l := range lines {
			if err := s.add(l); err != nil {
				rt.Fatal(err)
			}
		}
		spilled := len(s.runs)
		var out bytes.Buffer
		n, err := s.writeTo(&out)
		if err != nil {
			rt.Fatal(err)
		}
		want := slices.Clone(lines)
		slices.Sort(want)
		got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(want) == 0 {
			got = nil
		}
		if n != int64(len(want)) || !slices.Equal(got, want) {
			rt.Fatalf("%d runs: wrote %d lines %q; want %q", spilled, n, got, want)
		}
		if len(s.runs) != 0 {
			rt.Fatalf("runs left: %v", s.runs)
		}
	})
}
