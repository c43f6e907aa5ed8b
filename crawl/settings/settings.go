package settings

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/parse"
)

// Settings are what every worker of a crawl must agree on. seed writes them
// to Redis once; workers read them and never take their own.
type Settings struct {
	Scope    parse.ScopeMode // host, domain or any
	MaxDepth int             // links followed from a seed; -1 for no limit
	MaxPages int64           // pages fetched in the whole crawl; 0 for no limit
	Rate     float64         // requests per second per host; +Inf for no limit
	Burst    int             // requests a host may get at once
	// HostConcurrency is the most requests in flight to one host at once,
	// counted across every worker (0: no cap; frontier.Policy).
	HostConcurrency int
	// DelayFactor, when not 0, is adaptive politeness: a host's least time
	// between requests becomes this many times its last response's time
	// (Heritrix's delay factor), shared by every worker, never less than
	// the rate's interval nor more than MaxDelay.
	DelayFactor  float64
	MaxDelay     time.Duration
	UserAgent    string
	ExpectedURLs int64   // Bloom filter capacity (it grows past this)
	FPRate       float64 // Bloom filter false-positive rate
	AllowPrivate bool    // allow loopback/private addresses (test site, intranets)
	// RobotsGiveUp is how long a host's robots.txt may stay unavailable
	// (no answer, 429, 5xx) before its URLs go to the failed list; until
	// then they wait, as RFC 9309 asks.
	RobotsGiveUp time.Duration
	// KeepTypes are the media types whose bodies are downloaded and, with
	// WARC on, archived: "type/subtype", "type/*" or "*". HTML is always
	// downloaded (its links are the crawl), and archived only if listed.
	// A 2xx answer of another type is not downloaded past its headers.
	KeepTypes []string
	// Extract are "NAME=CSS" rules: the text of the selector's first match
	// on an HTML page goes into its record, under extract.NAME.
	Extract []string
	// Allow and Deny are RE2 patterns matched against a discovered URL's
	// canonical form: with Allow, only URLs matching one are followed; a
	// URL matching a Deny pattern never is (deny wins).
	Allow, Deny []string
	// Trap defences: a discovered URL is not followed when a segment of its
	// path repeats more than MaxPathRepeat times, its path has more than
	// MaxPathDepth segments, its query more than MaxQueryParams
	// parameters, or it is longer than MaxURLLength bytes.
	MaxPathRepeat, MaxPathDepth, MaxQueryParams, MaxURLLength int
	// Sitemaps: read the sitemaps robots.txt lists, and queue their URLs
	// (through scope, filters and dedup, like links).
	Sitemaps bool
	// Headers are "Name: value" lines sent with every request.
	Headers []string
	// MaxPagesPerHost bounds the pages fetched from one host (0: no bound);
	// a host's URLs past it are dropped, and counted.
	MaxPagesPerHost int64
	// KeepTrackingParams keeps utm_*, gclid, fbclid and the like in URLs;
	// by default they are removed (they name one page once per campaign).
	KeepTrackingParams bool
	// Revisit, when not 0, makes the crawl continuous: a fetched URL is
	// fetched again when due, first after Revisit, then as its schedule
	// learns, within RevisitMin and RevisitMax (0: derived from Revisit,
	// revisit.go); the crawl never ends on its own. With Revisit 0 the
	// crawl ends, and `crawler recrawl` runs it again by the same schedule.
	Revisit, RevisitMin, RevisitMax time.Duration
	// KeepVisits keeps what each fetch returned (validators, digest, when
	// due: about 280 bytes a URL in Redis), so that a crawl can be recrawled
	// or be continuous; off, a one-off crawl of many URLs saves the memory.
	KeepVisits bool
	// DedupPayloads: with WARC on, a response whose payload another URL's
	// response archived already is written as a revisit record of it (the
	// crawl's digest index; about one Redis call a page archived).
	DedupPayloads bool
	// Instance is the crawl's instance id, minted by the seed that created
	// it (not a setting: never given, never compared): every exchange, sweep
	// and heartbeat carries the one its process read, and a crawl of the
	// same name made since (a reset and a new seed, another Redis) refuses
	// them as a gone crawl's. "" for a crawl seeded before ids existed.
	Instance string
	// Version counts the live changes of the settings ('crawler set',
	// admin.SetSettings; not a setting: never given, never compared): 0 as
	// seeded. Workers carry the version they act on in every exchange.
	Version int64
	// MaxLinks is the most links kept of one page (parse.Limits); a page
	// with more has the rest left out, its record says how many
	// (links_cut), and the crawl counts it (CounterLinksCut).
	MaxLinks int
	// Order is the order of each host's URLs of one priority: "breadth"
	// (new URLs at the back: first in, first out) or "depth" (at the
	// front: the host's queue a stack, the crawl depth-first).
	Order string
	// Render says which pages a browser renders (render.go): RenderNever,
	// RenderAlways (every host's HTML pages go to the render lane), or
	// RenderAuto (the crawl learns, host by host, whether rendering finds
	// what the plain fetch missed). RenderMatch are RE2 patterns: a URL
	// that matches one is rendered, its host put in the render lane.
	Render      string
	RenderMatch []string
	// ObeyNoArchive: a response whose owner says noarchive (X-Robots-Tag,
	// or an HTML page's robots meta tag) is not written to the WARC
	// files; its record says why (Record.NotArchived).
	ObeyNoArchive bool
	// Canonical is what a page whose rel=canonical names another URL of
	// the crawl leaves (canonical.go): CanonicalRecord, a page of its own
	// whose record names its canonical, or CanonicalSkip, a duplicate:
	// its canonical queued instead, and it not archived.
	Canonical string
	// DedupFrom are earlier crawls in the same Redis whose committed
	// payload digests (frontier/payloads: a crawl's, once it completed)
	// this crawl's --dedup-payloads looks up first: a payload one of them
	// archived whole is archived as a revisit of its record.
	DedupFrom []string
	// NearDuplicates is what the crawl does with an HTML page whose main
	// text is a near copy of a page of its host fetched before (package
	// neardup): NearOff, nothing (no signature is made); NearMark, its
	// record says near_duplicate_of; NearSkip, that and it is neither
	// archived nor rendered (its links are followed all the same).
	NearDuplicates string
	// Politeness is what the rate and burst hold: PolitenessHost, each
	// host, or PolitenessIP, each host and each server address too
	// (frontier.Policy.PerAddress).
	Politeness string
	// ResultsKept bounds the results streams (frontier.Options.
	// ResultsKept): the memory bound of export groups (frontier/records/groups.go).
	ResultsKept int64
	// RenderThirdParty lets a rendered page's requests go to hosts
	// outside the crawl's scope (each still through robots.txt, the
	// address guard and its host's tokens); off, they are refused.
	RenderThirdParty bool
	// Shards splits the frontier by host over this many hash tags
	// (frontier.Frontier), so that a Redis Cluster spreads it over its
	// masters; 1 keeps it in one, as on a single Redis.
	Shards int
}

