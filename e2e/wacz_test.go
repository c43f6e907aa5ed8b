package e2e

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// packDemo packages the compose demo's WARC folder (its three workers'
// files) with 'crawler wacz', and checks the package: 'crawler wacz
// --verify' accepts it (every file's hash, every index line at a whole
// gzip member holding its URL's record at its date, every page indexed),
// it holds the three files byte for byte, as many index lines as the
// files have responses (the demo keeps no revisits), and the Internet
// Archive's reader reads every record of the WARC files as packed.
func packDemo(t *testing.T, h *harness, dir string, files []string, responses int) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "demo.wacz")
	said := string(h.run("wacz", "--out", out, "--title", "the compose demo", dir))
	verified := string(h.run("wacz", "--verify", out))
	if !strings.Contains(verified, "verified") {
		t.Fatalf("wacz --verify: %s", verified)
	}
	packed := unpackWARCs(t, out)
	for name, b := range packed {
		orig, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(orig) != string(b) {
			t.Errorf("archive/%s in the package is not the file as written (%v)", name, err)
		}
	}
	if len(packed) != len(files) {
		t.Errorf("the package holds %d WARC files; the demo wrote %d", len(packed), len(files))
	}
	if want := "verified: "; !strings.Contains(verified, want) || !strings.Contains(verified, fmt.Sprintf(" %d index lines", responses)) {
		t.Errorf("wacz --verify says %q; want %d index lines, one a response", verified, responses)
	}
	t.Logf("%s%s", said, verified)
}

// unpackWARCs reads a WACZ's WARC files (archive/), has the Internet
// Archive's reader read every record of each as packed (or the test
// fails), and returns them by name.
func unpackWARCs(t *testing.T, wacz string) map[string][]byte {
	t.Helper()
	zr, err := zip.OpenReader(wacz)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	dir := t.TempDir()
	out := map[string][]byte{}
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, "archive/")
		if !ok {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		readWithInternetArchive(t, path)
		out[name] = b
	}
	return out
}
