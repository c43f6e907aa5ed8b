package shape

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxShare is the most of the repository's non-test Go lines one package
// (a directory) may hold: a package that grows past it has grown two
// concerns, and is split by role, as crawl/ and frontier/ were.
const maxShare = 0.15

// No package holds more than 15 % of the repository's non-test Go lines.
func TestNoPackageHoldsMoreThanItsShare(t *testing.T) {
	root := filepath.Join("..", "..")
	lines := map[string]int{}
	total := 0
	repoFiles(t, root, func(rel, p string) {
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), "\n")
		lines[filepath.ToSlash(filepath.Dir(rel))] += n
		total += n
	})
	if total < 10000 {
		t.Fatalf("%d non-test Go lines found; want the whole repository's", total)
	}
	dirs := make([]string, 0, len(lines))
	for d := range lines {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool { return lines[dirs[i]] > lines[dirs[j]] })
	for i, d := range dirs {
		share := float64(lines[d]) / float64(total)
		if i < 5 {
			t.Logf("%5d lines  %4.1f %%  %s", lines[d], 100*share, d)
		}
		if share > maxShare {
			t.Errorf("%s holds %d of the repository's %d non-test Go lines (%.1f %%); at most %.0f %%", d, lines[d], total, 100*share, 100*maxShare)
		}
	}
}
