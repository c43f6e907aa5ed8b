package e2e

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/internal/testsite"
)

// renderRecord is a record as export gives it, with what rendering adds.
type renderRecord struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Worker string `json:"worker"`
	WARC   *struct {
		File   string `json:"file"`
		Offset int64  `json:"offset"`
	} `json:"warc"`
	Render *struct {
		Subresources int `json:"subresources"`
		WARC         *struct {
			File   string `json:"file"`
			Offset int64  `json:"offset"`
		} `json:"warc"`
	} `json:"render"`
}

// The crawl of a site whose third host is an application shell, without
// rendering: it finds the shells and nothing a script builds, as the
// site's plain truth says.
func TestWithoutRenderingOnlyTheShellsAreFound(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	h, _, site := setup(t, testsite.Config{Hosts: 3, Pages: 40, Scripted: 1, ListenBase: "127.0.0.236"}, "--rate", "inf", "--render", "never")
	h.startWorker("w1").awaitCleanExit(t)
	plain := map[string]bool{}
	for _, u := range site.PlainTruth() {
		plain[u] = true
	}
	got := map[string]bool{}
	for _, r := range exported[renderRecord](h) {
		if r.Status != 0 {
			got[r.URL] = true
		}
	}
	for u := range plain {
		if !got[u] {
			t.Errorf("a plain crawl missed %s", u)
		}
	}
	only := 0
	for _, u := range site.Truth() {
		if !plain[u] {
			only++
			if got[u] {
				t.Errorf("a crawl that does not render fetched %s, which only a browser finds", u)
			}
		}
	}
	if only == 0 {
		t.Fatal("the site has no URL only a browser finds: the test proves nothing")
	}
	t.Logf("without rendering: %d of %d truth URLs (%d only a browser finds)", len(site.Truth())-only, len(site.Truth()), only)
}

