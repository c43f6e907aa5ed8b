package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The compose demo with compose.s3.yml, as its header tells a user to run
// it: the workers upload their WARC files to the 's3' service (the
// crawler's own test store), which is stopped for 20 s mid-crawl; every
// worker still exits 0 with no file left on its disk, the 'wacz' service
// packs the prefix, and the package holds every file a record names, one
// index line a response the site gave, each record read by the Internet
// Archive's reader.
func TestComposeDemoUploadsToObjectStorage(t *testing.T) {
	requireEngine(t)
	t.Parallel()
	p := upCompose(t, pickTool(t), composeConfig{
		// Half the demo's rate (20, burst 2): the crawl lasts about a
		// minute, so that the outage (20 s) begins while files are still
		// to upload even where the watcher's first look comes late (CI,
		// loaded: it came after the crawl's 30 s, every file uploaded).
		seedFlags: []string{"--rate", "10", "--burst", "1"},
		files:     []string{"../compose.s3.yml"},
		publish:   "  s3:\n    ports: [\"127.0.0.1::9000\"]\n",
		// 'wacz' waits for the workers to exit, which 'up -d' would wait for.
		services: []string{"redis", "site", "seed", "worker", "results", "s3"},
	})
	client := func() *minio.Client { // its port is published anew each time the store starts
		// compose.s3.yml's AWS_* variables: the store serves only requests they sign
		store, err := minio.New(p.port("s3", 9000, 1), &minio.Options{Creds: credentials.NewStaticV4("redcrawl", "redcrawl-demo", "")})
		if err != nil {
			t.Fatal(err)
		}
		return store
	}
	list := func(store *minio.Client) []string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var keys []string
		for o := range store.ListObjects(ctx, "crawl", minio.ListObjectsOptions{Prefix: "compose/", Recursive: true}) {
			if o.Err != nil {
				t.Fatalf("listing the store: %v", o.Err)
			}
			keys = append(keys, o.Key)
		}
		return keys
	}
	objects := func() []string { return list(client()) }
	// Watched through one client: asking Docker for the store's port at
	// each look took seconds on a loaded machine, long enough for the
	// whole crawl to upload before the outage began.
	store := client()
	deadline := time.Now().Add(2 * time.Minute)
	for len(list(store)) == 0 { // an event: the first file closed and uploaded
		if time.Now().After(deadline) {
			t.Fatal("no WARC file in the store within 2 minutes of the crawl's start")
		}
		time.Sleep(200 * time.Millisecond)
	}
	before := len(list(store))
	p.compose("stop", "s3")
	time.Sleep(20 * time.Second) // the outage itself: its length is what is tested
	p.compose("start", "s3")
	if code := p.awaitResults(5 * time.Minute); code != 0 {
		t.Fatalf("results exited %d; want 0 (the crawl done)", code)
	}
	for _, c := range p.everContainers("worker") {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		out, err := exec.CommandContext(ctx, "docker", "wait", c).Output()
		cancel()
		if code, _ := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || code != 0 {
			t.Errorf("worker %s exited %q (%v); want 0, every file uploaded", c[:12], strings.TrimSpace(string(out)), err)
		}
	}
	v := p.judge(0)
	if left, _ := filepath.Glob(filepath.Join(p.out, "warc", "*.warc.gz*")); len(left) > 0 {
		t.Errorf("WARC files left on the workers' disk: %v", left)
	}
	packed := ""
	for _, line := range strings.Split(p.compose("run", "--rm", "--no-deps", "wacz"), "\n") {
		if strings.Contains(line, "crawl.wacz:") { // what wacz said, not Compose's own lines
			packed = line + "; "
		}
	}
	wacz := filepath.Join(p.out, "crawl.wacz")
	verified := string(p.h.run("wacz", "--verify", wacz))
	if want := fmt.Sprintf(" %d index lines", p.archivable()); !strings.Contains(verified, want) {
		t.Errorf("wacz --verify says %q; want%s, one a response the site gave", verified, want)
	}
	inPackage := unpackWARCs(t, wacz)
	named := namedWARCFiles(t, filepath.Join(p.out, "records.jsonl"))
	for f := range named {
		if _, ok := inPackage[f]; !ok {
			t.Errorf("%s, named by a record, is not in the store's package", f)
		}
	}
	if len(inPackage) != len(objects()) || len(named) != len(inPackage) {
		t.Errorf("the store holds %d objects, the package %d WARC files, the records name %d", len(objects()), len(inPackage), len(named))
	}
	if before >= len(inPackage) {
		t.Errorf("%d files uploaded before the outage of %d in all: the outage tested nothing", before, len(inPackage))
	}
	t.Logf("compose with object storage: %d pages, %d missing, %d WARC files uploaded (%d before the store's 20 s outage), %s%s",
		v.pages, v.missing, len(inPackage), before, packed, verified)
}

// namedWARCFiles are the WARC files the records of a results file name.
func namedWARCFiles(t *testing.T, records string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			WARC *struct{ File string } `json:"warc"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.WARC != nil {
			named[rec.WARC.File] = true
		}
	}
	return named
}
