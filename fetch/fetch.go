// Package fetch is the crawler's HTTP client: bounded in time and size,
// never following redirects itself, refusing private addresses unless told
// otherwise, and sorting failures into transient and permanent. It knows
// nothing of Redis.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/publicsuffix"
)

// Config bounds every fetch. Start from DefaultConfig.
type Config struct {
	UserAgent      string
	ConnectTimeout time.Duration // TCP (and TLS) connect
	HeaderTimeout  time.Duration // from request sent to response headers
	Timeout        time.Duration // the whole fetch, body included
	// MaxBody is the most body bytes read, after decompression (so a gzip
	// bomb stops here too); a longer body is cut and Result.Truncated set.
	MaxBody int64
	// AllowPrivate permits loopback, private, link-local and unspecified
	// addresses. Off by default: a crawler that follows links from the open
	// web must not be steered into the network it runs in.
	AllowPrivate bool
	// Headers are sent with every request; they may not replace the
	// User-Agent or the headers HTTP itself manages (see CheckHeader).
	Headers http.Header
	// Cookies keeps the cookies hosts set, per host, for the Fetcher's life.
	Cookies bool
	// Jar, when set, is the cookie jar every request goes with instead
	// (a crawl's shared login session: package session); Cookies is then
	// not used.
	Jar http.CookieJar
	// Proxy gives the proxy for a request (nil: none, or none for that
	// request: it goes direct). Through a proxy the SSRF guard judges the
	// target's addresses here and the proxy is asked for a tunnel to the
	// one judged (dial.go); http, https and socks5 proxies.
	Proxy func(*http.Request) (*url.URL, error)
	// Keep says which media types (besides HTML, always read for its
	// links) have their bodies downloaded; a 2xx answer of another type is
	// closed after its headers (Result.DroppedBody). Nil keeps only HTML.
	Keep func(mediaType string) bool
	// Capture keeps each exchange's bytes as they crossed the wire
	// (Result.Raw), for a WARC archive. It limits the client to HTTP/1.1,
	// whose exchanges have bytes of their own on a connection.
	Capture bool
	// DNS, when set, is the DNS server ("host:port") asked instead of the
	// system's (the test site's, or a crawl's own resolver). Either way
	// the answers are cached for as long as their TTLs say (an hour at
	// most), for DNSCacheNames names at most: a host is not resolved
	// again for every connection a crawl opens to it.
	DNS string
	// blocked replaces Blocked (the tests' own idea of a public address:
	// every server they may reach is on loopback).
	blocked func(net.IP) bool
}

// DNSCacheNames bounds a Fetcher's DNS cache; the entries nearest their
// end make room.
const DNSCacheNames = 10000

// Idle connections are kept for reuse, but bounded: IdleConns in all (a
// crawl of ten thousand hosts does not keep ten thousand sockets and their
// buffers), IdleConnsPerHost to each host, none longer than IdleFor.
const (
	IdleConns        = 1024
	IdleConnsPerHost = 4
	IdleFor          = 30 * time.Second
)

// DefaultConfig: 5 s connect, 10 s to headers, 30 s in all, 5 MiB of body.
func DefaultConfig() Config {
	return Config{
		UserAgent:      "RedCrawl/0.1 (+https://github.com/redcrawl/crawler)",
		ConnectTimeout: 5 * time.Second,
		HeaderTimeout:  10 * time.Second,
		Timeout:        30 * time.Second,
		MaxBody:        5 << 20,
	}
}

// ErrBlockedAddress: the host resolved to an address the SSRF guard refuses.
var ErrBlockedAddress = errors.New("fetch: address not allowed (not globally reachable: private, loopback, link-local, reserved or special-purpose; see --allow-private)")

// Result is one HTTP exchange.
type Result struct {
	Status int
	// Proto is the HTTP version the answer came in: "HTTP/1.0", "HTTP/1.1"
	// or "HTTP/2.0" (with Config.Capture, never 2: the WARC record keeps
	// the exchange as HTTP/1.1 sent it).
	Proto       string
	ContentType string // media type only, lower case
	HTML        bool
	Body        []byte // kept for HTML only
	Bytes       int64  // body bytes read
	Truncated   bool
	// DroppedBody: a 2xx answer of a type not kept; its body was not
	// downloaded past the headers.
	DroppedBody bool
	// Location is a redirect's target, resolved against the request URL.
	Location   string
	RetryAfter time.Duration // from a 429 or 503's Retry-After
	Duration   time.Duration
	Raw        *Raw // with Config.Capture: the exchange as it crossed the wire
	// Headers are the response headers a record keeps: content-length,
	// last-modified, etag and location, when present.
	Headers map[string]string
	// RobotsTags are the response's X-Robots-Tag headers, as sent
	// (parse.XRobotsTag reads them).
	RobotsTags []string
	// LinkHeaders are the response's Link headers (RFC 8288), as sent
	// (parse.LinkTargets reads them: a canonical for any type).
	LinkHeaders []string
}

