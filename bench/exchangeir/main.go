// Command exchangeir counts the instructions a redis-server spends on the
// polite path's exchange, a page: it starts redis-server under valgrind's
// callgrind on a Unix socket of its own (no port to pick), runs a fixed workload of exchanges
// through package frontier (46 pages a call, one URL a host of 1 000, each
// with its host's token, a record, a visit and its links), shuts the
// server down and reads callgrind's total. It does this twice, with and
// without the measured exchanges, and prints the difference a page.
//
// Seconds of Redis CPU move by ±15 % from run to run on a shared machine;
// instructions counted under callgrind are the same from run to run (to a
// few hundred a page), so a change to a script can be measured alone.
//
//	go run ./exchangeir                 # from bench/: the polite exchange
//	go run ./exchangeir -links 1 -n 100 # one link a page, 100 exchanges
//	go run ./exchangeir -top 40 -redis-server ~/redis/src/redis-server
//	                                    # and where a page's instructions go, by function
//	go run ./exchangeir -keep /tmp/ir   # keep callgrind.0 and callgrind.N for callgrind_annotate
//
// It needs valgrind and redis-server (Debian's packages of those names).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/recrawl"
	"github.com/redis/go-redis/v9"
)

type workload struct {
	exchanges, batch, hosts, links int
	rate                           float64
	hostCap                        int64
}

func main() {
	var w workload
	flag.IntVar(&w.exchanges, "n", 50, "exchanges measured (after 20 to warm up)")
	flag.IntVar(&w.batch, "batch", 46, "pages an exchange ends, and URLs it pops")
	flag.IntVar(&w.hosts, "hosts", 1000, "hosts, 20 URLs queued each")
	flag.IntVar(&w.links, "links", 2, "links a page: a new one, then one seen (at most 3)")
	flag.Float64Var(&w.rate, "rate", 100, "each host's requests a second (0: no limit)")
	flag.Int64Var(&w.hostCap, "host-cap", 100_000, "pages a host at most (0: none; a crawl's default is 100 000, --max-pages-per-host)")
	server := flag.String("redis-server", "redis-server", "the redis-server binary (one built with -g names its functions in callgrind's files)")
	keep := flag.String("keep", "", "a `DIR` to keep callgrind's two output files in, for callgrind_annotate")
	top := flag.Int("top", 0, "also list the `N` functions costing most a page, inclusive of what they call "+
		"(callgrind_annotate on both runs, the difference; names need a redis-server built with -g)")
	flag.Parse()
	if err := run(w, *server, *keep, *top); err != nil {
		fmt.Fprintln(os.Stderr, "exchangeir:", err)
		os.Exit(1)
	}
}

func run(w workload, server, keep string, top int) error {
	dir := keep
	if dir == "" {
		d, err := os.MkdirTemp("", "exchangeir")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	setup, _, err := count(w, 0, server, dir)
	if err != nil {
		return err
	}
	total, pages, err := count(w, w.exchanges, server, dir)
	if err != nil {
		return err
	}
	fmt.Printf("%d instructions a page (%d pages in %d exchanges of %d; callgrind's totals %d and %d without them)\n",
		(total-setup)/int64(pages), pages, w.exchanges, w.batch, total, setup)
	if top > 0 {
		return printTop(top, pages, total-setup, filepath.Join(dir, "callgrind.0"), filepath.Join(dir, fmt.Sprintf("callgrind.%d", w.exchanges)))
	}
	return nil
}

// printTop lists the n functions whose inclusive cost grew most from the
// run without the measured exchanges (base) to the one with them (with),
// a page, with their share of the page's total.
func printTop(n, pages int, total int64, base, with string) error {
	before, err := inclusive(base)
	if err != nil {
		return err
	}
	after, err := inclusive(with)
	if err != nil {
		return err
	}
	type fn struct {
		name string
		cost int64
	}
	var fns []fn
	for name, c := range after {
		if d := c - before[name]; d > 0 && name != "PROGRAM TOTALS" && !strings.Contains(name, "???") && !strings.Contains(name, "/csu/") {
			fns = append(fns, fn{name, d})
		}
	}
	sort.Slice(fns, func(i, j int) bool {
		return fns[i].cost > fns[j].cost || fns[i].cost == fns[j].cost && fns[i].name < fns[j].name
	})
	fmt.Println("a page, inclusive (what a function calls counts in it too, so the lines overlap):")
	for _, f := range fns[:min(n, len(fns))] {
		fmt.Printf("%9d %5.1f%%  %s\n", f.cost/int64(pages), 100*float64(f.cost)/float64(total), f.name)
	}
	return nil
}

// inclusive reads callgrind_annotate's inclusive cost of each function in
// a callgrind output file: "file:function" -> instructions.
func inclusive(path string) (map[string]int64, error) {
	out, err := exec.Command("callgrind_annotate", "--auto=no", "--inclusive=yes", "--threshold=100", path).Output()
	if err != nil {
		return nil, fmt.Errorf("callgrind_annotate %s: %w (valgrind's package has it)", path, err)
	}
	costs := map[string]int64{}
	for _, line := range strings.Split(string(out), "\n") {
		// "  246,706,123 (90.80%)  deps/lua/src/ldo.c:luaD_call [/path/redis-server]"
		num, rest, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !strings.HasPrefix(strings.TrimSpace(rest), "(") {
			continue
		}
		c, err := strconv.ParseInt(strings.ReplaceAll(num, ",", ""), 10, 64)
		if err != nil {
			continue
		}
		_, name, ok := strings.Cut(rest, ")")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		if i := strings.LastIndex(name, " ["); i > 0 {
			name = name[:i] // the binary
		}
		for _, dir := range []string{"/deps/", "/src/"} { // a path in Redis's tree, from its top
			if i := strings.Index(name, dir); i >= 0 {
				name = name[i+1:]
				break
			}
		}
		costs[name] += c
	}
	return costs, nil
}

// count runs the workload with n measured exchanges against a fresh
// redis-server under callgrind, and returns callgrind's total and the
// pages those exchanges ended.
func count(w workload, n int, server, dir string) (int64, int, error) {
	out := filepath.Join(dir, fmt.Sprintf("callgrind.%d", n))
	sock := filepath.Join(dir, fmt.Sprintf("redis.%d.sock", n))
	cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+out, server,
		"--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return 0, 0, fmt.Errorf("valgrind: %w (apt-get install valgrind)", err)
	}
	defer cmd.Process.Kill() // by PID, should anything below fail
	ctx := context.Background()
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) { // until it listens
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			break
		}
		if time.Since(start) > time.Minute {
			return 0, 0, errors.New("redis-server under callgrind did not listen within a minute")
		}
	}
	// No retries: a SHUTDOWN answered by a closed connection is not sent again.
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, ReadTimeout: time.Minute, MaxRetries: -1})
	defer c.Close()
	pages, err := exchanges(ctx, c, w, n)
	if err != nil {
		return 0, 0, err
	}
	c.Do(ctx, "SHUTDOWN", "NOSAVE") // callgrind writes its counts as the server exits
	if err := cmd.Wait(); err != nil {
		return 0, 0, fmt.Errorf("redis-server under callgrind: %w", err)
	}
	total, err := totals(out)
	return total, pages, err
}

