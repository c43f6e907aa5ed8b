package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redcrawl/crawler/internal/testsite"
)

// The test site's scripted host in a real browser, as a crawler that
// lets its browser go to the network would see it: a shell page ends up
// with every link /api/links gives, and the home page's script reaches
// both traps outside the scope, with the browser's own User-Agent. This
// is what the site's stats must catch (Stats.Trapped, Stats.Browser)
// when a rendering crawler does let its browser out.
func TestTheScriptedHostBuildsItsLinksInABrowser(t *testing.T) {
	browser := chromium(t)
	site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 20, Scripted: 1, ListenBase: "127.0.0.233"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox)...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, time.Minute)
	defer cancel()
	root := site.Roots()[1]
	if err := chromedp.Do(ctx, chromedp.Navigate(root+"p/3.html"), chromedp.WaitVisible(chromedp.CSS("#app[data-done]"))); err != nil {
		t.Fatalf("chromium on the shell: %v", err)
	}
	done, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#app"), "data-done"))
	if err != nil {
		t.Fatal(err)
	}
	anchors, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#app a').length`))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(done.Value); n < 3 || anchors != n {
		t.Fatalf("the shell built %d anchors, said %q; want the links /api/links gave, 3 or more", anchors, done.Value)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(root), chromedp.WaitVisible(chromedp.CSS("#app[data-done]"))); err != nil {
		t.Fatalf("chromium on the home page: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(site.Stats().Trapped) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // the probes are fire-and-forget: the site's count is the event
	}
	st := site.Stats()
	if len(st.Trapped) != 2 {
		t.Errorf("trapped %v; want both traps reached by a browser let out", st.Trapped)
	}
	if len(st.Browser) == 0 || !strings.Contains(strings.Join(st.Browser, " "), "/app.js") {
		t.Errorf("requests with a browser's agent: %v; want the shell's, its script's among them", st.Browser)
	}
}