// The crawl's render modes (Settings.Render).
const (
	RenderNever  = "never"
	RenderAlways = "always"
	RenderAuto   = "auto"
)

// What a crawl's rate holds (Settings.Politeness): each host, or each
// host and each server address.
const (
	PolitenessHost = "host"
	PolitenessIP   = "ip"
)

// What a crawl does with a page whose canonical is another URL
// (Settings.Canonical).
const (
	CanonicalRecord = "record"
	CanonicalSkip   = "skip"
)

// What a crawl does with near duplicates (Settings.NearDuplicates).
const (
	NearOff  = "off"
	NearMark = "mark"
	NearSkip = "skip"
)

// The crawl's orders (Settings.Order).
const (
	OrderBreadth = "breadth"
	OrderDepth   = "depth"
)

// MaxShards bounds Settings.Shards: each exchange may touch every shard.
const MaxShards = frontier.MaxShards

// Default: polite (1 request/s per host), host scope, no depth limit.
func Default() Settings {
	return Settings{Scope: parse.ScopeHost, MaxDepth: -1, Rate: 1, Burst: 1, MaxDelay: time.Minute, Order: OrderBreadth,
		UserAgent: "RedCrawl/0.1 (+https://github.com/redcrawl/crawler)", ExpectedURLs: 1_000_000, FPRate: 0.001,
		RobotsGiveUp: 30 * time.Minute, KeepTypes: []string{"text/html", "application/xhtml+xml"},
		MaxPathRepeat: 3, MaxPathDepth: 16, MaxQueryParams: 4, MaxURLLength: 1024, Sitemaps: true,
		MaxPagesPerHost: 100_000, Shards: 1, KeepVisits: true, MaxLinks: DefaultMaxLinks, Render: RenderNever, Canonical: CanonicalRecord, NearDuplicates: NearOff, Politeness: PolitenessHost,
		ResultsKept: frontier.ResultsKept}
}

