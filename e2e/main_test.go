package e2e

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// parallelTests is how many of this package's parallel tests run at once
// when -parallel is not given. Those tests (the compose scenarios, the
// continuous crawl) spend their minutes waiting on containers, on crawls
// paced by their rate and on the faults' clocks, not on this machine's
// CPU; at GOMAXPROCS (two on CI's machine) they queued behind each other
// for most of the package's 13 minutes.
const parallelTests = 4

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(max(parallelTests, runtime.GOMAXPROCS(0))))
	}
	os.Exit(m.Run())
}
