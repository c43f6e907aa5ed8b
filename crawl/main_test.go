package crawl

import (
	"flag"
	"os"
	"testing"

	"github.com/redcrawl/crawler/internal/rapidtest"
)

// TestMain runs the timing property tests (timing_test.go) with 40 draws
// each, not rapid's 100, under the race detector, unless -rapid.checks
// says otherwise: there each draw costs ten times more (the simulation's
// miniredis runs exchange.lua in Go), CI runs with -race, and its budget
// is 20 minutes on two cores. A plain 'go test ./...' draws 100.
func TestMain(m *testing.M) {
	flag.Parse()
	rapidtest.UnderRace(40)
	os.Exit(m.Run())
}
