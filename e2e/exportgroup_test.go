package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/testsite"
)

// export --follow --group, as a sink runs it: killed with SIGKILL three
// times during a crawl and restarted under its --consumer name, the union
// of what it appended to its --out file holds every record, by stream_id,
// none more than twice; and two exporters of another group, run beside
// it to the end, split the records with none in both.
func TestAnExportGroupSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	h, _, _ := setup(t, testsite.Config{Hosts: 3, Pages: 120, Latency: 2 * time.Millisecond, ListenBase: "127.0.0.100"},
		"--rate", "40", "--burst", "2")
	dir := t.TempDir()
	export := func(group, consumer, out string) *exec.Cmd {
		cmd := exec.Command(h.bin, "--redis", h.redis, "--crawl", "e2e", "export", "--follow", "--group", group, "--consumer", consumer,
			"--out", filepath.Join(dir, out))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		return cmd
	}
	b, c := export("two", "b", "b.jsonl"), export("two", "c", "c.jsonl")
	w1, w2 := h.startWorker("w1"), h.startWorker("w2")
	for kill := range 3 {
		a := export("sink", "a", "a.jsonl")
		at := int64(60 * (kill + 1))
		h.waitFor(fmt.Sprintf("%d pages", at), func(st status) bool { return st.Counters["pages"] >= at })
		a.Process.Kill() // SIGKILL: no goodbye, whatever it was doing
		a.Wait()
	}
	a := export("sink", "a", "a.jsonl")
	w1.awaitCleanExit(t)
	w2.awaitCleanExit(t)
	for _, cmd := range []*exec.Cmd{a, b, c} {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("export %v: %v", cmd.Args, err)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("export %v did not end with the crawl", cmd.Args)
		}
	}
	records := h.status().Counters["records"]
	sink := streamIDsOf(t, filepath.Join(dir, "a.jsonl"))
	if int64(len(sink)) != records {
		t.Errorf("the killed sink's file holds %d records of %d", len(sink), records)
	}
	twice := 0
	for id, n := range sink {
		if n > 2 {
			t.Errorf("%s written %d times; want at most twice", id, n)
		}
		if n == 2 {
			twice++
		}
	}
	bs, cs := streamIDsOf(t, filepath.Join(dir, "b.jsonl")), streamIDsOf(t, filepath.Join(dir, "c.jsonl"))
	for id := range bs {
		if cs[id] > 0 {
			t.Errorf("%s went to both readers of one group", id)
		}
	}
	if int64(len(bs)+len(cs)) != records {
		t.Errorf("the group's two readers wrote %d + %d records of %d", len(bs), len(cs), records)
	}
	t.Logf("%d records; the sink killed three times wrote %d twice; the two readers %d and %d", records, twice, len(bs), len(cs))
}

// streamIDsOf counts an export file's records by stream_id.
func streamIDsOf(t *testing.T, file string) map[string]int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			StreamID string `json:"stream_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.StreamID == "" {
			t.Fatalf("%s: %q (%v)", file, sc.Text(), err)
		}
		out[rec.StreamID]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
