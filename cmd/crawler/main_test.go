package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"time"

	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redcrawl/crawler/redisconn"
	"github.com/redcrawl/crawler/seedlist"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"

	"github.com/alicebob/miniredis/v2"
)

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var errOut bytes.Buffer
	out, err := runWith(&errOut, args...)
	return out, errOut.String(), err
}

func runWith(errOut io.Writer, args ...string) (string, error) {
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, errOut
	err := runArgs(app, append([]string{"crawler"}, args...))
	return out.String(), err
}

// lines is a stderr that hands each line written to it to a channel.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		select {
		case l <- line:
		default:
		}
	}
	return len(p), nil
}

// No output names the password, whatever the URL looks like: an
// unencoded / ? # ends the authority inside the password, a missing ://
// makes it no URL at all, and parsers quote what they cannot read.
func TestRedisPasswordNeverPrinted(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"redis://:hunter2@127.0.0.1:1/0", "cannot reach Redis at redis://xxxxx@127.0.0.1:1/0"},
		{"redis://user:hunter2@127.0.0.1:abc/0", "not a valid Redis URL"},
		{"rediss://u:hunter2@[::1/0", "not a valid Redis URL"},
		{"redis://:hunter2/xyzzy@127.0.0.1:1/0", "cannot tell the host from the password"},
		{"redis://:hunter2?xyzzy@127.0.0.1:1/0", "cannot tell the host from the password"},
		{"redis://:hunter2#xyzzy@127.0.0.1:1/0", "cannot tell the host from the password"},
		{"redis://:hunter2@xyzzy@127.0.0.1:1/0", "cannot reach Redis at redis://xxxxx@127.0.0.1:1/0"},
		{"redis://:hunter2%2Fxyzzy@127.0.0.1:1/0", "cannot reach Redis"},
		{":hunter2@127.0.0.1:1", "--redis is not a URL"},
		{"hunter2@127.0.0.1:1/0", "--redis is not a URL"},
		{"redis:/:hunter2@127.0.0.1:1/0", "--redis is not a URL"},
		{"http://:hunter2@127.0.0.1:1/0", `scheme "http"`},
		{"redis//:hunter2:xyzzy@host://", "--redis is not a URL"},
		{"redis://:hunter2@127.0.0.1:1/-1", "the database must be a number, 0 or more"},
		{"redis://:hunter2@127.0.0.1:1/abc", "the database must be a number, 0 or more"},
		{"redis://:hunter2@127.0.0.1:1,127.0.0.1:2/0", "cannot reach Redis at redis://xxxxx@127.0.0.1:1,127.0.0.1:2/0"},
		{"redis://:hunter2@127.0.0.1:1,127.0.0.1:2/3", "a Redis Cluster has only database 0"},
		{"redis://:hunter2@127.0.0.1:1,nonsense/0", `node "nonsense" is not host:port`},
		{"redis-sentinel://:hunter2@127.0.0.1:1", "name the master Sentinel watches"},
		{"redis-sentinel://:hunter2@127.0.0.1:1/mymaster/abc", "the database must be a number"},
		{"redis-sentinel://:hunter2@127.0.0.1:1/mymaster/0", "cannot reach Redis at redis-sentinel://xxxxx@127.0.0.1:1/mymaster/0"},
		{"127.0.0.1:1", "cannot reach Redis at redis://127.0.0.1:1"}, // host:port alone is a server's address
		{"127.0.0.1:1,127.0.0.1:2", "cannot reach Redis at redis://127.0.0.1:1,127.0.0.1:2"},
	} {
		out, errOut, err := run(t, "--redis", tc.url, "status")
		if err == nil {
			t.Errorf("%s: no error", tc.url)
			continue
		}
		for _, text := range []string{err.Error(), out, errOut, redisconn.HideSecret(err.Error(), tc.url)} {
			if strings.Contains(text, "hunter2") || strings.Contains(text, "xyzzy") {
				t.Errorf("%s: output shows the password: %q", tc.url, text)
			}
		}
		if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %q; want one line with %q", tc.url, err, tc.want)
		}
	}
	// The last guard hides the user info even of a message it never saw built.
	if got := redisconn.HideSecret("dial redis://u:pa55word@h failed", "redis://u:pa55word@h/0"); strings.Contains(got, "pa55word") {
		t.Errorf("HideSecret left the password in %q", got)
	}
}

// What is at --redis, when it is not a Redis server, is named by the
// error's hint: nothing listening (no TLS hint, which would not help), an
// HTTP server (not Redis's protocol), a plain server behind rediss://.
func TestRedisAddressThatIsNotRedis(t *testing.T) {
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	// Port 1, where nothing listens: a free port closed again could be
	// taken meanwhile by another test's redis-server (found when two
	// packages ran at once).
	closed := "127.0.0.1:1"
	host := strings.TrimPrefix(web.URL, "http://")
	for _, tc := range []struct{ url, want, not string }{
		{"redis://" + closed + "/0", "connection refused", "TLS"},
		{"rediss://" + closed + "/0", "connection refused", "TLS"},
		{"redis://" + host + "/0", "does not speak Redis's protocol", "TLS"},
		{"rediss://" + host + "/0", "if the server is a plain one, use redis://", "certificate"},
	} {
		_, _, err := run(t, "--redis", tc.url, "status")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line with %q, without %q", tc.url, err, tc.want, tc.not)
		}
	}
}

// --redis naming one node of a Redis Cluster opens the cluster: seed
// (again at a priority too), status and reset work across its masters, and reset leaves none of the
// crawl's keys on any of them.
func TestOneNodeOfAClusterOpensTheCluster(t *testing.T) {
	c := redistest.RealCluster(t, 3)
	one := "redis://" + c.Addrs()[0]
	var seeds []string
	for i := 0; i < 40; i++ { // hosts enough that their keys land on every master
		seeds = append(seeds, fmt.Sprintf("http://h%d.example/", i))
	}
	if _, errOut, err := run(t, append([]string{"--redis", one, "--crawl", "cl", "seed"}, seeds...)...); err != nil {
		t.Fatalf("seed: %v\n%s", err, errOut)
	}
	// Seeded again at a priority: moved in a transaction on the masters
	// that hold their hosts, not queued twice.
	if out, errOut, err := run(t, append([]string{"--redis", one, "--crawl", "cl", "seed", "--priority", "5"}, seeds[:10]...)...); err != nil ||
		!strings.Contains(out+errOut, "10 of them queued or being fetched already") {
		t.Fatalf("seed --priority 5: %v\n%s%s", err, out, errOut)
	}
	out, _, err := run(t, "--redis", one, "--crawl", "cl", "status")
	if err != nil || !strings.Contains(out, "40 queued") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if _, _, err := run(t, "--redis", one, "--crawl", "cl", "reset"); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if keys := n.Client.Keys(context.Background(), "crawl*").Val(); len(keys) > 0 {
			t.Errorf("after reset, master %s still holds %v", n.Addr, keys)
		}
	}
}

