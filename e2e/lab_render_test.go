package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/netlab"
	"github.com/redcrawl/crawler/internal/testsite"
)

// Application shells on http:// hosts with public-looking addresses and
// DNS names, as on the web, where Chromium would upgrade a navigation to
// https:// (HTTPS-Upgrades): with --render always and with --render auto,
// every page is fetched, those a browser must build rendered ok, and no
// request reaches the site with the browser's own User-Agent.
func TestInTheLabAppShellsOnPublicHostsAreRendered(t *testing.T) {
	chromium(t)
	bin, inside := lab(t)
	if !inside {
		return
	}
	hosts := map[string]string{"www.example-shop.com": "93.184.216.34", "app.example-news.com": "151.101.65.69"}
	netlab.Up(t, hosts, "93.184.216.34", "151.101.65.69")
	for _, c := range []struct{ mode, host string }{{"always", "www.example-shop.com"}, {"auto", "app.example-news.com"}} {
		t.Run(c.mode, func(t *testing.T) {
			site, err := testsite.Start(testsite.Config{Names: []string{c.host}, Listen: hosts[c.host] + ":80", Pages: 20, Scripted: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer site.Close()
			h := labHarness(t, bin)
			h.run(append([]string{"seed", "--rate", "inf", "--render", c.mode}, site.Roots()...)...)
			var ws []*proc
			if c.mode == "auto" { // a plain worker offers the samples
				ws = append(ws, h.startWorker("w1"))
			}
			ws = append(ws, h.startWorker("r1", "--render", "2", "-c", "2", "--render-timeout", "10s"))
			for _, w := range ws {
				w.awaitCleanExit(t)
			}
			if !strings.Contains(ws[len(ws)-1].log.String(), "isolation=netns") {
				t.Errorf("the render worker's browser is not in a namespace of its own:\n%s", ws[len(ws)-1].log.String())
			}
			requireTruth(t, site)
			if ss := site.Stats(); len(ss.Browser) > 0 {
				t.Errorf("requests with the browser's User-Agent (not through the fetcher): %v", ss.Browser)
			}
			recs := byURL(h)
			rendered := 0
			for _, u := range site.Truth() {
				u = canonical(u)
				r, ok := recs[u]
				if !ok {
					t.Errorf("%s has no record", u)
					continue
				}
				if r.Outcome != "ok" {
					t.Errorf("%s: %s %s", u, r.Outcome, r.Error)
				}
				if r.Render != nil {
					rendered++
				}
				// With --render always every page is rendered; with auto,
				// the pages fetched before the samples' verdict are not.
				if c.mode == "always" && r.Render == nil {
					t.Errorf("%s was not rendered under --render always", u)
				}
			}
			only := len(site.Truth()) - len(site.PlainTruth())
			t.Logf("--render %s: %d pages rendered; %d of the site's %d pages only a browser finds", c.mode, rendered, only, len(site.Truth()))
			if only == 0 || rendered == 0 {
				t.Errorf("nothing was rendered, or nothing needed it: the test proves nothing")
			}
			if t.Failed() {
				for _, w := range ws {
					t.Logf("%s:\n%s", w.id, w.log.String())
				}
			}
		})
	}
}

// canonical drops the default port a site's own URLs carry.
func canonical(u string) string { return strings.Replace(u, ":80/", "/", 1) }

// A rendered page that reaches for private addresses by every way that
// is not HTTP (RTCPeerConnections to STUN and TURN servers on 10.0.0.1
// and 169.254.169.254, over UDP and TCP) and by HTTP besides, and opens
// popups that do it again on a timer: nothing reaches those addresses,
// during the crawl or the 15 s after, whether the browser is in its own
// namespace or kept off the network by flags (a crawl with each). A
// page that waits on alert and confirm before it builds its links is
// rendered and its link followed.
func TestInTheLabARenderedPageReachesNoPrivateAddress(t *testing.T) {
	chromium(t)
	bin, inside := lab(t)
	if !inside {
		return
	}
	const ip, host = "23.215.0.138", "leaky.example-shop.com"
	netlab.Up(t, map[string]string{host: ip}, ip, "10.0.0.1", "169.254.169.254")
	packets := netlab.Count(t, "10.0.0.1", "169.254.169.254")
	// The counter counts: a packet of the test's own is seen.
	probe, err := net.Dial("udp4", "10.0.0.1:3478")
	if err != nil {
		t.Fatal(err)
	}
	probe.Write([]byte("probe"))
	probe.Close()
	deadline := time.Now().Add(5 * time.Second)
	for packets.N() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the counter's reader has no event to await
	}
	if packets.N() == 0 {
		t.Fatal("the counter did not see the test's own probe")
	}
	t.Logf("the test's own probe: %v", packets.By())
	before := packets.N()

	const pages = 8
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch {
		case r.URL.Path == "/":
			fmt.Fprint(w, "<html><body>")
			for i := range pages {
				fmt.Fprintf(w, `<a href="/l/%d.html">%d</a> `, i, i)
			}
			fmt.Fprint(w, `<a href="/dialogs.html">d</a></body></html>`)
		case strings.HasPrefix(r.URL.Path, "/l/"):
			fmt.Fprintf(w, "<html><body><p>%s</p><script>%s</script></body></html>", r.URL.Path, leakJS)
		case r.URL.Path == "/dialogs.html":
			fmt.Fprint(w, `<html><body><div id=app></div><script>alert('hello'); if (confirm('go on?')) {
document.getElementById('app').innerHTML = '<a href="/after-dialogs.html">next</a>' }</script></body></html>`)
		case r.URL.Path == "/after-dialogs.html":
			fmt.Fprint(w, "<html><body>the end</body></html>")
		default:
			http.NotFound(w, r)
		}
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(netlab.Listen(t, ip+":80"))
	defer srv.Close()

	var done time.Time
	for _, iso := range []string{"netns", "flags"} {
		h := labHarness(t, bin)
		h.run("seed", "--rate", "inf", "--render", "always", "http://"+host+"/")
		w := h.startWorker("r-"+iso, "--render", "2", "-c", "2", "--render-timeout", "10s", "--render-isolation", iso)
		w.awaitCleanExit(t)
		done = time.Now()
		recs := byURL(h)
		for u, r := range recs {
			if r.Outcome != "ok" || r.Render == nil {
				t.Errorf("%s: %s: %s %s (rendered: %v)", iso, u, r.Outcome, r.Error, r.Render != nil)
			}
		}
		if len(recs) != pages+3 {
			t.Errorf("%s: %d pages crawled; want %d", iso, len(recs), pages+3)
		}
		if d := recs["http://"+host+"/dialogs.html"].Render; d == nil || d.Dialogs != 2 {
			t.Errorf("%s: the page with dialogs: %+v; want rendered with 2 dialogs answered", iso, d)
		}
		if _, ok := recs["http://"+host+"/after-dialogs.html"]; !ok {
			t.Errorf("%s: the link built after the dialogs was not followed", iso)
		}
		t.Logf("%s: %d pages rendered; packets to the private addresses so far: %d", iso, len(recs), packets.N()-before)
	}
	time.Sleep(time.Until(done.Add(15 * time.Second))) // the acceptance's 15 s after the crawl
	if n := packets.N() - before; n != 0 {
		t.Errorf("%d packets reached the private addresses: %v", n, packets.By())
	}
}

// leakJS tries every way out a page has, and opens popups that try again
// on a timer.
const leakJS = `
function leak() {
  try {
    const pc = new RTCPeerConnection({iceServers: [
      {urls: ['stun:10.0.0.1:3478', 'stun:169.254.169.254:3478']},
      {urls: ['turn:10.0.0.1:3478?transport=udp', 'turn:10.0.0.1:3479?transport=tcp'], username: 'u', credential: 'p'}]});
    pc.createDataChannel('x');
    pc.createOffer().then(o => pc.setLocalDescription(o));
  } catch (e) {}
  fetch('http://10.0.0.1/f', {mode: 'no-cors'}).catch(() => {});
  fetch('http://169.254.169.254/latest/meta-data/').catch(() => {});
  try { new WebSocket('ws://10.0.0.1:8080/') } catch (e) {}
  try { navigator.sendBeacon('http://10.0.0.1/beacon', 'x') } catch (e) {}
  const img = new Image(); img.src = 'http://169.254.169.254/i.png';
}
leak();
setInterval(() => {
  const w = window.open('about:blank');
  if (w) { try { w.eval('(' + leak.toString() + ')(); setInterval(' + leak.toString() + ', 100)') } catch (e) {} }
}, 100);
`