// maxRobotsTags bounds the X-Robots-Tag headers, and the Link headers,
// kept of one response.
const maxRobotsTags = 32

// keptHeaders are the response headers a Result keeps.
var keptHeaders = []string{"Content-Length", "Last-Modified", "Etag", "Location"}

// Error is a failed fetch, transient (worth a retry later) or not.
type Error struct {
	Transient bool
	Err       error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// IsTransient reports whether err is worth retrying later.
func IsTransient(err error) bool {
	var fe *Error
	return errors.As(err, &fe) && fe.Transient
}

// TransientStatus: 429 and 5xx are the server's "not now".
func TransientStatus(code int) bool { return code == http.StatusTooManyRequests || code >= 500 }

// Fetcher fetches pages. Safe for concurrent use; share one.
type Fetcher struct {
	cfg    Config
	client *http.Client
	now    func() time.Time
	ident  atomic.Pointer[identity] // cfg's UserAgent and Headers, or what SetIdentity set since
}

// New builds a Fetcher with one shared transport.
func New(cfg Config) *Fetcher {
	d := newDialer(cfg)
	tr := &http.Transport{
		// No Proxy: the dialer tunnels through the request's proxy itself
		// (to the address the guard judged), and the request goes in the
		// tunnel as it would directly.
		DialContext:           d.dial,
		TLSHandshakeTimeout:   cfg.ConnectTimeout,
		ResponseHeaderTimeout: cfg.HeaderTimeout,
		MaxIdleConns:          IdleConns,
		MaxIdleConnsPerHost:   IdleConnsPerHost,
		IdleConnTimeout:       IdleFor,
		ForceAttemptHTTP2:     !cfg.Capture,
	}
	if cfg.Capture {
		// Room for the headers besides the body; the body itself is cut
		// where the reader stops.
		tr.DialContext, tr.DialTLSContext = capturingDialers(d, int(cfg.MaxBody)+1<<20)
	}
	client := &http.Client{
		Transport: tr,
		Timeout:   cfg.Timeout,
		// A redirect's target is a discovered URL: it goes through scope,
		// dedup and politeness like any link, so it is never followed here.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if cfg.Jar != nil {
		client.Jar = cfg.Jar
	} else if cfg.Cookies {
		client.Jar, _ = cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List}) // never fails
	}
	f := &Fetcher{cfg: cfg, now: time.Now, client: client}
	f.SetIdentity(cfg.UserAgent, cfg.Headers)
	return f
}

// CheckHeader refuses headers a crawl may not set: the User-Agent has a
// setting of its own, and HTTP manages the others.
func CheckHeader(name string) error {
	switch http.CanonicalHeaderKey(name) {
	case "User-Agent", "Host", "Content-Length", "Transfer-Encoding", "Connection", "Accept-Encoding", "Te", "Upgrade":
		return fmt.Errorf("fetch: header %q cannot be set", name)
	}
	if name == "" || strings.ContainsAny(name, " :\r\n") {
		return fmt.Errorf("fetch: %q is not a header name", name)
	}
	return nil
}

// Fetch GETs rawURL. A response of any status is a Result (with a nil
// error, even for 404 or 500: the status says what happened); an error
// means no usable response, and is an *Error that says whether to retry.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Result, error) {
	return f.get(ctx, rawURL, false, f.cfg.MaxBody)
}

// Validators are what a response said of the version it carried, for a
// conditional request that asks whether the page changed since: its ETag
// and its Last-Modified, as they were sent ("" for one not sent).
type Validators struct{ ETag, LastModified string }

// FetchIf is Fetch asking whether the page changed since the response v
// came from: If-None-Match with its ETag, If-Modified-Since with its
// Last-Modified (RFC 9110: a server that knows the ETag decides by it). An
// unchanged page is a Result with Status 304 Not Modified and no body; a
// changed one is answered as Fetch's would be.
func (f *Fetcher) FetchIf(ctx context.Context, rawURL string, v Validators) (*Result, error) {
	h := http.Header{}
	if v.ETag != "" {
		h.Set("If-None-Match", v.ETag)
	}
	if v.LastModified != "" {
		h.Set("If-Modified-Since", v.LastModified)
	}
	return f.request(ctx, rawURL, false, f.cfg.MaxBody, h)
}

// FetchBody is Fetch keeping the body of a 2xx answer whatever its type
// (robots.txt is text/plain).
func (f *Fetcher) FetchBody(ctx context.Context, rawURL string) (*Result, error) {
	return f.get(ctx, rawURL, true, f.cfg.MaxBody)
}