// redis-sentinel://SENTINEL/MASTER asks the sentinel where the master is,
// and the crawl's keys land there.
func TestSentinelFindsTheMaster(t *testing.T) {
	master := redistest.Real(t)
	sentinel := redistest.Sentinel(t, master, "crawlmaster")
	url := "redis-sentinel://" + sentinel + "/crawlmaster/0"
	if _, errOut, err := run(t, "--redis", url, "--crawl", "ha", "seed", "http://h.example/"); err != nil {
		t.Fatalf("seed through the sentinel: %v\n%s", err, errOut)
	}
	if out, _, err := run(t, "--redis", url, "--crawl", "ha", "status"); err != nil || !strings.Contains(out, "1 queued") {
		t.Fatalf("status through the sentinel: %v\n%s", err, out)
	}
	if master.Client.Exists(context.Background(), keyspace.KeysFor("ha").Config).Val() != 1 {
		t.Fatal("the crawl's settings are not on the master the sentinel names")
	}
}

// rediss:// against a plain server says that TLS may be the problem.
func TestTLSMismatchIsNamed(t *testing.T) {
	mr := miniredis.RunT(t)
	_, _, err := run(t, "--redis", "rediss://"+mr.Addr()+"/0", "status")
	if err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("rediss:// to a plain server: %v; want a hint about TLS", err)
	}
}

// A worker started before Redis waits for it (a docker-compose start),
// retrying with back-off and saying so, instead of failing at once.
func TestWorkWaitsForRedis(t *testing.T) {
	// Until Redis is up, something answers and hangs up at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	stderr := make(lines, 100)
	done := make(chan error, 1)
	go func() {
		_, err := runWith(stderr, "--redis", "redis://"+addr+"/0", "--crawl", "late", "work", "--redis-wait", "1m")
		done <- err
	}()
	select {
	case line := <-stderr:
		if !strings.Contains(line, "waiting for Redis at redis://"+addr+"/0") {
			t.Fatalf("stderr %q; want a line saying it waits for Redis", line)
		}
	case err := <-done:
		t.Fatalf("worker gave up before Redis was up: %v", err)
	}
	l.Close()
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr(addr); err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	// It reached Redis: what stops it now is that nobody seeded the crawl.
	if err := <-done; err == nil || !strings.Contains(err.Error(), "no such crawl") {
		t.Fatalf("worker: %v; want it to reach Redis and find no crawl", err)
	}
}

// Without a wait, an absent Redis is one error line at once.
func TestNoWaitFailsAtOnce(t *testing.T) {
	_, errOut, err := run(t, "--redis", "redis://127.0.0.1:1/0", "work", "--redis-wait", "0")
	if err == nil || !strings.Contains(err.Error(), "cannot reach Redis at redis://127.0.0.1:1/0") || errOut != "" {
		t.Fatalf("%v (stderr %q); want one error and no waiting", err, errOut)
	}
}

// A seed is all or nothing: a file with bad lines seeds nothing (each bad
// line quoted, the count the error) and creates no crawl; with --skip-bad
// the good lines go in and the error counts the rest.
func TestSeedWithBadLinesSeedsNothingUnlessSkipBad(t *testing.T) {
	mr := miniredis.RunT(t)
	file := filepath.Join(t.TempDir(), "seeds.txt")
	os.WriteFile(file, []byte("http://a.example/\n# a comment\n\nnot a url\nftp://b.example/\nhttps://c.example/x\n"), 0o644)
	out, errOut, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "-f", file, "http://z.example/")
	if err == nil || !strings.Contains(err.Error(), "2 of 5 lines are not usable URLs; nothing was seeded") || out != "" ||
		!strings.Contains(errOut, "seeds.txt:4:") || !strings.Contains(errOut, "seeds.txt:5:") {
		t.Fatalf("seed of a file with 2 bad lines: %v\nstdout %q\nstderr %q; want nothing seeded, both lines quoted", err, out, errOut)
	}
	if keys := mr.Keys(); len(keys) != 0 {
		t.Fatalf("a seed that seeded nothing left keys %v", keys)
	}
	// The per-line reports go to stderr; the summary is the error.
	out, _, err = run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "--skip-bad", "-f", file)
	if err == nil || !strings.Contains(err.Error(), "2 of 4 lines") {
		t.Fatalf("seed error %v; want a summary of 2 bad lines of 4", err)
	}
	if !strings.Contains(out, "2 URLs queued") {
		t.Fatalf("seed output %q; want the 2 good URLs queued", out)
	}
	if _, _, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "--rate", "7", "http://d.example/"); err == nil || !strings.Contains(err.Error(), "--rate is 1, not 7") {
		t.Fatalf("conflicting seed: %v", err)
	}
	if _, _, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "http://d.example/"); err != nil {
		t.Fatalf("seed without flags must add to the crawl: %v", err)
	}
}

func TestUsageErrorsAreOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"work", "--bogus"}, "see 'crawler work --help'"},
		{[]string{"seed", "--rate", "fast", "http://a.example/"}, `--rate "fast"`},
		{[]string{"seed", "--scope", "planet", "http://a.example/"}, `--scope "planet"`},
		{[]string{"seed", "--shards", "0", "http://a.example/"}, "--shards 0: want 1 to 256"},
		{[]string{"crawl", "--rate", "-1", "http://a.example/"}, `--rate "-1"`},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--keep-types", "text/html,pdf", "http://a.example/"}, `--keep-types: keep type "pdf"`},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--extract", "heading", "http://a.example/"}, `--extract: extract rule "heading": want NAME=CSS`},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--header", "User-Agent: x", "http://a.example/"}, `--header: header "User-Agent" cannot be set`},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--header", "no colon", "http://a.example/"}, `--header: header "no colon": want 'Name: value'`},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "work", "--proxy", "nope"}, `--proxy "nope"`},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "work", "--max-attempts", "0"}, `--max-attempts 0`},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--extract", "h=h1[", "http://a.example/"}, `--extract: field h: selector "h1["`},
		// Checked before Redis is contacted (none listens on port 1).
		{[]string{"--redis", "redis://127.0.0.1:1/0", "work", "-c", "1000000"}, "--concurrency 1000000: want 1 to 512"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "work", "-c", "0"}, "--concurrency 0: want 1 to 512"},
		{[]string{"crawl", "-c", "100000", "http://a.example/"}, "--concurrency 100000"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "--crawl", "q}:evil", "reset"}, `--crawl: invalid crawl name "q}:evil"`},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "--crawl", "q:sub", "status"}, `--crawl: invalid crawl name "q:sub"`},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "export", "--wait-workers"}, "--wait-workers waits after --follow"},
		// Every bad setting is wrong usage, found before Redis is asked.
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--burst", "0", "http://a.example/"}, "burst 0: want 1 to 1000"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--burst", "1001", "http://a.example/"}, "burst 1001: want 1 to 1000"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--rate", "1e-12", "http://a.example/"}, "below one request a day"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--rate", "1/90000", "http://a.example/"}, "below one request a day"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--max-depth", "-5", "http://a.example/"}, "max depth -5"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--allow", "(", "http://a.example/"}, `--allow "("`},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--fp-rate", "2", "http://a.example/"}, "false-positive rate 2"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed"}, "no URLs: give them as arguments"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--max-url-length", "100000", "http://a.example/"}, "--max-url-length 100000: want 16 to 32768"},
		{[]string{"--redis", "redis://x:y:z", "status"}, "not a valid Redis URL"},
		{[]string{"testsite", "--hosts", "0"}, "--hosts 0: want 1 or more"},
		{[]string{"testsite", "--pages", "-1"}, "--pages -1"},
		{[]string{"testsite", "--latency", "-1s"}, "--latency -1s"},
		{[]string{"testsite", "--names", "a.test", "--hosts", "2"}, "--names with --hosts or --listen-base"},
		{[]string{"testsite", "--named-hosts", "10", "--hosts", "2"}, "--named-hosts with --hosts or --listen-base"},
		{[]string{"testsite", "--dns", "127.0.0.1:0"}, "--dns is for --names or --named-hosts"},
		{[]string{"work", "--dns", "nope"}, `--dns "nope": want HOST:PORT`},
		{[]string{"testsite", "--names", "a.test,a b"}, `host name "a b"`},
		{[]string{"testsite", "--listen", ":0"}, "--listen is for --names"},
		{[]string{"teststore", "--bucket", "Bad_Name"}, `--bucket "Bad_Name"`},
		{[]string{"teststore", "--bucket", ","}, "--bucket: name one bucket"},
		{[]string{"teststore", "crawl"}, "teststore takes no arguments"},
		{[]string{"teststore", "--listen", "0.0.0.0:0"}, "--listen 0.0.0.0:0 reaches beyond this machine"},
		{[]string{"teststore", "--listen", ":9000"}, "--listen :9000 reaches beyond this machine"},
		{[]string{"teststore", "--access-key", "k"}, "--access-key and --secret-key go together"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %q; want one line naming %s", tc.args, err, tc.want)
		}
		if !isUsage(err) {
			t.Errorf("%v: %v; want it to exit 2 (wrong usage)", tc.args, err)
		}
	}
}

// A junk seed file is reported in a few lines with their line numbers and
// a count, not a line per bad URL.
func TestSeedJunkFileIsSummed(t *testing.T) {
	mr := miniredis.RunT(t)
	file := filepath.Join(t.TempDir(), "junk.txt")
	var b strings.Builder
	b.WriteString("http://good.example/\n")
	for i := 0; i < 100_000; i++ {
		b.WriteString("junk line\n")
	}
	os.WriteFile(file, []byte(b.String()), 0o644)
	out, errOut, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "--skip-bad", "-f", file)
	if err == nil || !strings.Contains(err.Error(), "100000 of 100001 lines") {
		t.Fatalf("seed: %v; want a count of 100000 bad lines", err)
	}
	reported := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(reported) != seedlist.MaxBadLines || !strings.Contains(reported[0], "junk.txt:2:") || !strings.Contains(reported[9], "junk.txt:11:") {
		t.Fatalf("stderr has %d lines, from %q; want the first %d bad lines with their numbers", len(reported), reported[0], seedlist.MaxBadLines)
	}
	if !strings.Contains(out, "1 URL queued") {
		t.Fatalf("stdout %q", out)
	}
}

