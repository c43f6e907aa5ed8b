package wacz_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/wacz"
)

// craft rewrites a good package: edit changes its files (by name), and
// extra entries are written raw, with the headers given; the manifest's
// hashes and the digest are made to agree, as an attacker would.
func craft(t *testing.T, good []byte, edit func(map[string][]byte), extra ...*zip.FileHeader) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	files, order := map[string][]byte{}, []string{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[f.Name], order = b, append(order, f.Name)
	}
	edit(files)
	var dp map[string]any
	json.Unmarshal(files["datapackage.json"], &dp)
	for _, r := range dp["resources"].([]any) {
		r := r.(map[string]any)
		sum := sha256.Sum256(files[r["path"].(string)])
		r["hash"], r["bytes"] = "sha256:"+hex.EncodeToString(sum[:]), len(files[r["path"].(string)])
	}
	files["datapackage.json"], _ = json.Marshal(dp)
	sum := sha256.Sum256(files["datapackage.json"])
	files["datapackage-digest.json"], _ = json.Marshal(map[string]string{"path": "datapackage.json", "hash": "sha256:" + hex.EncodeToString(sum[:])})
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, name := range order {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(files[name])
	}
	for _, h := range extra {
		w, err := zw.CreateRaw(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("\x1f\x8b not much of a gzip member"))
	}
	zw.Close()
	return out.Bytes()
}

// Crafted packages fail --verify with one error naming what is wrong, and
// never make it allocate what they claim: an entry whose header claims
// 2^62 bytes with an index line pointing 2^61 bytes into it, a compressed
// index's block of 2^61 bytes, and entries named ../../x or /etc/x.
func TestACraftedWACZFailsVerifyWithoutAllocatingItsClaims(t *testing.T) {
	u := "http://site.test/"
	files := warcDir(t, "w1", []archive.Exchange{{URL: u, Started: time.Now(), Raw: raw(u, "200 OK", "text/html", "<title>t</title>")}})
	var good bytes.Buffer
	if _, err := wacz.Pack(&good, sources(files), wacz.Options{TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	evilLine := `zzz,evil)/ 20261204000000 {"url":"http://evil/","length":"2305843009213693952","offset":"0","filename":"evil.warc.gz"}` + "\n"
	addLine := func(m map[string][]byte) { m["indexes/index.cdxj"] = append(m["indexes/index.cdxj"], evilLine...) }
	huge := &zip.FileHeader{Name: "archive/evil.warc.gz", Method: zip.Store, UncompressedSize64: 1 << 62, CompressedSize64: 1 << 62, CRC32: 0}
	small := &zip.FileHeader{Name: "archive/evil.warc.gz", Method: zip.Store, UncompressedSize64: 1 << 62, CompressedSize64: 26, CRC32: 0}
	var compressed bytes.Buffer
	if _, err := wacz.Pack(&compressed, sources(files), wacz.Options{TempDir: t.TempDir(), Index: wacz.IndexCompressed}); err != nil {
		t.Fatal(err)
	}
	hugeBlock := func(m map[string][]byte) {
		idx := string(m["indexes/index.idx"])
		i := strings.LastIndex(idx, `"length":`)
		j := i + strings.IndexAny(idx[i:], ",}")
		m["indexes/index.idx"] = []byte(idx[:i] + `"length": 2305843009213693952` + idx[j:])
	}
	for _, c := range []struct {
		name string
		pkg  []byte
		says string
	}{
		{"a compressed index's block 2^61 bytes long", craft(t, compressed.Bytes(), hugeBlock), "its block is not inside index.cdx.gz"},
		{"an entry claiming 2^62 bytes", craft(t, good.Bytes(), addLine, huge), "archive/evil.warc.gz claims"},
		{"a stored entry whose sizes disagree", craft(t, good.Bytes(), addLine, small), "archive/evil.warc.gz is stored, yet its header claims"},
		{"an index line 2^61 bytes long", craft(t, good.Bytes(), addLine, &zip.FileHeader{Name: "archive/evil.warc.gz", Method: zip.Store,
			UncompressedSize64: 26, CompressedSize64: 26}), "outside its file's 26 bytes"},
		{"an entry named ../../x", craft(t, good.Bytes(), func(map[string][]byte) {}, &zip.FileHeader{Name: "../../x", Method: zip.Store,
			UncompressedSize64: 26, CompressedSize64: 26}), `entry "../../x" is not a relative path`},
		{"an entry named /etc/x", craft(t, good.Bytes(), func(map[string][]byte) {}, &zip.FileHeader{Name: "/etc/x", Method: zip.Store,
			UncompressedSize64: 26, CompressedSize64: 26}), `entry "/etc/x" is not a relative path`},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := wacz.Verify(bytes.NewReader(c.pkg), int64(len(c.pkg)))
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s (%d bytes): %v; want one line saying %q", c.name, len(c.pkg), err, c.says)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("%s: verifying allocated %d MiB", c.name, grew>>20)
		}
	}
}

// A response whose HTTP head is one line of 64 MB (gzip makes it a few
// hundred kilobytes of WARC) is indexed without its status and type, as a
// head past the bound is, and packaging it holds nothing like its size:
// the head is read in bounded pieces, never whole.
func TestAHugeHTTPHeadIsIndexedInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MB header: skipped with -short")
	}
	u, v := "http://site.test/huge", "http://site.test/"
	res := "HTTP/1.1 200 OK\r\nX-Huge: " + strings.Repeat("a", 64<<20) + "\r\nContent-Type: text/html\r\n\r\n<title>huge</title>"
	huge := &fetch.Raw{Request: []byte("GET /huge HTTP/1.1\r\nHost: site.test\r\n\r\n"), Response: []byte(res), RemoteIP: "127.0.0.1"}
	files := warcDir(t, "w1", []archive.Exchange{{URL: u, Started: time.Now(), Raw: huge},
		{URL: v, Started: time.Now(), Raw: raw(v, "200 OK", "text/html", "<title>fine</title>")}})
	huge, res = nil, ""
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var out bytes.Buffer
	sum, err := wacz.Pack(&out, sources(files), wacz.Options{TempDir: t.TempDir()})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("packaging a 64 MB head allocated %d MiB", grew>>20)
	}
	if sum.Captures != 2 || sum.Pages != 1 {
		t.Errorf("%+v; want both captures indexed, the page of the fine one", sum)
	}
	idx := unzipped(t, out.Bytes(), "indexes/index.cdxj")
	if !strings.Contains(idx, `"url":"http://site.test/huge"`) || strings.Contains(idx, `"url":"http://site.test/huge","mime"`) {
		t.Errorf("the huge head's line: %s; want it indexed, without its type", idx)
	}
}