// FetchBodyUpTo is FetchBody reading up to limit body bytes (after
// decompression), or MaxBody if that is more: a sitemap may be 50 MB.
func (f *Fetcher) FetchBodyUpTo(ctx context.Context, rawURL string, limit int64) (*Result, error) {
	return f.get(ctx, rawURL, true, max(limit, f.cfg.MaxBody))
}

func (f *Fetcher) get(ctx context.Context, rawURL string, keepAny bool, maxBody int64) (*Result, error) {
	return f.request(ctx, rawURL, keepAny, maxBody, nil)
}

// request is a GET of rawURL with the configured headers, then extra's.
func (f *Fetcher) request(ctx context.Context, rawURL string, keepAny bool, maxBody int64, extra http.Header) (*Result, error) {
	start := f.now()
	req, err := f.newRequest(ctx, rawURL, extra)
	if err != nil {
		return nil, err
	}
	ctx = req.Context()
	var conn net.Conn
	var ex *exchange
	if f.cfg.Capture {
		req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if c, ok := info.Conn.(*capConn); ok {
				conn, ex = c, c.begin()
			}
		}}))
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, classify(err)
	}
	defer resp.Body.Close()
	res := f.head(req, resp)
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if ok && !res.HTML && !keepAny && (f.cfg.Keep == nil || !f.cfg.Keep(res.ContentType)) {
		// Not a type the crawl keeps: stop at the headers (closing the body
		// unread gives up the connection, cheaper than a large download).
		res.DroppedBody = true
		res.Duration = f.now().Sub(start)
		if ex != nil {
			res.Raw = ex.raw(conn)
		}
		return res, nil
	}
	limited := io.LimitReader(resp.Body, maxBody+1)
	if (res.HTML || keepAny) && ok {
		res.Body, err = readBody(limited, resp.ContentLength, maxBody)
		res.Bytes = int64(len(res.Body))
		if res.Bytes > maxBody {
			res.Body, res.Bytes, res.Truncated = res.Body[:maxBody], maxBody, true
		}
	} else {
		res.Bytes, err = io.Copy(io.Discard, limited) // drain (bounded) so the connection is reused
		if res.Bytes > maxBody {
			res.Bytes, res.Truncated = maxBody, true
		}
	}
	res.Duration = f.now().Sub(start)
	if err != nil && !res.Truncated {
		return nil, classify(err)
	}
	if ex != nil {
		res.Raw = ex.raw(conn)
	}
	return res, nil
}

// head is what a response's status and headers say: the headers kept, the
// content type and whether it is HTML, a redirect's target and a
// Retry-After.
func (f *Fetcher) head(req *http.Request, resp *http.Response) *Result {
	res := &Result{Status: resp.StatusCode, Proto: resp.Proto}
	for _, h := range keptHeaders {
		if v := resp.Header.Get(h); v != "" {
			if res.Headers == nil {
				res.Headers = map[string]string{}
			}
			res.Headers[strings.ToLower(h)] = v
		}
	}
	if v := resp.Header.Values("X-Robots-Tag"); len(v) > 0 {
		res.RobotsTags = append([]string(nil), v[:min(len(v), maxRobotsTags)]...)
	}
	if v := resp.Header.Values("Link"); len(v) > 0 {
		res.LinkHeaders = append([]string(nil), v[:min(len(v), maxRobotsTags)]...)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil {
		res.ContentType = strings.ToLower(mt)
	}
	res.HTML = res.ContentType == "text/html" || res.ContentType == "application/xhtml+xml" ||
		(res.ContentType == "" && resp.StatusCode == http.StatusOK)
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		if u, err := req.URL.Parse(loc); err == nil {
			res.Location = u.String()
		}
	}
	if TransientStatus(resp.StatusCode) {
		res.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), f.now())
	}
	return res
}

func classify(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, ErrBlockedAddress) || errors.Is(err, ErrProxy) {
		return &Error{Err: err} // the same answer every time: not worth a retry
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return &Error{Err: fmt.Errorf("fetch: %w", err)}
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Transient: true, Err: err}
	}
	// Timeouts, refused or reset connections, TLS hiccups, truncated
	// responses: the server may answer another time.
	return &Error{Transient: true, Err: fmt.Errorf("fetch: %w", err)}
}

// readBody reads r whole into a buffer sized by the Content-Length the
// server announced (when it is within the cap), so that a page costs one
// allocation of its own size rather than a doubling series — and never
// one the size of the cap: a server's claim decides nothing beyond it.
func readBody(r io.Reader, announced, maxBody int64) ([]byte, error) {
	if announced <= 0 || announced > maxBody {
		return io.ReadAll(r)
	}
	buf := make([]byte, 0, announced+1) // +1: room to see EOF without growing
	for {
		if len(buf) == cap(buf) { // longer than announced: grow as ReadAll would
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