// A seed file streams: URLs reach the queue while the file is still being
// written (a FIFO), in batches, so a seed list of any length needs only a
// batch of memory.
func TestSeedFileStreams(t *testing.T) {
	mr := miniredis.RunT(t)
	fifo := filepath.Join(t.TempDir(), "seeds.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "--crawl", "stream", "seed", "-f", fifo)
		done <- err
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2*seedlist.Batch; i++ {
		fmt.Fprintf(w, "http://h.example/%d\n", i)
	}
	// Still writing: the first batches must be queued already.
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()
	fr, err := frontier.New(client, "stream", frontier.Options{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	queued := func() int64 { sz, _ := fr.Sizes(context.Background()); return sz.Queued }
	deadline := time.Now().Add(time.Minute)
	for queued() < seedlist.Batch {
		if time.Now().After(deadline) {
			w.Close()
			t.Fatalf("after %d lines written, %d queued: the seed file is not streamed", 2*seedlist.Batch, queued())
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintln(w, "http://h.example/last")
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := queued(); n != 2*seedlist.Batch+1 {
		t.Fatalf("%d queued; want %d", n, 2*seedlist.Batch+1)
	}
}

// crawl with the embedded Redis keeps its records in CRAWL.jsonl: that
// Redis, and the results stream in it, end with the process.
func TestCrawlWithEmbeddedRedisKeepsItsRecords(t *testing.T) {
	site, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 20, ListenBase: "127.0.0.80"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	t.Chdir(t.TempDir())
	if _, _, err := run(t, append([]string{"--crawl", "kept", "crawl", "--allow-private", "--rate", "inf"}, site.Roots()...)...); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("kept.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var fetched int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec crawl.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.URL == "" {
			t.Fatalf("record %q: %v", line, err)
		}
		if rec.Status != 0 {
			fetched++
		}
	}
	if want := len(site.Stats().Fetched); fetched != want {
		t.Fatalf("kept.jsonl has %d fetched records; the site answered %d URLs", fetched, want)
	}
}

// An --extract selector keeps its commas (a CSS selector list), and the
// rules are stored with the crawl's settings.
func TestExtractRulesAreStored(t *testing.T) {
	mr := miniredis.RunT(t)
	if _, _, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "--extract", "h=h1, h2", "--extract", "price=.price", "http://a.example/"); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	s, err := settings.Load(context.Background(), c, "default")
	if err != nil || strings.Join(s.Extract, "|") != "h=h1, h2|price=.price" {
		t.Fatalf("stored extract rules %q, %v", s.Extract, err)
	}
}

func TestVersionAndHelpCommand(t *testing.T) {
	out, _, err := run(t, "--version")
	if err != nil || !strings.HasPrefix(out, "crawler version ") {
		t.Fatalf("--version: %q, %v", out, err)
	}
	// Every command's help: each builds its flags, none defined twice (a
	// command made of others' flags, as crawl is of seed's and work's,
	// would panic at its first use).
	for _, cmd := range newApp().Commands {
		out, _, err = run(t, "help", cmd.Name)
		if err != nil || !strings.Contains(out, "crawler "+cmd.Name+" - ") {
			t.Errorf("help %s: %q, %v", cmd.Name, out, err)
		}
	}
}

// Usage errors exit 2, failures 1; global flags may come after the
// command; every work flag has an environment variable.
func TestExitCodesAndFlagPlaces(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"work", "--bogus"}, {"--redis", "redis://127.0.0.1:1/0", "work", "-c", "0"},
		{"--crawl", "a:b", "status"}, {"seed", "--rate", "fast", "http://a.example/"}} {
		_, _, err := run(t, args...)
		if !isUsage(err) {
			t.Errorf("%v: %v; want a usage error (exit 2)", args, err)
		}
	}
	if _, _, err := run(t, "--redis", "redis://127.0.0.1:1/0", "status"); err == nil || isUsage(err) {
		t.Errorf("unreachable Redis: %v; want a failure (exit 1)", err)
	}
	t.Setenv("CRAWLER_CONCURRENCY", "0")
	if _, _, err := run(t, "--redis", "redis://127.0.0.1:1/0", "work"); err == nil || !strings.Contains(err.Error(), "--concurrency 0") {
		t.Errorf("CRAWLER_CONCURRENCY=0: %v; want it read as --concurrency", err)
	}
	t.Setenv("CRAWLER_CONCURRENCY", "")
	mr := miniredis.RunT(t)
	if _, _, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "--crawl", "after", "seed", "http://a.example/"); err != nil {
		t.Fatal(err)
	}
	// The global flags after the command.
	out, _, err := run(t, "status", "--json", "--redis", "redis://"+mr.Addr()+"/0", "--crawl=after")
	if err != nil {
		t.Fatalf("status with global flags after the command: %v", err)
	}
	var st struct {
		Crawl    string           `json:"crawl"`
		Settings map[string]any   `json:"settings"`
		Counters map[string]int64 `json:"counters"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if _, isNumber := st.Settings["rate"].(float64); st.Crawl != "after" || !isNumber || st.Settings["allow_private"] != false {
		t.Fatalf("status --json settings %v; want typed values", st.Settings)
	}
	for _, c := range []string{"pages", "ok", "http_error", "failed", "skipped"} {
		if _, ok := st.Counters[c]; !ok {
			t.Errorf("counter %s missing from %v", c, st.Counters)
		}
	}
}

// demo never touches a crawl of the user's: with CRAWLER_REDIS and
// CRAWLER_CRAWL in the environment, it still runs on its own embedded
// Redis, and the user's crawl is left as it was.
func TestDemoLeavesTheUsersCrawlAlone(t *testing.T) {
	mr := miniredis.RunT(t)
	redisURL := "redis://" + mr.Addr() + "/0"
	if _, _, err := run(t, "--redis", redisURL, "seed", "http://a.example/"); err != nil {
		t.Fatal(err)
	}
	before := mr.Keys()
	t.Setenv("CRAWLER_REDIS", redisURL)
	t.Setenv("CRAWLER_CRAWL", "default")
	if _, _, err := run(t, "demo", "--hosts", "1", "--pages", "5", "--workers", "1"); err != nil {
		t.Fatal(err)
	}
	if after := mr.Keys(); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("demo changed the user's Redis: %v -> %v", before, after)
	}
}

// crawl that fetches nothing exits non-zero and says why; a private seed
// without --allow-private is warned of.
func TestCrawlThatFetchesNothingFails(t *testing.T) {
	t.Chdir(t.TempDir())
	shards := 2 // the reasons are read from the seed's shard, not only the first
	for keyspace.ShardOf("127.0.0.1:9", shards) == 0 {
		shards++
	}
	_, errOut, err := run(t, "--crawl", "nothing", "crawl", "--rate", "inf", "--shards", fmt.Sprint(shards), "http://127.0.0.1:9/")
	if err == nil || !strings.Contains(err.Error(), "nothing was fetched") || !strings.Contains(err.Error(), "--allow-private") {
		t.Fatalf("crawl of a private seed: %v; want a failure naming --allow-private", err)
	}
	if !strings.Contains(errOut, "127.0.0.1:9 is a private or loopback address") {
		t.Fatalf("stderr %q; want a warning about the private seed", errOut)
	}
}

// --out's {id} is the worker's id: workers sharing a volume write files of
// their own.
func TestOutFilePerWorker(t *testing.T) {
	mr := miniredis.RunT(t)
	redisURL := "redis://" + mr.Addr() + "/0"
	dir := t.TempDir()
	if _, _, err := run(t, "--redis", redisURL, "seed", "http://127.0.0.1:9/"); err != nil { // refused: no --allow-private
		t.Fatal(err)
	}
	if _, _, err := run(t, "--redis", redisURL, "work", "--exit-when-done", "--id", "host:42", "--out", filepath.Join(dir, "records-{id}.jsonl")); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "records-host-42.jsonl")); err != nil || !strings.Contains(string(data), "127.0.0.1:9") {
		t.Fatalf("records-host-42.jsonl: %q, %v", data, err)
	}
}

// /healthz says whether the crawl can go on; /metrics serves the worker's
// metrics.
func TestMetricsEndpoints(t *testing.T) {
	mr := miniredis.RunT(t)
	if _, _, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "http://a.example/"); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	w, err := crawl.NewWorker(context.Background(), c, "default", crawl.Options{ID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer serveMetrics(l, w, true, nil)()
	addr := l.Addr().String()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz = %d with a healthy crawl", code)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "redcrawl_redis_up 1") {
		t.Fatalf("/metrics = %d:\n%.300s", code, body)
	}
	if code, _ := get("/debug/pprof/"); code != 200 {
		t.Fatalf("/debug/pprof/ = %d", code)
	}
	c.Del(context.Background(), keyspace.KeysFor("default").Config) // the crawl is gone
	if code, body := get("/healthz"); code != 503 || !strings.Contains(body, "gone") {
		t.Fatalf("/healthz = %d %q with the crawl gone", code, body)
	}
}

// seed and work refuse a Redis that may evict keys, saying what to set;
// --allow-eviction goes on, with a warning.
func TestEvictingRedisRefusedBySeedAndWork(t *testing.T) {
	s := redistest.Real(t)
	s.Client.ConfigSet(context.Background(), "maxmemory", "100mb")
	s.Client.ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru")
	for _, args := range [][]string{{"seed", "http://a.example/"}, {"work", "--exit-when-done"}} {
		_, _, err := run(t, append([]string{"--redis", s.URL()}, args...)...)
		if err == nil || isUsage(err) || !strings.Contains(err.Error(), "maxmemory-policy noeviction") {
			t.Errorf("%v on an allkeys-lru Redis: %v; want a failure saying to set noeviction", args, err)
		}
	}
	_, errOut, err := run(t, "--redis", s.URL(), "seed", "--allow-eviction", "http://a.example/")
	if err != nil || !strings.Contains(errOut, "warning") || !strings.Contains(errOut, "allkeys-lru") {
		t.Fatalf("seed --allow-eviction: %v, %q; want it seeded, with a warning", err, errOut)
	}
	// crawl seeds and works in one process: one warning, not one each.
	_, errOut, _ = run(t, "--redis", s.URL(), "--crawl", "both", "crawl", "--allow-eviction", "http://127.0.0.1:9/")
	if n := strings.Count(errOut, "going on: --allow-eviction"); n != 1 {
		t.Fatalf("crawl --allow-eviction warned %d times; want once:\n%s", n, errOut)
	}
}

// One line too long to be a URL is reported and skipped; the file goes on.
func TestSeedFileOverLongLineIsSkipped(t *testing.T) {
	mr := miniredis.RunT(t)
	file := filepath.Join(t.TempDir(), "seeds.txt")
	os.WriteFile(file, []byte("http://a.example/\nhttp://b.example/"+strings.Repeat("x", seedlist.MaxLine)+"\nhttp://c.example/\n"), 0o644)
	out, errOut, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "--skip-bad", "-f", file)
	if !strings.Contains(out, "2 URLs queued") || !strings.Contains(errOut, "seeds.txt:2: a line over") ||
		err == nil || !strings.Contains(err.Error(), "1 of 3 lines were not usable") {
		t.Fatalf("seed of a file with one over-long line: %v\nstdout %q\nstderr %q; want lines 1 and 3 queued and line 2 reported", err, out, errOut)
	}
}

// A worker that cannot start (its WARC directory is a file, its metrics
// port is taken) fails before it joins the crawl: reset is not refused
// for a worker that never ran.
func TestFailedStartLeavesNoLiveWorker(t *testing.T) {
	mr := miniredis.RunT(t)
	rurl := "redis://" + mr.Addr() + "/0"
	if _, _, err := run(t, "--redis", rurl, "seed", "http://a.example/"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(file, nil, 0o644)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"work", "--exit-when-done", "--warc-dir", file}, "archive:"},
		{[]string{"work", "--exit-when-done", "--metrics-addr", taken.Addr().String()}, "--metrics-addr"},
	} {
		_, errOut, err := run(t, append([]string{"--redis", rurl}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want a failure naming %s", tc.args, err, tc.want)
		}
		if strings.Contains(errOut, "worker started") {
			t.Errorf("%v: logged 'worker started' though it never ran:\n%s", tc.args, errOut)
		}
		out, _, err := run(t, "--redis", rurl, "status", "--json")
		var st struct{ Workers []string }
		if err != nil || json.Unmarshal([]byte(out), &st) != nil || len(st.Workers) != 0 {
			t.Errorf("after %v failed to start: status %v %q; want no worker alive", tc.args, err, out)
		}
	}
	if _, _, err := run(t, "--redis", rurl, "reset"); err != nil {
		t.Errorf("reset after failed starts: %v", err)
	}
}

// crawl with a seed file some of whose lines are bad stops before it
// seeds anything; with --skip-bad it crawls the good ones and then exits 1
// saying so.
func TestCrawlGoesOnPastBadSeedLines(t *testing.T) {
	site, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 5, ListenBase: "127.0.0.160"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "seeds.txt")
	os.WriteFile(file, []byte(site.Roots()[0]+"\nnot a url\n"), 0o644)
	_, errOut, err := run(t, "crawl", "--allow-private", "--rate", "inf", "--crawl", "partial", "--out", filepath.Join(dir, "out.jsonl"), "-f", file)
	if err == nil || !strings.Contains(err.Error(), "nothing was seeded") || len(site.Stats().Fetched) != 0 {
		t.Fatalf("crawl without --skip-bad: %v; want it stopped before seeding\n%s", err, errOut)
	}
	_, errOut, err = run(t, "crawl", "--allow-private", "--rate", "inf", "--crawl", "partial", "--skip-bad", "--out", filepath.Join(dir, "out.jsonl"), "-f", file)
	if err == nil || !strings.Contains(err.Error(), "the crawl is done, but 1 of 2 lines were not usable") {
		t.Fatalf("crawl: %v; want exit 1 after the crawl, naming the bad line count\n%s", err, errOut)
	}
	if missing := site.Missing(); len(missing) > 0 {
		t.Fatalf("the good seed's site was not crawled: %d of %d truth URLs missing", len(missing), len(site.Truth()))
	}
}

// A seed that fails creates no crawl: a bad --sitemap is wrong usage
// before Redis; a Redis out of memory takes back the crawl it created.
func TestFailedSeedLeavesNoCrawl(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	_, _, err := run(t, "--redis", s.URL(), "seed", "--sitemap", "http://[bad", "http://a.example/")
	if !isUsage(err) || !strings.Contains(err.Error(), "--sitemap") {
		t.Fatalf("seed with a bad --sitemap: %v; want a usage error naming it", err)
	}
	// Room for the settings, not for the Bloom filter's 1.9 MiB: refused
	// before anything is written (or, had Redis filled meanwhile, on its
	// OOM, the crawl taken back).
	s.Client.ConfigSet(ctx, "maxmemory", fmt.Sprint(s.UsedMemory(t)+512<<10))
	s.Client.ConfigSet(ctx, "maxmemory-policy", "noeviction")
	_, _, err = run(t, "--redis", s.URL(), "seed", "http://a.example/")
	if err == nil || !strings.Contains(err.Error(), "needs a Bloom filter of 1.9 MiB") || !strings.Contains(err.Error(), "was not created") {
		t.Fatalf("seed on a full Redis: %v; want it refused, the filter's size named, and no crawl", err)
	}
	if keys := s.Client.Keys(ctx, "crawl*").Val(); len(keys) != 0 {
		t.Fatalf("a failed seed left keys: %v", keys)
	}
}

// work --metrics-addr serves the dashboard beyond loopback only with a
// token (as 'crawler dashboard' does): /metrics either way; the crawl's
// hosts, workers and events not to anyone who reaches the port. No log
// line carries the token.
func TestMetricsAddrBeyondLoopbackServesTheDashboardOnlyWithAToken(t *testing.T) {
	release := make(chan struct{})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			<-release // the worker stays busy on its one page while the test looks
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html></html>")
	}))
	defer site.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	serving := regexp.MustCompile(`serving metrics"? url=http://[^ ]*:(\d+)/metrics dashboard=("[^"]*"|\S+)`)
	for _, tc := range []struct {
		token    string
		page     int // GET / answers
		state    int // GET /api/state, without the token
		withTok  int // GET /api/state?token=
		logWants string
	}{
		{"", 404, 404, 404, "none: --metrics-addr reaches beyond loopback"},
		{"s3cr3t-tok", 200, 401, 200, "?token=SECRET"},
	} {
		mr := miniredis.RunT(t)
		redisURL := "redis://" + mr.Addr() + "/0"
		if _, _, err := run(t, "--redis", redisURL, "seed", "--allow-private", site.URL+"/"); err != nil {
			t.Fatal(err)
		}
		stderr := make(lines, 1000)
		done := make(chan error, 1)
		go func() {
			args := []string{"--redis", redisURL, "work", "--exit-when-done", "--metrics-addr", "0.0.0.0:0"}
			if tc.token != "" {
				args = append(args, "--dashboard-token", tc.token)
			}
			_, err := runWith(stderr, args...)
			done <- err
		}()
		var port, said string
		for port == "" {
			select {
			case line := <-stderr:
				if strings.Contains(line, "s3cr3t") {
					t.Errorf("a log line carries the token: %s", line)
				}
				if m := serving.FindStringSubmatch(line); m != nil {
					port, said = m[1], m[2]
				}
			case err := <-done:
				t.Fatalf("the worker ended before serving metrics: %v", err)
			}
		}
		if !strings.Contains(said, tc.logWants) {
			t.Errorf("token %q: the log says dashboard=%s; want %q in it", tc.token, said, tc.logWants)
		}
		get := func(path string) int {
			resp, err := http.Get("http://127.0.0.1:" + port + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := get("/metrics"); code != 200 {
			t.Errorf("token %q: /metrics = %d", tc.token, code)
		}
		for path, want := range map[string]int{"/": tc.page, "/api/state": tc.state, "/api/state?token=" + tc.token: tc.withTok} {
			if code := get(path); code != want {
				t.Errorf("token %q: GET %s = %d; want %d", tc.token, path, code, want)
			}
		}
		if tc.token != "" {
			close(release)
		} else {
			release <- struct{}{} // let this worker's page go; the next run blocks again
		}
		if err := <-done; err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
}

// seedThroughFifo starts `seed -f FIFO` with args, writes seedlist.Batch lines
// and waits until they are queued, then calls mid (Redis goes away), then
// writes the rest (n lines in all) and closes the file. It returns the
// seed's error and what it said on stderr.
func seedThroughFifo(t *testing.T, s *redistest.Server, n int, mid func(stderr <-chan string), args ...string) error {
	return seedThroughFifoAt(t, s.URL(), s.Client, n, mid, args...)
}

// seedThroughFifoAt is seedThroughFifo with Redis at redisURL, watched
// through c until the first batch is in.
func seedThroughFifoAt(t *testing.T, redisURL string, c *redis.Client, n int, mid func(stderr <-chan string), args ...string) error {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "seeds.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := make(lines, 1000)
	done := make(chan error, 1)
	go func() {
		_, err := runWith(stderr, append(append([]string{"--redis", redisURL, "--crawl", "big", "seed", "--rate", "inf"}, args...), "-f", fifo)...)
		done <- err
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 0; i < seedlist.Batch; i++ {
		fmt.Fprintf(w, "http://h%d.example/\n", i)
	}
	fmt.Fprintf(w, "http://h%d.example/\n", seedlist.Batch) // the first batch goes when the next line comes
	deadline := time.Now().Add(time.Minute)
	for c.HGet(context.Background(), "crawl:{big}:stats", "queued").Val() != fmt.Sprint(seedlist.Batch) {
		if time.Now().After(deadline) {
			t.Fatal("the first batch never went in")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mid(stderr)
	for i := seedlist.Batch + 1; i < n; i++ {
		fmt.Fprintf(w, "http://h%d.example/\n", i)
	}
	w.Close()
	return <-done
}

// A seed of a big list rides out a Redis that stops answering mid-way (a
// restart, a failover): it says it waits, and every line goes in once.
// Before, it stopped at the first failed batch with no word of where.
func TestSeedRidesOutARedisThatStopsAnswering(t *testing.T) {
	s := redistest.Real(t)
	const n = 2*seedlist.Batch + 500
	err := seedThroughFifo(t, s, n, func(stderr <-chan string) {
		s.Client.Save(context.Background()) // what comes back after the restart
		s.Crash(t)
		go func() {
			for line := range stderr {
				if strings.Contains(line, "Redis stopped answering") {
					s.Restart(t)
					return
				}
			}
		}()
	}, "--skip-seen")
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	if q := s.Client.HGet(context.Background(), "crawl:{big}:stats", "queued").Val(); q != fmt.Sprint(n) {
		t.Fatalf("%s queued; want every one of the %d lines once", q, n)
	}
}

// A Redis that stays away longer than --redis-retry stops the seed with
// one line that says how far it got and how to finish; run so, the rest
// goes in, and every line is queued once.
func TestAStoppedSeedSaysWhereToGoOnFrom(t *testing.T) {
	s := redistest.Real(t)
	const n = 2*seedlist.Batch + 500
	err := seedThroughFifo(t, s, n, func(<-chan string) {
		s.Client.Save(context.Background())
		s.Crash(t)
	}, "--redis-retry", "1s")
	want := fmt.Sprintf("up to %d went in (%d URLs queued): to finish, run the same command with --from-line %d --skip-seen", seedlist.Batch, seedlist.Batch, seedlist.Batch+1)
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("seed: %v; want one line with %q", err, want)
	}
	s.Restart(t)
	if q := s.Client.HGet(context.Background(), "crawl:{big}:stats", "queued").Val(); q != fmt.Sprint(seedlist.Batch) {
		t.Fatalf("%s queued after the stop; want the first batch, %d (the crawl kept, not reset)", q, seedlist.Batch)
	}
	file := filepath.Join(t.TempDir(), "seeds.txt")
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "http://h%d.example/\n", i)
	}
	os.WriteFile(file, []byte(b.String()), 0o644)
	if _, errOut, err := run(t, "--redis", s.URL(), "--crawl", "big", "seed", "--rate", "inf", "--from-line", fmt.Sprint(seedlist.Batch+1), "--skip-seen", "-f", file); err != nil {
		t.Fatalf("the seed that finishes: %v\n%s", err, errOut)
	}
	if q := s.Client.HGet(context.Background(), "crawl:{big}:stats", "queued").Val(); q != fmt.Sprint(n) {
		t.Fatalf("%s queued; want every one of the %d lines once", q, n)
	}
}

// Behind Sentinel, a seed whose master dies mid-way waits for the
// promotion and goes on against the new master: every line in, once.
// Before, it stopped 1.4 s after the master died.
func TestSeedFollowsASentinelFailover(t *testing.T) {
	master := redistest.Real(t)
	replica := redistest.Replica(t, master)
	sentinel := redistest.Sentinel(t, master, "seedmaster")
	const n = 2*seedlist.Batch + 500
	err := seedThroughFifoAt(t, "redis-sentinel://"+sentinel+"/seedmaster", master.Client, n, func(<-chan string) {
		master.Client.Do(context.Background(), "WAIT", 1, 10000) // the first batch is on the replica
		master.Crash(t)
	}, "--skip-seen")
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	if !strings.Contains(replica.Client.Info(context.Background(), "replication").Val(), "role:master") {
		t.Fatal("the seed ended, but the replica was never promoted")
	}
	if q := replica.Client.HGet(context.Background(), "crawl:{big}:stats", "queued").Val(); q != fmt.Sprint(n) {
		t.Fatalf("%s queued on the new master; want every one of the %d lines once", q, n)
	}
}

// pause and resume say what they did, once each, and what was so already;
// status says the crawl is paused and by whom; a crawl that does not
// exist, or an argument, is one clear line.
func TestPauseAndResumeSayWhatTheyDid(t *testing.T) {
	mr := miniredis.RunT(t)
	r := "redis://" + mr.Addr() + "/0"
	if _, _, err := run(t, "--redis", r, "pause"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("pause of a crawl never seeded: %v; want one line of error", err)
	}
	if _, _, err := run(t, "--redis", r, "seed", "http://a.example/"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pause", "--by", "alice"}, `crawl "default" paused`},
		{[]string{"pause", "--by", "bob"}, `crawl "default" was paused already`},
		{[]string{"status"}, "paused since"},
		{[]string{"status"}, "by alice"},
		{[]string{"resume"}, `crawl "default" resumed`},
		{[]string{"resume"}, `crawl "default" was not paused`},
	} {
		out, _, err := run(t, append([]string{"--redis", r}, c.args...)...)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("crawler %s: %q, %v; want %q", strings.Join(c.args, " "), out, err, c.want)
		}
	}
	if _, _, err := run(t, "--redis", r, "pause", "now"); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("pause with an argument: %v; want it refused", err)
	}
}

// crawler host: a rate and a pause said back, the rule listed by status;
// wrong input is one line naming the problem.
func TestHostCommandSaysWhatItSet(t *testing.T) {
	mr := miniredis.RunT(t)
	r := "redis://" + mr.Addr() + "/0"
	if _, _, err := run(t, "--redis", r, "seed", "--rate", "5", "http://a.example/"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "--redis", r, "host", "HTTP://A.example:80/x", "--rate", "0.5", "--burst", "2", "--by", "alice")
	if err != nil || !strings.Contains(out, "host a.example: its own rate 0.5 req/s, burst 2 (the crawl's: 5, burst 1)") {
		t.Fatalf("host --rate: %q, %v", out, err)
	}
	if out, _, err := run(t, "--redis", r, "status"); err != nil || !strings.Contains(out, "a.example 0.5 req/s (burst 2)") {
		t.Errorf("status: %q, %v; want the rule listed", out, err)
	}
	if out, _, err := run(t, "--redis", r, "host", "a.example", "--clear", "--pause", "1h"); err != nil ||
		!strings.Contains(out, "its own rules cleared") || !strings.Contains(out, "paused for 1h0m0s") {
		t.Errorf("host --clear --pause: %q, %v", out, err)
	}
	if out, _, err := run(t, "--redis", r, "host", "a.example", "--clear", "--block", "--wait", "1s"); err != nil ||
		!strings.Contains(out, "host a.example: blocked; 1 of its queued URLs ended with records") {
		t.Errorf("host --block: %q, %v; want its one queued URL ended", out, err)
	}
	if out, _, err := run(t, "--redis", r, "status"); err != nil || !strings.Contains(out, "a.example blocked") {
		t.Errorf("status: %q, %v; want the block listed", out, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"host"}, "one HOST"},
		{[]string{"host", "a.example"}, "say what to change"},
		{[]string{"host", "a b", "--clear"}, "not a host"},
		{[]string{"host", "a.example", "--rate", "fast"}, "--rate"},
		{[]string{"host", "a.example", "--burst", "3"}, "--burst goes with --rate"},
		{[]string{"host", "a.example", "--pause", "-1s"}, "--pause -1s: want a positive duration"},
		{[]string{"host", "a.example", "--pause", "800h"}, "up to 720h0m0s"},
		{[]string{"host", "a.example", "--rate", "1e-9"}, "below one request a day"},
		{[]string{"host", "a.example", "--block", "--rate", "1"}, "--block goes without --rate and --pause"},
		{[]string{"host", "a.example", "--wait", "5s"}, "--wait goes with --block"},
	} {
		_, _, err := run(t, append([]string{"--redis", r}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("crawler %s: %v; want one line with %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// crawler set: each change said back, from what to what; status shows
// the settings in force and their version; a seed that contradicts a live
// setting says how to change it; wrong input is one line naming the
// problem, and changes nothing.
func TestSetCommandSaysWhatChanged(t *testing.T) {
	mr := miniredis.RunT(t)
	r := "redis://" + mr.Addr() + "/0"
	if _, _, err := run(t, "--redis", r, "seed", "--rate", "5", "--max-pages", "10", "http://a.example/"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "--redis", r, "set", "--rate", "0.5", "--deny", "/private/", "--max-pages", "20", "--by", "alice")
	if err != nil || !strings.Contains(out, "settings version 1: --max-pages 10 → 20; --rate 5 → 0.5; --deny none → /private/") {
		t.Fatalf("set: %q, %v", out, err)
	}
	if out, _, err := run(t, "--redis", r, "status"); err != nil || !strings.Contains(out, "0.5 req/s per host") ||
		!strings.Contains(out, "version 1: changed by 'crawler set'") || !strings.Contains(out, "(by alice)") {
		t.Errorf("status: %q, %v; want the new rate, the version and the event", out, err)
	}
	if _, _, err := run(t, "--redis", r, "seed", "--rate", "2", "http://a.example/b"); err == nil ||
		!strings.Contains(err.Error(), "crawler set --rate 2") {
		t.Errorf("seed with another rate: %v; want it to say 'crawler set --rate 2'", err)
	}
	if out, _, err := run(t, "--redis", r, "set", "--rate", "0.5"); err != nil || !strings.Contains(out, "nothing to change") {
		t.Errorf("set to what it is: %q, %v", out, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"set"}, "say what to change: --max-depth"},
		{[]string{"set", "x"}, "takes no arguments"},
		{[]string{"set", "--rate", "fast"}, "--rate"},
		{[]string{"set", "--burst", "0"}, "burst 0: want 1 to 1000"},
		{[]string{"set", "--scope", "any"}, "--scope cannot change in a running crawl"},
		{[]string{"set", "--shards", "4"}, "--shards cannot change"},
		{[]string{"set", "--deny", "("}, "--deny"},
		{[]string{"set", "--header", "Host: x"}, "--header"},
		{[]string{"set", "--user-agent", "Other/1"}, "product token"},
		{[]string{"set", "--crawl", "nope", "--rate", "1"}, "no such crawl"},
	} {
		_, _, err := run(t, append([]string{"--redis", r}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("crawler %s: %v; want one line with %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if v := mr.HGet("crawl:{default}:config", "version"); v != "1" {
		t.Errorf("version %q after the refused changes; want 1", v)
	}
}

// The dashboard's controls need its token: asked for without one, the
// command refuses in one line, before it reaches Redis.
func TestDashboardControlNeedsAToken(t *testing.T) {
	_, _, err := run(t, "--redis", "redis://127.0.0.1:1/0", "dashboard", "--control")
	if err == nil || !strings.Contains(err.Error(), "--control needs --token") || strings.Contains(err.Error(), "\n") {
		t.Errorf("dashboard --control: %v; want one line saying it needs --token", err)
	}
}

// --render without a browser, or a wrong number of tabs, is one usage
// line before Redis is asked anything (work's --render, crawl's
// --render-tabs); seed's --render takes only its three words.
func TestRenderFlagsAreCheckedFirst(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no chromium anywhere
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--redis", "redis://127.0.0.1:1/0", "work", "--render", "2"}, "--render: render: no chromium found"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "work", "--render", "99"}, "--render 99: want 1 to 64"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "work", "--render", "1", "--chromium", "/nonexistent/chromium"}, "/nonexistent/chromium cannot be run"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "crawl", "--render-tabs", "1", "http://a.example/"}, "--render-tabs: render: no chromium found"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "seed", "--render", "sometimes", "http://a.example/"}, `render "sometimes": want never, always or auto`},
	} {
		_, _, err := run(t, c.args...)
		if !isUsage(err) || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%v: %v; want one usage line saying %q", c.args, err, c.want)
		}
	}
}

// A seed's URLs are checked before Redis is: with no Redis listening (port
// 1), a malformed URL is what the seed says, and it exits 1 (bad input,
// not wrong usage), naming the argument; with a good URL beside it, the
// seed still refuses the whole (nothing is seeded without --skip-bad).
func TestABadSeedURLIsSaidBeforeRedisIsAsked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ht!tp://x"}, "none of the 1 URLs is usable"},
		{[]string{"ht!tp://x", "https://ok.example/"}, "1 of 2 lines are not usable URLs"},
	} {
		_, stderr, err := run(t, append([]string{"--redis", "redis://127.0.0.1:1/0", "seed"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Redis") {
			t.Errorf("seed %v: %v; want %q, and nothing of Redis", tc.args, err, tc.want)
		}
		var code cli.ExitCoder
		if isUsage(err) || errors.As(err, &code) && code.ExitCode() != 1 {
			t.Errorf("seed %v: %v; want it to exit 1 (main exits 1 on an error of no code)", tc.args, err)
		}
		if !strings.Contains(stderr, `argument 1: parse: malformed URL: "ht!tp://x"`) {
			t.Errorf("seed %v said %q; want the argument named", tc.args, stderr)
		}
	}
	// The check is the seed's own: a good URL goes on to Redis, which is
	// not there.
	if _, _, err := run(t, "--redis", "redis://127.0.0.1:1/0", "seed", "https://ok.example/"); err == nil || !strings.Contains(err.Error(), "cannot reach Redis") {
		t.Errorf("a good seed with no Redis: %v; want Redis named", err)
	}
}