// A capture whose URI is so long that its index line would pass the
// bound every reader of the index keeps (1 MiB) is left out of the index
// and counted: the package verifies, with any sort memory; an empty file
// among the inputs is said, as damage is.
func TestACaptureOfAHugeURIIsLeftOutAndSaid(t *testing.T) {
	long := "http://site.test/" + strings.Repeat("x", 1<<20)
	ok := "http://site.test/"
	files := warcDir(t, "w1", []archive.Exchange{{URL: long, Started: time.Now(), Raw: raw(long, "200 OK", "text/html", "<title>t</title>")},
		{URL: ok, Started: time.Now(), Raw: raw(ok, "200 OK", "text/html", "<title>t</title>")}})
	empty := filepath.Join(t.TempDir(), "empty.warc.gz")
	os.WriteFile(empty, nil, 0o644)
	for _, memory := range []int{0, 1} {
		var out bytes.Buffer
		sum, err := wacz.Pack(&out, sources(append(files, empty)), wacz.Options{TempDir: t.TempDir(), SortMemory: memory})
		if err != nil {
			t.Fatalf("sort memory %d: %v", memory, err)
		}
		if sum.TooLong != 1 || sum.Captures != 1 || len(sum.Unindexed) != 1 || !strings.Contains(sum.Unindexed[0].Error(), "holds no WARC record") {
			t.Errorf("sort memory %d: %+v; want the long one left out, the other indexed, the empty file said", memory, sum)
		}
		if _, err := wacz.Verify(bytes.NewReader(out.Bytes()), int64(out.Len())); err != nil {
			t.Errorf("sort memory %d: the package does not verify: %v", memory, err)
		}
	}
}

// A WARC file with a gzip member cut short in its middle (a torn write):
// the records after the damage are indexed all the same, as a replay
// tool reads past it, the damage is said, and the package verifies.
func TestTheRecordsAfterADamagedMemberAreIndexed(t *testing.T) {
	var ex []archive.Exchange
	for i := range 100 {
		u := fmt.Sprintf("http://site.test/p/%d", i)
		ex = append(ex, archive.Exchange{URL: u, Started: time.Now(), Raw: raw(u, "200 OK", "text/html", fmt.Sprintf("<title>%d</title>", i))})
	}
	files := warcDir(t, "w1", ex)
	whole, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	// Cut 40 bytes out of the member that starts at the 50th gzip magic.
	at, n := 0, 0
	for i := 0; i+2 < len(whole); i++ {
		if whole[i] == 0x1f && whole[i+1] == 0x8b && whole[i+2] == 0x08 {
			if n++; n == 50 {
				at = i
				break
			}
		}
	}
	damaged := append(append([]byte{}, whole[:at+30]...), whole[at+70:]...)
	bad := filepath.Join(t.TempDir(), "torn.warc.gz")
	if err := os.WriteFile(bad, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sum, err := wacz.Pack(&out, sources([]string{bad}), wacz.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Unindexed) != 1 || sum.Captures < 95 {
		t.Errorf("%+v; want the damage said and the records after it indexed (at least 95 of 100 responses)", sum)
	}
	if _, err := wacz.Verify(bytes.NewReader(out.Bytes()), int64(out.Len())); err != nil {
		t.Errorf("the package does not verify: %v", err)
	}
	t.Logf("%d of 100 responses indexed past the damage: %v", sum.Captures, sum.Unindexed)
}
