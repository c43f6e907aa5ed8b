package crawl

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/rendering"
	"github.com/redcrawl/crawler/render"
)

// Samples: samplesPerHost that found nothing decide that a host needs no
// browser (one that found what the plain fetch missed decides it does).
// A plain worker offers every page it fetched of a host being learnt, up
// to samplesReserve (each such page's script-built links are found only
// if the host turns out to need a browser, by rendering it then), and
// every one of a host that needs one; no more wait than samplesWaiting
// in all (a crawl without a render worker keeps no more than that). A
// render worker claims one for two of its page timeouts (the page, and
// its document's wait for a token): killed, its sample goes to another
// after that.
const (
	samplesPerHost = 3
	samplesReserve = 100
	samplesWaiting = 10_000
)

// offerSample: with --render auto, a plain worker offers an HTML page it
// fetched as a sample of its host, unless this process knows the host
// needs none (it has its verdict, or its samples).
func (pl *fetchLoops) offerSample(ctx context.Context, lv *live, p page, r *fetch.Result) {
	u := p.url
	if lv.render.Mode != settings.RenderAuto || pl.render != nil || p.Kind == frontier.KindSitemap || !r.HTML ||
		r.Status < 200 || r.Status >= 300 || pl.sampled.Has(u.Host) {
		return
	}
	queued, verdict, err := pl.renderCall().OfferSample(ctx, rendering.Sample{URL: p.URL, Host: u.Host, Depth: p.Depth, Parent: p.Parent},
		samplesReserve, samplesWaiting)
	switch {
	case err != nil:
		pl.log.Warn("offering a sample of a host to the render workers failed", "host", u.Host, "err", err)
	case verdict == rendering.VerdictPlain || !queued && verdict == rendering.VerdictLearning:
		pl.sampled.Add(u.Host) // no more of it: it needs no browser, or has its reserve
	case !queued:
		pl.log.Warn("a page of a host that needs a browser was fetched plainly, and too many samples wait to render it: "+
			"links its scripts make are missed (start more render workers)", "url", p.URL)
	}
}

// sampleLoop: a render worker of a crawl with --render auto renders the
// samples plain workers offer, one at a time, until ctx ends.
func (pl *fetchLoops) sampleLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if pl.cur.Load().render.Mode != settings.RenderAuto {
			sleep(ctx, time.Second)
			continue
		}
		s, raw, verdict, ok, err := pl.renderCall().ClaimSample(ctx, 2*pl.renderOpts.PageTimeout)
		switch {
		case err != nil:
			pl.log.Warn("claiming a sample failed", "err", err)
			sleep(ctx, time.Second)
		case !ok:
			sleep(ctx, 250*time.Millisecond)
		case verdict == rendering.VerdictPlain: // learnt since it was offered: nothing to render
			pl.tell(ctx, s, raw, false, nil)
		default:
			pl.sample(ctx, s, raw)
		}
	}
}

// sample renders one sample and compares its links with its plain
// HTML's: found, rendering found links the plain fetch missed (one, and
// a tenth more than the plain page had). A host found to need a browser
// goes to the render lane, and the links its samples found are queued.
func (pl *fetchLoops) sample(ctx context.Context, s rendering.Sample, raw string) {
	lv := pl.cur.Load()
	u, err := url.Parse(s.URL)
	if err != nil {
		pl.tell(ctx, s, raw, false, nil)
		return
	}
	deadline := time.Now().Add(pl.renderOpts.PageTimeout)
	doc, plain, err := pl.sampleDocument(ctx, u, s, deadline)
	if err != nil || !plain.HTML || plain.Status < 200 || plain.Status >= 300 {
		if ctx.Err() == nil {
			pl.tell(ctx, s, raw, false, nil)
		}
		return
	}
	rendered, err := pl.render.Render(ctx, s.URL, &render.Response{Status: plain.Status, ContentType: "text/html", Body: plain.Body},
		pl.subresources(u, lv, deadline))
	if err != nil {
		if ctx.Err() == nil {
			pl.log.Warn("rendering a sample failed: told as finding nothing", "url", s.URL, "err", err)
			pl.tell(ctx, s, raw, false, nil)
		}
		return
	}
	if pl.warc != nil && doc != nil && doc.RecordID != "" {
		if _, err := pl.warc.Conversion(*doc, s.URL, time.Now(), "text/html", rendered.DOM); err != nil {
			pl.fail(archiveFailed(err))
			return
		}
	}
	dom := *plain
	dom.Body = rendered.DOM
	missed, found := pl.compare(ctx, lv, page{Item: frontier.Item{URL: s.URL, Depth: s.Depth, Parent: s.Parent}, url: u}, plain, &dom)
	pl.tell(ctx, s, raw, found, missed)
}

