package e2e

import (
	"os"
	"testing"

	"github.com/redcrawl/crawler/internal/netlab"
	"github.com/redcrawl/crawler/internal/redistest"
)

// The lab's tests run in a small internet of their own (internal/netlab):
// hosts on public-looking addresses with DNS names, no --allow-private,
// and nothing with a route out.

// labBin names the crawler binary, built before the test enters its
// namespace (which reaches no module proxy).
const labBin = "REDCRAWL_LAB_BIN"

// lab builds the crawler and runs the test in its namespace: inside is
// true there, where the test goes on, and false in the test's first
// process, which has taken its result.
func lab(t *testing.T) (bin string, inside bool) {
	t.Helper()
	if testing.Short() {
		t.Skip("a crawl in a network namespace: skipped with -short")
	}
	if netlab.Inside(t) {
		return os.Getenv(labBin), true
	}
	bin = build(t)
	return bin, netlab.Enter(t, labBin+"="+bin)
}

// labHarness is a harness for a crawl in the lab, on a redis-server of its
// own.
func labHarness(t *testing.T, bin string) *harness {
	s := redistest.Real(t)
	return &harness{t: t, bin: bin, redis: s.URL(), procs: map[string]*proc{}}
}

// labRecord is a record as export gives it, with what the lab's tests
// read.
type labRecord struct {
	URL     string `json:"url"`
	Status  int    `json:"status"`
	Proto   string `json:"proto"`
	Outcome string `json:"outcome"`
	Error   string `json:"error"`
	Worker  string `json:"worker"`
	Render  *struct {
		Dialogs int `json:"dialogs"`
		Popups  int `json:"popups"`
	} `json:"render"`
}

// byURL are the crawl's records by URL (the last of a URL's).
func byURL(h *harness) map[string]labRecord {
	out := map[string]labRecord{}
	for _, r := range exported[labRecord](h) {
		out[r.URL] = r
	}
	return out
}