// DefaultMaxLinks is a new crawl's Settings.MaxLinks: a hub page of a
// large site (an index, a sitemap in HTML) lists thousands; the most a
// page of the fetcher's body cap could hold is a few hundred thousand.
const DefaultMaxLinks = 10_000

// maxMaxLinks bounds Settings.MaxLinks: a page's links go to Redis in one
// exchange.
const maxMaxLinks = 1_000_000

// Validate checks every field.
func (s Settings) Validate() error {
	if _, err := parse.ParseScopeMode(string(s.Scope)); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	switch {
	case s.MaxDepth < -1:
		return fmt.Errorf("%w: max depth %d (use -1 for no limit)", ErrSettings, s.MaxDepth)
	case s.MaxPages < 0:
		return fmt.Errorf("%w: max pages %d", ErrSettings, s.MaxPages)
	case !(s.Rate >= MinRate*(1-1e-9)) || math.IsNaN(s.Rate):
		return fmt.Errorf("%w: rate %v: want one request a day (1/86400) or more (inf for no limit)", ErrSettings, s.Rate)
	case s.Burst < 1 || s.Burst > MaxBurst:
		return fmt.Errorf("%w: burst %d: want 1 to %d", ErrSettings, s.Burst, MaxBurst)
	case s.HostConcurrency < 0 || s.HostConcurrency > MaxHostConcurrency:
		return fmt.Errorf("%w: host concurrency %d: want 0 (no cap) to %d", ErrSettings, s.HostConcurrency, MaxHostConcurrency)
	case !(s.DelayFactor >= 0 && s.DelayFactor <= 100):
		return fmt.Errorf("%w: delay factor %v: want 0 (off) to 100", ErrSettings, s.DelayFactor)
	case s.MaxDelay < time.Second || s.MaxDelay > time.Hour:
		return fmt.Errorf("%w: max delay %v: want 1s to 1h", ErrSettings, s.MaxDelay)
	case strings.TrimSpace(s.UserAgent) == "":
		return fmt.Errorf("%w: empty user agent", ErrSettings)
	case s.RobotsGiveUp < time.Second:
		return fmt.Errorf("%w: robots.txt give-up %v must be at least 1s", ErrSettings, s.RobotsGiveUp)
	case s.MaxLinks < 1 || s.MaxLinks > maxMaxLinks:
		return fmt.Errorf("%w: max links %d: want 1 to %d", ErrSettings, s.MaxLinks, maxMaxLinks)
	case s.Shards < 1 || s.Shards > MaxShards:
		return fmt.Errorf("%w: shards %d: want 1 to %d", ErrSettings, s.Shards, MaxShards)
	case s.Order != OrderBreadth && s.Order != OrderDepth:
		return fmt.Errorf("%w: order %q: want %s or %s", ErrSettings, s.Order, OrderBreadth, OrderDepth)
	case s.ResultsKept < 100 || s.ResultsKept > 1_000_000_000:
		return fmt.Errorf("%w: results kept %d: want 100 to 1000000000", ErrSettings, s.ResultsKept)
	case s.Politeness != PolitenessHost && s.Politeness != PolitenessIP:
		return fmt.Errorf("%w: politeness %q: want %s or %s", ErrSettings, s.Politeness, PolitenessHost, PolitenessIP)
	case s.Canonical != CanonicalRecord && s.Canonical != CanonicalSkip:
		return fmt.Errorf("%w: canonical %q: want %s or %s", ErrSettings, s.Canonical, CanonicalRecord, CanonicalSkip)
	case s.NearDuplicates != NearOff && s.NearDuplicates != NearMark && s.NearDuplicates != NearSkip:
		return fmt.Errorf("%w: near duplicates %q: want %s, %s or %s", ErrSettings, s.NearDuplicates, NearOff, NearMark, NearSkip)
	case s.Render != RenderNever && s.Render != RenderAlways && s.Render != RenderAuto:
		return fmt.Errorf("%w: render %q: want %s, %s or %s", ErrSettings, s.Render, RenderNever, RenderAlways, RenderAuto)
	}
	if err := s.checkDedupFrom(); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if _, err := CompilePatterns(s.RenderMatch, "--render-match"); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if err := s.checkRevisit(); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if _, err := s.Fields(); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if _, err := NewRules(s); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if _, err := s.HTTPHeaders(); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if s.MaxPathRepeat < 1 || s.MaxPathDepth < 1 || s.MaxQueryParams < 0 || s.MaxURLLength < 16 || s.MaxPagesPerHost < 0 {
		return fmt.Errorf("%w: trap limits must be positive (path repeat %d, path depth %d, query params %d, URL length %d)",
			ErrSettings, s.MaxPathRepeat, s.MaxPathDepth, s.MaxQueryParams, s.MaxURLLength)
	}
	if err := s.CheckKeepTypes(); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if err := s.Bloom().Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	return nil
}

