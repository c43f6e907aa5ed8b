package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
)

// slowSite is a host whose every page takes a second to answer (less if
// its client goes), and which counts the requests in flight at once: the
// most it saw, when it first saw the cap reached after a moment, and who
// (the client's port) is asking now.
type slowSite struct {
	mu       sync.Mutex
	inFlight map[string]bool // client address -> a page request of it in flight
	most     int
	fetched  map[string]int
	fullAt   []time.Time // each time the requests in flight reached two
}

func (s *slowSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/robots.txt":
		http.NotFound(w, r)
		return
	case r.URL.Path == "/":
		w.Header().Set("Content-Type", "text/html")
		for i := range 40 {
			fmt.Fprintf(w, `<a href="/p/%d">%d</a>`, i, i)
		}
		return
	}
	s.mu.Lock()
	s.inFlight[r.RemoteAddr] = true
	s.most = max(s.most, len(s.inFlight))
	if len(s.inFlight) == 2 {
		s.fullAt = append(s.fullAt, time.Now())
	}
	s.mu.Unlock()
	select {
	case <-time.After(time.Second):
	case <-r.Context().Done():
	}
	s.mu.Lock()
	delete(s.inFlight, r.RemoteAddr)
	if r.Context().Err() == nil {
		s.fetched[r.URL.Path]++
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<p>page %s</p>", r.URL.Path)
}

// asking is the client port of a request in flight, or 0.
func (s *slowSite) asking() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for a := range s.inFlight {
		if _, p, err := net.SplitHostPort(a); err == nil {
			n, _ := strconv.Atoi(p)
			return n
		}
	}
	return 0
}

// --host-concurrency 2 on a host that takes a second a page, two workers of
// 8 loops at --rate inf: the host never sees more than 2 requests at once,
// and does see 2 (the cap is used); a worker killed (SIGKILL) while its
// request is in flight holds its slot only until its lease lapses (10 s),
// and every page is fetched in the end.
func TestAHostsCapOfRequestsInFlightHoldsAcrossWorkersAndAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	site := &slowSite{inFlight: map[string]bool{}, fetched: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.61:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: site}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s := redistest.Real(t)
	h := &harness{t: t, bin: build(t), redis: s.URL(), procs: map[string]*proc{}}
	h.run("seed", "--allow-private", "--rate", "inf", "--host-concurrency", "2", "http://"+ln.Addr().String()+"/")
	w1, w2 := h.startWorker("w1"), h.startWorker("w2")

	// A moment when both slots were used and a request is in flight: its
	// worker is the one killed.
	h.waitFor("two requests at once, and pages fetched", func(status) bool {
		site.mu.Lock()
		defer site.mu.Unlock()
		return len(site.fullAt) > 0 && len(site.fetched) >= 4 && len(site.inFlight) > 0
	})
	var victim, other *proc
	for victim == nil {
		port := site.asking()
		switch pid := ownerOfPort(t, port, w1.cmd.Process.Pid, w2.cmd.Process.Pid); pid {
		case w1.cmd.Process.Pid:
			victim, other = w1, w2
		case w2.cmd.Process.Pid:
			victim, other = w2, w1
		default:
			time.Sleep(10 * time.Millisecond) // the request ended as it was looked up: the next one
		}
	}
	site.mu.Lock()
	fulls := len(site.fullAt)
	site.mu.Unlock()
	killed := time.Now()
	victim.cmd.Process.Signal(syscall.SIGKILL)
	<-victim.done
	t.Logf("SIGKILLed %s during a request", victim.id)
	other.awaitCleanExit(t)

	site.mu.Lock()
	defer site.mu.Unlock()
	if site.most > 2 {
		t.Errorf("the host saw %d requests at once; the cap is 2", site.most)
	}
	if site.most < 2 {
		t.Errorf("the host never saw 2 requests at once: the cap was not used")
	}
	for i := range 40 {
		if site.fetched[fmt.Sprintf("/p/%d", i)] == 0 {
			t.Errorf("/p/%d was never fetched", i)
		}
	}
	// Once the killed worker's lease lapsed, its slot was used again:
	// two at once, within the lease (10 s) and the exchanger's pace.
	var again time.Duration = -1
	for _, at := range site.fullAt[fulls:] {
		if at.After(killed) {
			again = at.Sub(killed)
			break
		}
	}
	t.Logf("the host saw %d at most; after the kill, 2 at once again %v later", site.most, again)
	if again < 0 || again > 15*time.Second {
		t.Errorf("after the kill, 2 requests at once came %v later; want within the lease (10 s) and a few seconds", again)
	}
}

// ownerOfPort is which of pids has a TCP socket whose local port is port
// (on this machine: /proc), or 0.
func ownerOfPort(t *testing.T, port int, pids ...int) int {
	if port == 0 {
		return 0
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 {
				continue
			}
			local := f[1]
			if p, err := strconv.ParseInt(local[strings.LastIndexByte(local, ':')+1:], 16, 32); err == nil && int(p) == port {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	for _, pid := range pids {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			if link, err := os.Readlink(fd); err == nil && inodes[link] {
				return pid
			}
		}
	}
	return 0
}
