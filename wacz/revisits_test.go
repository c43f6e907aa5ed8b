package wacz_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/wacz"
)

// A revisit record in a package resolves to the response it refers to
// (by its URI and date, as a replay tool finds its payload): packaged with
// the earlier crawl's folder, the package verifies and counts it;
// packaged alone, or beside a response of that URI at another second,
// Verify names the revisit and its missing target.
func TestARevisitResolvesToAResponseInThePackage(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	body := "<html><title>same</title>the same payload</html>"
	earlier := func(when time.Time) []string {
		return warcDir(t, "w1", []archive.Exchange{{URL: "http://a.test/", Started: when, Raw: raw("http://a.test/", "200 OK", "text/html", body)}})
	}
	dir := t.TempDir()
	w, err := archive.Open(archive.Config{Dir: dir, Worker: "w2", Software: "RedCrawl test", Crawl: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Archive(archive.Exchange{URL: "http://b.test/", Started: at.Add(time.Hour), Raw: raw("http://b.test/", "200 OK", "text/html", body)},
		func(string) *archive.Revisit {
			return &archive.Revisit{Profile: archive.IdenticalPayloadDigest, URI: "http://a.test/", Date: at}
		}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	second, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	pack := func(files []string) (wacz.Checked, error) {
		var b bytes.Buffer
		if _, err := wacz.Pack(&b, sources(files), wacz.Options{}); err != nil {
			t.Fatal(err)
		}
		return wacz.Verify(bytes.NewReader(b.Bytes()), int64(b.Len()))
	}
	if ck, err := pack(append(earlier(at), second...)); err != nil || ck.Revisits != 1 {
		t.Errorf("both crawls: %+v, %v; want one revisit resolved", ck, err)
	}
	for name, files := range map[string][]string{"alone": second, "another second": append(earlier(at.Add(time.Second)), second...)} {
		if _, err := pack(files); err == nil || !strings.Contains(err.Error(), "revisit record of http://b.test/ refers to the response of http://a.test/") {
			t.Errorf("%s: %v; want the unresolved revisit named", name, err)
		}
	}
}
