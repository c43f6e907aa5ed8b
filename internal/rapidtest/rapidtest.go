// Package rapidtest keeps property tests (pgregory.net/rapid) to CI's
// time under the race detector, where each draw costs several times more
// (miniredis runs the crawler's Lua in Go; every goroutine's memory
// access is watched): fewer draws there, rapid's 100 elsewhere, and
// whatever -rapid.checks says when given.
package rapidtest

import (
	"flag"
	"strconv"
	"testing"
)

// given reports whether -rapid.checks was given on the command line.
func given() bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	return set
}

// FewerChecks has rapid draw n cases (not its 100) for the rest of test
// t, unless -rapid.checks said how many.
func FewerChecks(t testing.TB, n int) {
	if given() {
		return
	}
	old := flag.Lookup("rapid.checks").Value.String()
	if err := flag.Set("rapid.checks", strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { flag.Set("rapid.checks", old) })
}

// FewerUnderRace is FewerChecks(t, n) under the race detector, and
// nothing without it.
func FewerUnderRace(t testing.TB, n int) {
	if RaceOn {
		FewerChecks(t, n)
	}
}

// UnderRace sets the draws of every property of a package's tests to n
// under the race detector, unless -rapid.checks said how many: for
// TestMain, after flag.Parse.
func UnderRace(n int) {
	if RaceOn && !given() {
		if err := flag.Set("rapid.checks", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
}
