package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	iawarc "github.com/internetarchive/gowarc"
	"github.com/redcrawl/crawler/internal/testsite"
)

// iaRecord is a response or revisit record as the Internet Archive's
// reader sees it.
type iaRecord struct {
	typ, uri, date, digest   string
	profile, refURI, refDate string // a revisit's
	version                  int    // a response's page version ("version N" in its body; -1: none)
	at                       string // file:offset
}

var versionRE = regexp.MustCompile(`<p>version (\d+)</p>`)

// readRecordsWithInternetArchive reads every WARC file in dir with the
// Internet Archive's reader (not the library that wrote them) and returns
// their response and revisit records.
func readRecordsWithInternetArchive(t *testing.T, dir string) []iaRecord {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	var out []iaRecord
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		r, err := iawarc.NewReader(f)
		if err != nil {
			t.Fatalf("internetarchive/gowarc: %s: %v", file, err)
		}
		for {
			rec, err := r.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("internetarchive/gowarc: %s: %v", file, err)
			}
			h := rec.Header
			if typ := h.Get("WARC-Type"); typ == "response" || typ == "revisit" {
				x := iaRecord{typ: typ, uri: h.Get("WARC-Target-URI"), date: h.Get("WARC-Date"), digest: h.Get("WARC-Payload-Digest"),
					profile: h.Get("WARC-Profile"), refURI: h.Get("WARC-Refers-To-Target-URI"), refDate: h.Get("WARC-Refers-To-Date"),
					version: -1, at: fmt.Sprintf("%s:%d", filepath.Base(file), rec.Offset)}
				if _, err := rec.Content.Seek(0, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				block, err := io.ReadAll(rec.Content)
				if err != nil {
					t.Fatal(err)
				}
				if m := versionRE.FindSubmatch(block); m != nil && typ == "response" {
					fmt.Sscan(string(m[1]), &x.version)
				}
				out = append(out, x)
			}
			rec.Content.Close()
		}
		r.Close()
		f.Close()
	}
	return out
}

// recrawlRecord is what the test reads of an exported record.
type recrawlRecord struct {
	URL     string `json:"url"`
	Status  int    `json:"status"`
	Bytes   int64  `json:"bytes"`
	Outcome string `json:"outcome"`
	Change  string `json:"change"`
	WARC    *struct {
		Revisit string `json:"revisit"`
	} `json:"warc"`
}

func (h *harness) records() []recrawlRecord { return exported[recrawlRecord](h) }

// exported is the crawl's records as export gives them, each read as a T.
func exported[T any](h *harness) []T {
	h.t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(h.run("export")))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var out []T
	for sc.Scan() {
		var r T
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func awaitWorkers(t *testing.T, ps ...*proc) {
	t.Helper()
	for _, p := range ps {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("worker %s: %v\n%s", p.id, err, p.log.String())
			}
		case <-time.After(4 * time.Minute):
			t.Fatalf("worker %s did not finish", p.id)
		}
	}
}