// Bloom is the crawl's Bloom filter as the settings size it.
func (s Settings) Bloom() dedup.Params {
	return dedup.Params{Capacity: s.ExpectedURLs, FPRate: s.FPRate}
}

// Summary is the settings as status's line says them: the ones that shape
// a crawl most, and the version when 'crawler set' changed them.
func (s Settings) Summary() string {
	depth := "unlimited"
	if s.MaxDepth >= 0 {
		depth = strconv.Itoa(s.MaxDepth)
	}
	pages := "unlimited"
	if s.MaxPages > 0 {
		pages = strconv.FormatInt(s.MaxPages, 10)
	}
	changed := ""
	if s.Version > 0 {
		changed = fmt.Sprintf(" (version %d: changed by 'crawler set', see the events)", s.Version)
	}
	per := "host"
	if s.Politeness == PolitenessIP {
		per = "host and per server address"
	}
	return fmt.Sprintf("scope %s, depth %s, max pages %s, %s req/s per %s (burst %d), private addresses %v, robots.txt give-up %v, keep %s%s, %d shard(s)%s",
		s.Scope, depth, pages, FormatRate(s.Rate), per, s.Burst, s.AllowPrivate, s.RobotsGiveUp, strings.Join(s.KeepTypes, ","), s.duplicates(), s.Shards, changed)
}

// AgentToken is the product token matched against robots.txt User-agent lines.
func (s Settings) AgentToken() string {
	tok, _, _ := strings.Cut(strings.TrimSpace(s.UserAgent), "/")
	tok, _, _ = strings.Cut(tok, " ")
	return tok
}

// ParseTypes reads a comma-separated list of media types.
func ParseTypes(list string) []string {
	var out []string
	for _, t := range strings.Split(list, ",") {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Keeps reports whether media type t is one of KeepTypes.
func (s Settings) Keeps(t string) bool {
	for _, k := range s.KeepTypes {
		if k == "*" || k == t || strings.HasSuffix(k, "/*") && strings.HasPrefix(t, strings.TrimSuffix(k, "*")) {
			return true
		}
	}
	return false
}

// Fields compiles the Extract rules.
func (s Settings) Fields() ([]parse.Field, error) {
	var out []parse.Field
	for _, rule := range s.Extract {
		f, err := parse.ParseField(rule)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// HTTPHeaders reads the Headers lines.
func (s Settings) HTTPHeaders() (http.Header, error) {
	h := http.Header{}
	for _, line := range s.Headers {
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || strings.ContainsAny(value, "\r\n") {
			return nil, fmt.Errorf("header %q: want 'Name: value'", line)
		}
		if err := fetch.CheckHeader(name); err != nil {
			return nil, err
		}
		h.Add(name, value)
	}
	return h, nil
}

// CheckKeepTypes checks each of KeepTypes is a media type pattern.
func (s Settings) CheckKeepTypes() error {
	for _, t := range s.KeepTypes {
		if major, minor, ok := strings.Cut(t, "/"); t != "*" && (!ok || major == "" || minor == "" || major == "*" ||
			strings.ContainsAny(t, " ,;") || strings.ToLower(t) != t) {
			return fmt.Errorf("keep type %q: want a lower-case media type such as text/html, image/* or *", t)
		}
	}
	return nil
}

// Renders: the crawl renders pages (seed --render always or auto, or a
// --render-match).
func (s Settings) Renders() bool { return s.Render != RenderNever || len(s.RenderMatch) > 0 }
