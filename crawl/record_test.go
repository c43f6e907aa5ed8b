package crawl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

// Records say where a URL came from, which attempt fetched it and what the
// earlier ones met, the headers that matter, and how it ended — in the
// words the crawl's counters use.
func TestRecordsAreComplete(t *testing.T) {
	s := redistest.Real(t)
	site, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 30, ListenBase: "127.0.0.90"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate = math.Inf(1), true
	set.Extract = []string{"first_link=body a", "nothing=table td"}
	seedSite(t, s, site, "records", set)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	o := fastOptions("w1")
	o.Out = &out
	w, err := crawl.NewWorker(ctx, s.Client, "records", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	root := site.Roots()[0]
	byURL := map[string]crawl.Record{}
	outcomes := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec crawl.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		byURL[rec.URL] = rec
		outcomes[rec.Outcome]++
	}
	check := func(url string, ok func(crawl.Record) bool, want string) {
		t.Helper()
		if rec, found := byURL[url]; !found || !ok(rec) {
			t.Errorf("%s: %+v; want %s", url, rec, want)
		}
	}
	check(root, func(r crawl.Record) bool { return r.Parent == "" && r.Attempt == 1 && r.Outcome == crawl.OutcomeOK },
		"a seed: no parent, attempt 1, ok")
	check(root, func(r crawl.Record) bool { return len(r.Extract) == 1 && r.Extract["first_link"] == "link" },
		"extract.first_link (the first link's text), and no field for a selector that matches nothing")
	check(root+"p/0.html", func(r crawl.Record) bool { return strings.HasPrefix(r.Parent, root) }, "a parent on the site")
	check(root+"flaky/21.html", func(r crawl.Record) bool {
		return r.Attempt == 2 && len(r.PreviousErrors) == 1 && r.PreviousErrors[0] == "HTTP 500" && r.Outcome == crawl.OutcomeOK
	}, "attempt 2 after an HTTP 500, ok")
	check(root+"missing/13.html", func(r crawl.Record) bool { return r.Status == 404 && r.Outcome == crawl.OutcomeHTTPError },
		"404, http_error")
	check(root+"private/2.html", func(r crawl.Record) bool { return r.Status == 0 && r.Outcome == crawl.OutcomeSkipped },
		"disallowed by robots.txt: skipped")
	check(root+"p/3.html", func(r crawl.Record) bool { return r.Headers["content-length"] != "" && r.Outcome == crawl.OutcomeOK },
		"a content-length header")
	check(root+"files/3.pdf", func(r crawl.Record) bool { return r.Status == 200 && r.DroppedBody && r.Bytes == 0 },
		"a PDF, not a kept type: its body not downloaded")
	st, err := status.Read(ctx, s.Client, "records")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{crawl.OutcomeOK, crawl.OutcomeHTTPError, crawl.OutcomeFailed, crawl.OutcomeSkipped} {
		if st.Counters[o] != outcomes[o] {
			t.Errorf("counter %s = %d; the records say %d", o, st.Counters[o], outcomes[o])
		}
	}
	if n := w.Counters.OK.Load(); n != outcomes[crawl.OutcomeOK] {
		t.Errorf("the worker counted %d ok; the records say %d", n, outcomes[crawl.OutcomeOK])
	}
}

// The records the sweep writes itself (frontier.SweptRecord) read as
// records, each field under the name a worker's records give it.
func TestSweptRecordsAreRecords(t *testing.T) {
	swept := frontier.SweptRecord{URL: "http://a.example/x", Depth: 2, Parent: "http://a.example/", Attempt: 3,
		Outcome: frontier.OutcomeFailed, Error: "timeout (not retried: the page budget is spent)"}
	b, err := json.Marshal(swept)
	if err != nil {
		t.Fatal(err)
	}
	var rec crawl.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.URL != swept.URL || rec.Depth != 2 || rec.Parent != swept.Parent || rec.Attempt != 3 ||
		rec.Outcome != crawl.OutcomeFailed || rec.Error != swept.Error {
		t.Fatalf("%s read as %+v", b, rec)
	}
}