// compare is what rendering found that the plain fetch missed: the links
// of the DOM the plain HTML lacks, and whether they say the page needs a
// browser (one, and a tenth more than the plain page had).
func (pl *fetchLoops) compare(ctx context.Context, lv *live, p page, plain, dom *fetch.Result) ([]frontier.Item, bool) {
	before := pl.links(ctx, lv, p, plain, &Record{})
	after := pl.links(ctx, lv, p, dom, &Record{})
	had := make(map[string]bool, len(before))
	for _, l := range before {
		had[l.URL] = true
	}
	var missed []frontier.Item
	for _, l := range after {
		if !had[l.URL] {
			missed = append(missed, l)
		}
	}
	return missed, len(missed) >= 1+len(before)/10
}

// sampleDocument fetches a sample's page as a subresource is fetched (it
// is no popped URL: robots.txt and a token of its own), archived.
func (pl *fetchLoops) sampleDocument(ctx context.Context, u *url.URL, s rendering.Sample, deadline time.Time) (*archive.Location, *fetch.Result, error) {
	if v, err := pl.robots.Check(ctx, u); err != nil || !v.Allowed {
		return nil, nil, fmt.Errorf("robots.txt: %v", err)
	}
	if err := pl.token(ctx, u.Host, deadline); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	r, err := pl.fetcher.Fetch(ctx, s.URL)
	pl.counters.Requests.Add(1)
	if err != nil {
		return nil, nil, err
	}
	if pl.warc == nil || r.Raw == nil {
		return nil, r, nil
	}
	loc, _, err := pl.warc.Archive(archive.Exchange{URL: s.URL, Started: start, Raw: r.Raw, Truncated: r.Truncated}, nil)
	if err != nil {
		pl.fail(archiveFailed(err))
		return nil, nil, err
	}
	return &loc, r, nil
}

// tell says what a sample found; a host found to need a browser goes to
// the render lane, and the links only rendering found are queued.
func (pl *fetchLoops) tell(ctx context.Context, s rendering.Sample, raw string, found bool, missed []frontier.Item) {
	verdict, err := pl.renderCall().TellSample(ctx, s, raw, found, samplesPerHost)
	if err != nil {
		pl.log.Warn("telling a sample failed; its claim lapses and another render worker renders it", "url", s.URL, "err", err)
		return
	}
	if verdict != rendering.VerdictRender {
		return
	}
	if _, err := pl.renderCall().SetLane(ctx, s.Host, frontier.LaneRender); err != nil {
		pl.log.Warn("putting a host in the render lane failed", "host", s.Host, "err", err)
		return
	}
	if found {
		pl.log.Info("rendering finds what the plain fetch missed: the host goes to the render lane", "host", s.Host,
			"sample", s.URL, "missed_links", len(missed))
	}
	if len(missed) > 0 {
		if _, err := pl.enqueueRendered(ctx, missed); err != nil {
			pl.log.Warn("queueing a sample's links failed", "url", s.URL, "err", err)
		}
	}
}
