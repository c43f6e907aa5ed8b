package e2e

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/internal/membersite"
	"github.com/redcrawl/crawler/internal/redistest"
)

// The crawl behind a login, as a user runs it: seed --login-url
// with the form in a file, two 'crawler work -c 4' processes at --rate inf
// on a site of 200 member pages whose sessions end after 50 requests:
// every member page recorded ok, at most 200/50 + 3 logins, and the
// password in no output of any command.
func TestTwoWorkerProcessesShareOneLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	const secret = "e2e-pw-kept-secret"
	site := membersite.New("alice", secret, 200, 50)
	ln, err := net.Listen("tcp", "127.0.0.62:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: site}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	form := filepath.Join(t.TempDir(), "form")
	os.WriteFile(form, []byte("user=alice&password="+secret+"\n"), 0o600)
	s := redistest.Real(t)
	h := &harness{t: t, bin: build(t), redis: s.URL(), procs: map[string]*proc{}}
	base := "http://" + ln.Addr().String()
	printed := string(h.run("seed", "--allow-private", "--rate", "inf", "--login-url", base+"/login", "--login-form", "@"+form,
		"--logged-out", "/login", base+"/members/0"))
	w1, w2 := h.startWorker("w1", "-c", "4"), h.startWorker("w2", "-c", "4")
	awaitWorkers(t, w1, w2)
	ok := map[string]bool{}
	for _, r := range h.records() {
		if r.Outcome == "ok" && r.Status == 200 {
			ok[r.URL] = true
		}
	}
	for n := range 200 {
		if u := base + "/members/" + strconv.Itoa(n); !ok[u] || site.Served(n) == 0 {
			t.Errorf("%s: recorded ok %v, answered with its content %d times", u, ok[u], site.Served(n))
		}
	}
	t.Logf("%d logins, %d member requests answered as logged out", site.Posts(), site.Refused())
	if most := 200/50 + 3; site.Posts() > most {
		t.Errorf("%d logins; at most %d", site.Posts(), most)
	}
	printed += w1.log.String() + w2.log.String() + string(h.run("status")) + string(h.run("export"))
	if strings.Contains(printed, secret) {
		t.Error("the password is in a command's output")
	}
}
