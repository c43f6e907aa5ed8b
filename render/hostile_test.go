package render_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcrawl/crawler/render"
)

// html is a page's document, as the caller fetched it.
func html(body string) *render.Response {
	return &render.Response{Status: 200, ContentType: "text/html", Body: []byte("<!doctype html><html><body>" + body + "</body></html>")}
}

// refuseAll is a Fetcher for pages that need no subresource.
func refuseAll(context.Context, render.Request) (*render.Response, error) {
	return nil, errors.New("no subresources here")
}

// isolations are the pool's two ways of keeping a browser off the
// network: the namespace where this machine allows one, and the flags.
func isolations(t *testing.T) []render.Isolation {
	out := []render.Isolation{render.IsolateFlags}
	p, err := render.New(render.Options{Isolation: render.IsolateNetns})
	switch {
	case errors.Is(err, render.ErrNoBrowser):
		pool(t, render.Options{}) // skips, or fails in CI
	case err != nil:
		t.Logf("no network namespace here, the flags alone are tested: %v", err)
	default:
		p.Close()
		out = append(out, render.IsolateNetns)
	}
	return out
}

// A page whose script waits on alert, confirm and prompt before it builds
// its links renders with them: each dialog was answered, and counted.
func TestDialogsAreAnsweredSoThePageGoesOn(t *testing.T) {
	p := pool(t, render.Options{PageTimeout: 10 * time.Second})
	doc := html(`<div id=app></div><script>
alert('hello'); const ok = confirm('go on?'); const name = prompt('name?');
const a = document.createElement('a'); a.href = ok ? '/after-dialogs' : '/dismissed'; a.textContent = String(name);
document.getElementById('app').appendChild(a);
</script>`)
	page, err := p.Render(context.Background(), "http://127.0.0.1:9/dialogs", doc, refuseAll)
	if err != nil {
		t.Fatalf("a page with dialogs: %v", err)
	}
	if !strings.Contains(string(page.DOM), `href="/after-dialogs"`) {
		t.Errorf("the links built after the dialogs are missing (confirm not accepted?): %s", page.DOM)
	}
	if page.Dialogs != 3 {
		t.Errorf("dialogs counted %d; want 3 (alert, confirm, prompt)", page.Dialogs)
	}
}

// Every window a page opens, at once or on a timer, is blocked or closed
// while the page renders: none outlives it, its requests unpaused.
func TestAPagesPopupsDoNotOutliveIt(t *testing.T) {
	for _, iso := range isolations(t) {
		t.Run(string(iso), func(t *testing.T) {
			p := pool(t, render.Options{Isolation: iso, Quiet: 600 * time.Millisecond})
			doc := html(`<div id=out>pending</div><script>
const ws = [window.open('about:blank'), window.open('/popup', '_blank', 'popup')];
let n = 0;
const timer = setInterval(() => { ws.push(window.open('about:blank?' + n)); if (++n == 5) clearInterval(timer) }, 20);
setTimeout(() => { document.getElementById('out').textContent = ws.map(w => w === null ? 'blocked' : w.closed ? 'closed' : 'open').join(' ') }, 400);
fetch('/ping').catch(() => {});
setTimeout(() => fetch('/ping').catch(() => {}), 450);
</script>`)
			page, err := p.Render(context.Background(), "http://127.0.0.1:9/popups", doc, refuseAll)
			if err != nil {
				t.Fatal(err)
			}
			dom := string(page.DOM)
			out := dom[strings.Index(dom, "<div"):strings.Index(dom, "</div>")]
			if strings.Contains(out, "pending") {
				t.Fatalf("the page's check never ran: %s", dom)
			}
			if strings.Contains(out, "open") {
				t.Errorf("a window the page opened was still open: %s", out)
			}
			t.Logf("%s: windows %s, popups counted %d", iso, out, page.Popups)
		})
	}
}

// A page that asks for STUN and TURN servers (WebRTC: UDP and TCP, never
// seen by request interception) sends them nothing, with either
// isolation; with the flags the page finds no RTCPeerConnection, in the
// namespace it finds one and nothing leaves.
func TestWebRTCReachesNothing(t *testing.T) {
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tcp, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	var packets, conns atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			packets.Add(1)
		}
	}()
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	up := udp.LocalAddr().(*net.UDPAddr).Port
	tp := tcp.Addr().(*net.TCPAddr).Port
	for _, iso := range isolations(t) {
		t.Run(string(iso), func(t *testing.T) {
			p := pool(t, render.Options{Isolation: iso, Quiet: time.Second})
			doc := html(fmt.Sprintf(`<div id=out>none</div><script>
try {
  const pc = new RTCPeerConnection({iceServers: [{urls: 'stun:127.0.0.1:%d'},
    {urls: ['turn:127.0.0.1:%d?transport=udp', 'turn:127.0.0.1:%d?transport=tcp'], username: 'u', credential: 'p'}]});
  pc.createDataChannel('x');
  pc.createOffer().then(o => pc.setLocalDescription(o));
  document.getElementById('out').textContent = 'made';
} catch (e) { document.getElementById('out').textContent = 'refused: ' + e }
</script>`, up, up, tp))
			page, err := p.Render(context.Background(), "http://127.0.0.1:9/webrtc", doc, refuseAll)
			if err != nil {
				t.Fatal(err)
			}
			made := strings.Contains(string(page.DOM), ">made<")
			if iso == render.IsolateFlags && made {
				t.Errorf("with the flags a page made an RTCPeerConnection")
			}
			if iso == render.IsolateNetns && !made {
				t.Errorf("in the namespace the page could not make its RTCPeerConnection, so the test proves nothing: %s", page.DOM)
			}
			// ICE gathering sends its first STUN request at once and
			// retries for seconds: the page's quiet second and this one
			// give it time to.
			time.Sleep(time.Second)
			if n, c := packets.Load(), conns.Load(); n != 0 || c != 0 {
				t.Errorf("%d UDP packets and %d TCP connections reached the STUN/TURN servers", n, c)
			}
		})
	}
}

