package crawl

import (
	"context"
	"crypto/sha1"
	"encoding/base32"
	"net/http"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/payloads"
	"github.com/redcrawl/crawler/frontier/recrawl"
	"github.com/redcrawl/crawler/parse"
)

// A revisit's fetch and archive: asked with its last validators, and
// archived as a revisit record when the answer is content archived before.

// fetchOf is how item is fetched: a sitemap up to the protocol's size, a
// revisit with its last validators (If-None-Match, If-Modified-Since).
func (pl *fetchLoops) fetchOf(p page) func(context.Context, string) (*fetch.Result, error) {
	visit := p.visit
	switch {
	case p.Kind == frontier.KindSitemap:
		return func(ctx context.Context, u string) (*fetch.Result, error) {
			// XML, text or a feed, often gzip'd: kept whatever its type, up
			// to the protocol's 50 MB
			return pl.fetcher.FetchBodyUpTo(ctx, u, parse.MaxSitemapBytes)
		}
	case visit != nil && (visit.ETag != "" || visit.LastModified != ""):
		return func(ctx context.Context, u string) (*fetch.Result, error) {
			return pl.fetcher.FetchIf(ctx, u, validators(visit))
		}
	}
	return pl.fetcher.Fetch
}

// archive writes the exchange to the WARC files: whole, or as a revisit
// record when its content is archived already: a 304 to the validators
// the URL's last visit sent, the payload that visit archived, or (with
// --dedup-payloads) a payload the crawl's digest index says another
// response archived (payloads.Index.ClaimAll). It returns the record's
// place, the payload digest, and where the content the answer stands for
// is archived whole (nil: nowhere).
func (pl *fetchLoops) archive(ctx context.Context, p page, r *fetch.Result) (archive.Location, string, *recrawl.Visit, error) {
	url, visit, start := p.URL, p.visit, p.start
	var earlier *payloads.Archived // another response with this payload
	d, claimed := "", ""           // its payload digest, when looked up; the digest this response claimed
	if pl.claims != nil && r.Status >= 200 && r.Status < 300 && !r.Truncated && len(r.Body) > 0 {
		d = archive.PayloadDigest(r.Raw.Response)
	}
	if d != "" && (visit == nil || visit.RefDate == 0 || d != visit.Digest) {
		hit, found, err := pl.claims.claim(ctx, payloads.Claim{Digest: d, URI: url, Date: start})
		switch {
		case err != nil:
			pl.log.Warn("the crawl's digest index is unavailable: archived whole", "url", url, "err", err)
		case found && hit.Date.Before(start):
			earlier = &hit
		case found:
			// Claimed by a fetch that began after this one (both were under
			// way at once): a revisit must refer to an earlier response, so
			// this one is archived whole too.
		default:
			claimed = d
		}
	}
	var ref *recrawl.Visit
	loc, digest, err := pl.warc.Archive(archive.Exchange{URL: url, Started: start, Raw: r.Raw, Truncated: r.Truncated}, func(digest string) *archive.Revisit {
		switch {
		case visit != nil && visit.RefDate != 0 && (r.Status == http.StatusNotModified || r.Status < 300 && digest == visit.Digest && !r.Truncated):
			ref = visit
			profile := archive.IdenticalPayloadDigest
			if r.Status == http.StatusNotModified {
				profile = archive.ServerNotModified
			}
			return &archive.Revisit{Profile: profile, URI: visit.Ref(url), Date: time.Unix(0, visit.RefDate)}
		case earlier != nil && digest == d:
			ref = &recrawl.Visit{RefURI: earlier.URI, RefDate: earlier.Date.UnixNano()}
			if earlier.URI == url {
				ref.RefURI = ""
			}
			return &archive.Revisit{Profile: archive.IdenticalPayloadDigest, URI: earlier.URI, Date: earlier.Date}
		}
		return nil
	})
	switch {
	case err != nil && claimed != "":
		// Not archived after all: a later response with this payload is.
		if uerr := pl.lf.digests.Unclaim(context.WithoutCancel(ctx), claimed, url, start); uerr != nil {
			pl.log.Warn("taking back a payload digest claim failed", "url", url, "err", uerr)
		}
	case err == nil && ref == nil && r.Status != http.StatusNotModified:
		ref = &recrawl.Visit{RefDate: start.UnixNano()} // archived whole, under its own URL
	}
	return loc, digest, ref, err
}

// answerDigest stands for an answer's content when it was not archived,
// for a revisit to compare with: the body's digest in the WARC files'
// form, or with no body (not downloaded, its type not kept) one of the
// headers that describe it, so that a page whose headers are the same
// counts as unchanged.
func answerDigest(body []byte, headers map[string]string) string {
	if len(body) > 0 {
		sum := sha1.Sum(body)
		return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
	}
	if headers["etag"] == "" && headers["last-modified"] == "" && headers["content-length"] == "" {
		return ""
	}
	sum := sha1.Sum([]byte(headers["etag"] + "\n" + headers["last-modified"] + "\n" + headers["content-length"]))
	return "head:" + base32.StdEncoding.EncodeToString(sum[:8])
}

// keptVisit is what a URL that failed for good keeps for its next fetch:
// its last visit, due again after its interval (nil: it had none).
func keptVisit(item frontier.Item) (*recrawl.Visit, time.Duration) {
	v := recrawl.Decode(item.V)
	if v == nil || item.Kind == frontier.KindSitemap {
		return nil, 0
	}
	return v, time.Duration(v.Interval) * time.Second
}