// The acceptance of rendering: two plain workers and one with two browser
// tabs, --render auto. Every truth URL is fetched, those only a browser
// finds by a render worker only (no plain worker leases a URL of the
// render lane); no host gets more than rate + burst requests in a second,
// the pages' scripts and JSON included; no request reaches the site but
// through the fetcher, and the script's reach outside the scope is
// refused; the render worker killed mid-crawl and another started, none
// is missing; and the WARC files read by an independent reader hold a
// conversion record, referring to its page's response, for every
// rendered page.
func TestRenderWorkersCrawlTheScriptBuiltHost(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	chromium(t)
	const rate, burst = 10, 2
	h, _, site := setup(t, testsite.Config{Hosts: 3, Pages: 80, Scripted: 1, ListenBase: "127.0.0.240"},
		"--rate", fmt.Sprint(rate), "--burst", fmt.Sprint(burst), "--render", "auto")
	dir := t.TempDir()
	w1 := h.startWorker("w1", "--warc-dir", dir)
	w2 := h.startWorker("w2", "--warc-dir", dir)
	r1 := h.startWorker("r1", "--warc-dir", dir, "--render", "2", "-c", "2", "--render-timeout", "10s")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n := 0
		for _, r := range exported[renderRecord](h) {
			if r.Worker == "r1+render" && r.Render != nil {
				n++
			}
		}
		if n >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the render worker rendered %d pages in 3 minutes\n%s", n, r1.log.String())
		}
		time.Sleep(100 * time.Millisecond) // polling the crawl's records: they are the event
	}
	r1.cmd.Process.Signal(syscall.SIGKILL)
	<-r1.done
	killed := time.Now()
	t.Logf("SIGKILLed the render worker r1 after it rendered 5 pages")
	r2 := h.startWorker("r2", "--warc-dir", dir, "--render", "2", "-c", "2", "--render-timeout", "10s")
	for _, p := range []*proc{w1, w2, r2} {
		p.awaitCleanExit(t)
	}
	// r1's WARC files were left open: a worker started once no live
	// worker holds them and a lease has passed since they were written
	// closes them (crawl.Worker.closeOrphans).
	time.Sleep(time.Until(killed.Add(11 * time.Second)))
	h.startWorker("closer", "--warc-dir", dir).awaitCleanExit(t)

	requireTruth(t, site)
	recs := exported[renderRecord](h)
	for _, u := range site.Missing() {
		for _, r := range recs {
			if r.URL == u {
				t.Logf("the record of %s, never fetched: %+v", u, r)
			}
		}
	}
	if t.Failed() {
		t.Logf("status:\n%s\nr1:\n%s\nr2:\n%s", h.run("status"), r1.log.String(), r2.log.String())
	}
	ss := site.Stats()
	if len(ss.Browser) > 0 {
		t.Errorf("requests that did not come through the fetcher (a browser's User-Agent): %v", ss.Browser)
	}
	if len(ss.Trapped) > 0 {
		t.Errorf("the script's requests outside the scope reached %v", ss.Trapped)
	}
	logs := r1.log.String() + r2.log.String()
	for _, trap := range site.Traps() {
		if !strings.Contains(logs, trap) {
			t.Errorf("no render worker says it refused %s, outside the scope", trap)
		}
	}
	requirePace(t, ss, rate, burst) // the pages' scripts and JSON among the requests
	// The shells' one script, asked for by every page of two render
	// workers (one killed) and the samples: fetched once in the crawl.
	app := "http://" + site.Hosts()[len(site.Hosts())-1] + "/app.js"
	if n := ss.Repeated[app]; n > 0 {
		t.Errorf("%s was fetched %d times; the crawl's shared cache should have fetched it once", app, n)
	}
	plain := map[string]bool{}
	for _, u := range site.PlainTruth() {
		plain[u] = true
	}
	// The script-built host's pages that only a browser finds are queued
	// once its samples put it in the render lane: none may be leased by a
	// plain worker. (Pages of the other hosts that only its links lead to
	// are plain pages, any worker's.)
	shells := site.Hosts()[len(site.Hosts())-1]
	rendered := 0
	for _, r := range recs {
		if r.Status == 0 {
			continue
		}
		if u, _ := url.Parse(r.URL); u.Host == shells && !plain[r.URL] && !strings.HasSuffix(r.Worker, "+render") {
			t.Errorf("%s, which only a browser finds, was fetched by the plain worker %s", r.URL, r.Worker)
		}
		if r.Render != nil {
			rendered++
		}
	}
	if rendered == 0 {
		t.Fatal("no page was rendered")
	}

	files, at, _ := readWARCs(t, dir)
	checkWithInternetArchive(t, files, func(file string, offset int64, uri, digest string) bool {
		got, ok := at[fmt.Sprintf("%s:%d", file, offset)]
		return ok && got.uri == uri && got.digest == digest
	}, len(at))
	recsAt := readRecordHeads(t, files)
	for _, r := range recs {
		if r.Render == nil {
			continue
		}
		if r.Render.WARC == nil || r.WARC == nil {
			t.Errorf("%s: rendered, but its record names no conversion record (%+v)", r.URL, r)
			continue
		}
		conv, ok := recsAt[fmt.Sprintf("%s:%d", r.Render.WARC.File, r.Render.WARC.Offset)]
		resp := recsAt[fmt.Sprintf("%s:%d", r.WARC.File, r.WARC.Offset)]
		switch {
		case !ok || conv.typ != gowarc.Conversion:
			t.Errorf("%s: no conversion record at %+v", r.URL, *r.Render.WARC)
		case conv.refersTo != resp.id || conv.uri != r.URL:
			t.Errorf("%s: its conversion record refers to %s (%s); its response record is %s", r.URL, conv.refersTo, conv.uri, resp.id)
		}
	}
	t.Logf("%d records, %d rendered, each with its conversion record; %d WARC files", len(recs), rendered, len(files))
}

// recordHead is what the test reads of a WARC record.
type recordHead struct {
	typ               gowarc.RecordType
	id, refersTo, uri string
}

// readRecordHeads reads every record of files: "file:offset" -> its head.
func readRecordHeads(t *testing.T, files []string) map[string]recordHead {
	t.Helper()
	out := map[string]recordHead{}
	for _, f := range files {
		r, err := gowarc.NewWarcFileReader(f, 0)
		if err != nil {
			t.Fatal(err)
		}
		for rec, err := range r.Records() {
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			hd := rec.WarcRecord.WarcHeader()
			out[fmt.Sprintf("%s:%d", filepath.Base(f), rec.Offset)] = recordHead{rec.WarcRecord.Type(),
				hd.Get(gowarc.WarcRecordID), hd.Get(gowarc.WarcRefersTo), hd.Get(gowarc.WarcTargetURI)}
			rec.Close()
		}
		r.Close()
	}
	return out
}