// A page that fills memory past MaxRSS is stopped while it renders: the
// browser's memory (sampled here apart from the pool) stays well under
// half as much again, the page fails with ErrMemory, and the next page
// renders in a new browser.
func TestAPageIsStoppedAtTheMemoryCap(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a gigabyte: skipped with -short")
	}
	const capBytes = 1 << 30
	p := pool(t, render.Options{MaxRSS: capBytes, PageTimeout: 20 * time.Second})
	stop := make(chan struct{})
	peak := make(chan int64)
	go func() { peak <- samplePss(stop) }()
	doc := html(`<div id=out></div><script>
window.keep = [];
for (let i = 0; i < 20; i++) { const a = new Float64Array(100e6 / 8); a.fill(i + 1); window.keep.push(a) }
document.getElementById('out').textContent = 'filled';
</script>`)
	_, err := p.Render(context.Background(), "http://127.0.0.1:9/hog", doc, refuseAll)
	close(stop)
	seen := <-peak
	if !errors.Is(err, render.ErrMemory) {
		t.Fatalf("a page of 2 GB under a 1 GiB cap: %v; want render.ErrMemory", err)
	}
	t.Logf("the page: %v; the browser's peak: %d MiB sampled here, %d MiB by the pool", err, seen>>20, p.PeakRSS()>>20)
	if seen >= capBytes*3/2 {
		t.Errorf("the browser's memory peaked at %d MiB; want under %d MiB", seen>>20, capBytes*3/2>>20)
	}
	if seen < capBytes/2 {
		t.Errorf("the browser's memory peaked at %d MiB only: the page did not fill it, the test proves nothing", seen>>20)
	}
	page, err := p.Render(context.Background(), "http://127.0.0.1:9/next", html(`<a href="/next-link">x</a>`), refuseAll)
	if err != nil || !strings.Contains(string(page.DOM), "/next-link") {
		t.Fatalf("the page after the stopped one: %v", err)
	}
	if p.Started.Load() != 2 {
		t.Errorf("browsers started %d; want 2 (the stopped one replaced)", p.Started.Load())
	}
}

// samplePss samples the proportional memory of this process's
// descendants every 10 ms until stop, and returns the most seen.
func samplePss(stop <-chan struct{}) int64 {
	var most int64
	for {
		select {
		case <-stop:
			return most
		case <-time.After(10 * time.Millisecond):
		}
		var sum int64
		for _, pid := range descendants(os.Getpid()) {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "Pss:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					sum += kb << 10
				}
			}
		}
		most = max(most, sum)
	}
}

// descendants are the processes under pid (not pid itself).
func descendants(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	kids := map[int][]int{}
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		c, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
		kids[pp] = append(kids[pp], c)
	}
	var out []int
	todo := append([]int(nil), kids[pid]...)
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		out = append(out, c)
		todo = append(todo, kids[c]...)
	}
	return out
}

// A browser that cannot start in a namespace: asked for one (netns), the
// pool is refused with one line that says what to do; with auto it falls
// back to the flags and says so in the log.
func TestWithoutANamespaceNetnsFailsAndAutoFallsBack(t *testing.T) {
	noNamespace := "/bin/false" // exits 1 wherever it runs: as a browser that cannot start in a namespace
	_, err := render.New(render.Options{Exec: noNamespace, Isolation: render.IsolateNetns})
	if err == nil || !strings.Contains(err.Error(), "--render-isolation flags") {
		t.Fatalf("netns where none can be made: %v; want an error that names --render-isolation flags", err)
	}
	var log strings.Builder
	p, err := render.New(render.Options{Exec: noNamespace, Isolation: render.IsolateAuto, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Isolation() != render.IsolateFlags || !strings.Contains(log.String(), "flags only") {
		t.Errorf("auto where no namespace can be made: %s, log %q; want flags, said in the log", p.Isolation(), log.String())
	}
	if _, err := render.ParseIsolation("sandbox"); err == nil {
		t.Error("ParseIsolation took sandbox")
	}
}
