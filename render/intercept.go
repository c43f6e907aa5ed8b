package render

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// interceptor answers one page's paused requests.
type interceptor struct {
	url   string
	doc   *Response
	fetch Fetcher
	ctx   context.Context

	mu                        sync.Mutex
	docDone                   bool
	inflight                  int
	last                      time.Time
	requests, cached, refused int
}

func (in *interceptor) touch() {
	in.mu.Lock()
	in.last = time.Now()
	in.mu.Unlock()
}

// serve answers each paused request in a goroutine of its own.
func (in *interceptor) serve(events func(func(fetch.EventRequestPaused, error) bool)) {
	for ev, err := range events {
		if err != nil {
			return
		}
		in.mu.Lock()
		in.inflight++
		in.mu.Unlock()
		go in.answer(ev)
	}
}

// made says which resource types a page's requests are made for: those
// that build the document. The rest (images, media, fonts, the favicon,
// pings) are refused: they change no link and would spend the host's
// tokens.
var made = map[network.ResourceType]bool{network.ResourceTypeDocument: true, network.ResourceTypeScript: true,
	network.ResourceTypeStylesheet: true, network.ResourceTypeXHR: true, network.ResourceTypeFetch: true}

func (in *interceptor) answer(ev fetch.EventRequestPaused) {
	defer func() {
		in.mu.Lock()
		in.inflight--
		if made[ev.ResourceType] {
			// The page's scripts may act on what came (or failed): the page
			// is quiet a while after. An image or the favicon refused runs
			// none of its code worth waiting for (the favicon comes after
			// the load event, and would cost every page the wait again).
			in.last = time.Now()
		}
		in.mu.Unlock()
	}()
	r := ev.Request
	in.mu.Lock()
	first := !in.docDone && ev.ResourceType == network.ResourceTypeDocument && r.URL == in.url
	if first {
		in.docDone = true
	}
	in.mu.Unlock()
	var resp *Response
	var err error
	switch {
	case first:
		resp = in.doc
	case ev.ResourceType == network.ResourceTypeDocument:
		err = errors.New("a page's navigation elsewhere is not followed")
	case !made[ev.ResourceType] || r.Method != "GET":
		err = fmt.Errorf("%s %s requests are not made", r.Method, ev.ResourceType)
	default:
		resp, err = in.fetch(in.ctx, Request{URL: r.URL, Method: r.Method, Type: string(ev.ResourceType)})
	}
	in.mu.Lock()
	switch {
	case err != nil:
		in.refused++
	case !first && resp.Cached:
		in.requests++
		in.cached++
	case !first:
		in.requests++
	}
	in.mu.Unlock()
	if err != nil {
		chromedp.Call(in.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
		return
	}
	headers := []*fetch.HeaderEntry{{Name: "Content-Type", Value: resp.ContentType}}
	if resp.Location != "" {
		headers = append(headers, &fetch.HeaderEntry{Name: "Location", Value: resp.Location})
	}
	if resp.ContentType == "" {
		headers = headers[1:]
	}
	chromedp.Call(in.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: int64(resp.Status),
		ResponseHeaders: headers, Body: resp.Body})
}

// quiet waits until no request of the page has been in flight for q:
// until q after the last one ended, checked again then (while one is in
// flight, every q/8).
func (in *interceptor) quiet(ctx context.Context, q time.Duration) error {
	for {
		in.mu.Lock()
		wait := q / 8
		if in.inflight == 0 {
			wait = q - time.Since(in.last)
		}
		in.mu.Unlock()
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