// The acceptance of a recrawl: a first crawl of a 2 000-page site archived
// in WARC; a tenth of its pages change; `crawler recrawl --all` and two
// workers again: every page is asked for with its validators, the
// unchanged ones are answered 304 and archived as revisit records, the
// changed ones archived whole; the WARCs hold every page's current version;
// the recrawl receives at most a fifth of the first crawl's bytes; and an
// independent reader finds every revisit record pointing at an earlier
// response of the same URL (or of the same payload digest).
func TestRecrawlRefetchesWithValidatorsAndArchivesRevisits(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	h, _, site := setup(t, testsite.Config{Hosts: 2, Pages: 1000, Versioned: true, ListenBase: "127.0.0.70"}, "--rate", "inf")
	dir := t.TempDir()
	awaitWorkers(t, h.startWorker("w1", "--warc-dir", dir), h.startWorker("w2", "--warc-dir", dir))
	requireTruth(t, site)
	first := site.Stats()
	firstRecords := h.records()
	var firstBytes int64
	for _, r := range firstRecords {
		firstBytes += r.Bytes
	}

	changed := site.Change(0.1)
	out := string(h.run("recrawl", "--all"))
	if !strings.Contains(out, "pages due for a refetch") {
		t.Fatalf("recrawl said %q", out)
	}
	started := time.Now()
	awaitWorkers(t, h.startWorker("w3", "--warc-dir", dir), h.startWorker("w4", "--warc-dir", dir))
	took := time.Since(started)
	second := site.Stats()
	all := h.records()
	again := all[len(firstRecords):]
	var againBytes int64
	changes := map[string]int{}
	for _, r := range again {
		againBytes += r.Bytes
		changes[r.Change]++
	}

	// status and export count the changes as the records say them.
	st := h.status()
	for _, c := range []string{"changed", "unchanged"} {
		if got := st.Counters["change:"+c]; got != int64(changes[c]) {
			t.Errorf("status counts change:%s %d; the recrawl's records %d", c, got, changes[c])
		}
	}
	if got := st.Counters["unchanged"]; got != int64(second.NotModified-first.NotModified) {
		t.Errorf("status counts %d unchanged (304) pages; the site sent %d 304s", got, second.NotModified-first.NotModified)
	}
	if _, stderr, err := h.try("export"); err != nil || !strings.Contains(stderr, fmt.Sprintf("%d changed, %d unchanged", changes["changed"], changes["unchanged"])) {
		t.Errorf("export said %q, %v; want the changes counted", stderr, err)
	}
	// Every page fetched the first time was asked for with a validator.
	asked := map[string]bool{}
	for _, u := range second.Conditional {
		asked[u] = true
	}
	pages := 0
	for _, r := range firstRecords {
		if r.Status == 200 && strings.Contains(r.URL, "/p/") || strings.HasSuffix(r.URL, "/") {
			pages++
			if !asked[r.URL] {
				t.Errorf("%s: refetched without a validator", r.URL)
			}
		}
	}
	if pages < 1900 {
		t.Fatalf("only %d pages in the first crawl; want the site's 2 000", pages)
	}
	// Changed pages came whole; the others 304, as revisits.
	versions := site.Versions()
	isChanged := map[string]bool{}
	for _, u := range changed {
		isChanged[u] = true
	}
	byURL := map[string]recrawlRecord{}
	for _, r := range again {
		byURL[r.URL] = r
	}
	for u := range versions {
		r, ok := byURL[u]
		switch {
		case !ok:
			t.Errorf("%s: not refetched", u)
		case isChanged[u] && (r.Status != 200 || r.Change != "changed" || r.WARC == nil || r.WARC.Revisit != ""):
			t.Errorf("%s changed: refetched as %+v; want a 200 archived whole, change 'changed'", u, r)
		case !isChanged[u] && (r.Status != 304 || r.Outcome != "unchanged" || r.Change != "unchanged" || r.WARC == nil ||
			!strings.HasSuffix(r.WARC.Revisit, "/server-not-modified")):
			t.Errorf("%s unchanged: refetched as %+v; want a 304 archived as a server-not-modified revisit", u, r)
		}
	}
	if notModified := second.NotModified - first.NotModified; notModified < len(versions)-len(changed) {
		t.Errorf("the site answered %d 304s; want at least the %d unchanged pages", notModified, len(versions)-len(changed))
	}

	// The WARCs, read by an independent reader.
	recs := readRecordsWithInternetArchive(t, dir)
	responses := map[string]iaRecord{} // uri + " " + date -> the response
	byDigest := map[string]bool{}
	latest := map[string]iaRecord{}
	revisits := 0
	for _, r := range recs {
		if r.typ == "response" {
			responses[r.uri+" "+r.date] = r
			byDigest[r.digest] = true
		}
		if l, ok := latest[r.uri]; !ok || r.date > l.date {
			latest[r.uri] = r
		}
	}
	for _, r := range recs {
		if r.typ != "revisit" {
			continue
		}
		revisits++
		ref, ok := responses[r.refURI+" "+r.refDate]
		switch {
		case !ok:
			t.Errorf("revisit of %s at %s refers to %s at %s: no such response", r.uri, r.at, r.refURI, r.refDate)
		case ref.date >= r.date:
			t.Errorf("revisit of %s at %s refers to a response no earlier than itself", r.uri, r.at)
		case ref.uri != r.uri && !(strings.HasSuffix(r.profile, "/identical-payload-digest") && byDigest[r.digest]):
			t.Errorf("revisit of %s at %s refers to another URL's response without its digest", r.uri, r.at)
		}
	}
	stale := 0
	for u, v := range versions {
		l, ok := latest[u]
		if ok && l.typ == "revisit" {
			l, ok = responses[l.refURI+" "+l.refDate]
		}
		if !ok || l.version != v.Version {
			stale++
			if stale <= 10 {
				t.Errorf("%s: the WARCs' latest copy is version %d; the site's is %d", u, l.version, v.Version)
			}
		}
	}
	ratio := float64(againBytes) / float64(firstBytes)
	siteRatio := float64(second.Bytes-first.Bytes) / float64(first.Bytes)
	if ratio > 0.2 || siteRatio > 0.2 {
		t.Errorf("the recrawl received %d bytes (%.1f %%) of the first crawl's %d; the site sent %.1f %%; want at most 20 %%",
			againBytes, 100*ratio, firstBytes, 100*siteRatio)
	}
	keys := make([]string, 0, len(changes))
	for k := range changes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var summary []string
	for _, k := range keys {
		summary = append(summary, fmt.Sprintf("%s %d", k, changes[k]))
	}
	t.Logf("first crawl: %d records, %d body bytes (site: %d); %d pages changed; recrawl in %v: %d records (%s), %d body bytes = %.1f %% (site: %.1f %%); %d revisit records, %d 304s",
		len(firstRecords), firstBytes, first.Bytes, len(changed), took.Round(100*time.Millisecond), len(again), strings.Join(summary, ", "),
		againBytes, 100*ratio, 100*siteRatio, revisits, second.NotModified-first.NotModified)
}