// exchanges seeds the frontier, runs 20 exchanges to warm up and then n,
// and returns the pages those n ended.
func exchanges(ctx context.Context, c *redis.Client, w workload, n int) (int, error) {
	c.HSet(ctx, keyspace.KeysFor("b").Config, "scope", "host") // the crawl exists
	f, err := frontier.Create(ctx, c, "b", frontier.Options{Shards: 1, Policy: frontier.Policy{HostRate: w.rate, HostBurst: 1, HostPageCap: w.hostCap}},
		dedup.Params{Capacity: 1_000_000, FPRate: 0.001})
	if err != nil {
		return 0, err
	}
	var seeds []frontier.Item
	for i := 0; i < 20*w.hosts; i++ {
		seeds = append(seeds, frontier.Item{URL: fmt.Sprintf("http://h%d.example/seed/%d", i%w.hosts, i)})
	}
	if _, err := f.Enqueue(ctx, seeds); err != nil {
		return 0, err
	}
	x, err := f.Exchange(ctx, nil, nil, w.batch)
	if err != nil {
		return 0, err
	}
	record := []byte(`{"url":"http://h1.example/some/page/of/the/site","status":200,"content_type":"text/html; charset=utf-8",` +
		`"bytes":5120,"title":"A page of the site","depth":3,"links":27,"new_links":0,"fetch_ms":51,"worker":"host-1234",` +
		`"fetched_at":"2026-11-30T03:13:45.123456Z"}`)
	visit := &recrawl.Visit{ETag: `"abc123"`, Digest: "sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", Interval: 86400}
	pages := 0
	for i := 0; i < 20+n; i++ {
		done := make([]frontier.Finished, len(x.Popped))
		for j, l := range x.Popped {
			host := "http://" + l.Host
			links := []frontier.Item{
				{URL: fmt.Sprintf("%s/page/%d/%d", host, i, j), Depth: 3}, // new
				{URL: host + "/seed/0", Depth: 1},                         // seen
				{URL: fmt.Sprintf("%s/page/%d/%d", host, i/2, j), Depth: 3},
			}
			done[j] = frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: "ok", Fetched: true, Record: record,
				Visit: visit, Due: 24 * time.Hour, Children: links[:min(w.links, 3)]}}
		}
		if x, err = f.Exchange(ctx, done, nil, w.batch); err != nil {
			return 0, err
		}
		if len(x.Popped) != w.batch {
			return 0, fmt.Errorf("exchange %d popped %d of %d: the workload needs every host to have a token by its next turn (-rate)", i, len(x.Popped), w.batch)
		}
		if i >= 20 {
			pages += len(done)
		}
	}
	return pages, nil
}

// totals reads callgrind's total instruction count from its output file.
func totals(path string) (int64, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "totals:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s has no totals line", path)
}
