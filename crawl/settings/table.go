package settings

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/frontier/control"
	"github.com/redcrawl/crawler/parse"
)

// A Setting is one of a crawl's settings, declared once in Table:
// where it lives in Settings, its field in the crawl's config hash (and
// its name in status --json), seed's flag and help, and the value a crawl
// seeded before it existed reads as. Storage, loading, the conflict
// message, status --json and seed's flags are all derived from the table.
type Setting struct {
	Field string // config hash field, and status --json key unless JSON is set
	Flag  string // seed's flag, without "--"
	Usage string // seed's help for it
	Kind  Kind
	// Before is what a crawl seeded before this setting existed reads as;
	// "" for the settings every crawl stored from the start.
	Before string
	// JSON, when set, is the status --json key (its value then in seconds).
	JSON string
	// DefaultText replaces the default in seed's help (a default that
	// depends on where the crawl is).
	DefaultText string
	// Live: 'crawler set' may change it while the crawl runs (workers
	// act on the new value from their next page or pop); the others fix
	// what was queued or stored under them.
	Live bool
	ptr  func(*Settings) any // a pointer to the struct field
}

// Kind says how a setting is written in Redis, read from a flag and shown.
type Kind int

// The kinds of settings.
const (
	KindInt      Kind = iota // int
	KindInt64                // int64
	KindFloat                // float64
	KindRate                 // float64 requests/s: a positive number or "inf"
	KindBool                 // bool
	KindDuration             // time.Duration ("30m0s"); status --json in seconds
	KindString               // string
	KindScope                // parse.ScopeMode: host, domain or any
	KindTypes                // []string media types, comma-separated (a flag of one value)
	KindList                 // []string, newline-separated in Redis (a repeatable flag)
)

// ClusterShards is a new crawl's shard count on a Redis Cluster: enough
// for 16 masters, few enough that an exchange touches a handful.
const ClusterShards = 16

// Table lists every setting, in the order messages list them.
var Table = []Setting{
	{Field: "scope", Flag: "scope", Kind: KindScope, ptr: func(s *Settings) any { return &s.Scope },
		Usage: "which hosts to enter: host (the seeds' hosts), domain (their registrable domains), any"},
	{Field: "max_depth", Live: true, Flag: "max-depth", Kind: KindInt, ptr: func(s *Settings) any { return &s.MaxDepth },
		Usage: "links to follow from a seed; -1 for no limit"},
	{Field: "max_pages", Live: true, Flag: "max-pages", Kind: KindInt64, ptr: func(s *Settings) any { return &s.MaxPages },
		Usage: "pages to fetch in the whole crawl; 0 for no limit"},
	{Field: "rate", Live: true, Flag: "rate", Kind: KindRate, ptr: func(s *Settings) any { return &s.Rate },
		Usage: "requests per second per host, shared by all workers, from one a day (1/86400) up; 'inf' for no limit"},
	{Field: "burst", Live: true, Flag: "burst", Kind: KindInt, ptr: func(s *Settings) any { return &s.Burst },
		Usage: "requests a host may get at once, 1 to 1000 (time is kept to 10 ms: past 50 requests a second a host may get rate x 10 ms at once, whatever this says)"},
	// Crawls seeded before the cap read as uncapped, as they ran.
	{Field: "host_concurrency", Live: true, Flag: "host-concurrency", Kind: KindInt, Before: "0",
		ptr: func(s *Settings) any { return &s.HostConcurrency },
		Usage: "requests in flight to one host at once, counted across every worker and machine, 1 to 1000 (0: no cap), and with " +
			"--politeness ip to one server address as well; " +
			"a worker killed mid-request frees its slots when its leases lapse, within 10 s"},
	{Field: "delay_factor", Live: true, Flag: "delay-factor", Kind: KindFloat, Before: "0", ptr: func(s *Settings) any { return &s.DelayFactor },
		Usage: "adaptive politeness: a host's time between requests becomes this many times its last response's time " +
			"(e.g. 5: a server that takes 1 s gets one request every 5 s), for every worker, within --rate and --max-delay; 0: off"},
	{Field: "max_delay", Live: true, Flag: "max-delay", Kind: KindDuration, Before: "1m0s", JSON: "max_delay_seconds",
		ptr:   func(s *Settings) any { return &s.MaxDelay },
		Usage: "the longest time between requests to a host that --delay-factor sets"},
	{Field: "user_agent", Live: true, Flag: "user-agent", Kind: KindString, ptr: func(s *Settings) any { return &s.UserAgent },
		Usage: "User-Agent header; its first word is matched against robots.txt"},
	{Field: "expected_urls", Flag: "expected-urls", Kind: KindInt64, ptr: func(s *Settings) any { return &s.ExpectedURLs },
		Usage: "URLs the Bloom filter is sized for (it grows past this)"},
	{Field: "fp_rate", Flag: "fp-rate", Kind: KindFloat, ptr: func(s *Settings) any { return &s.FPRate },
		Usage: "Bloom filter false-positive rate (a false positive skips a URL)"},
	{Field: "allow_private", Flag: "allow-private", Kind: KindBool, ptr: func(s *Settings) any { return &s.AllowPrivate },
		Usage: "allow loopback and private addresses (needed for the test site and intranets)"},
	{Field: "robots_give_up", Live: true, Flag: "robots-give-up", Kind: KindDuration, Before: "30m0s", JSON: "robots_give_up_seconds",
		ptr: func(s *Settings) any { return &s.RobotsGiveUp },
		Usage: "a host whose robots.txt gives no answer (or 5xx, 429) has its URLs held back, retried with back-off; " +
			"after this long they go to the failed list"},
	{Field: "keep_types", Flag: "keep-types", Kind: KindTypes, Before: "text/html,application/xhtml+xml",
		ptr: func(s *Settings) any { return &s.KeepTypes },
		Usage: "media types whose bodies are downloaded and archived (comma-separated: type/subtype, type/* or *); " +
			"other 2xx bodies stop at their headers, and HTML is always read for its links"},
	{Field: "extract", Live: true, Flag: "extract", Kind: KindList, Before: "", ptr: func(s *Settings) any { return &s.Extract },
		Usage: "NAME=CSS (repeatable): the text of the selector's first match on each HTML page goes into its record under extract.NAME; " +
			"NAME=CSS@ATTR takes its attribute instead (a[href]@href: the link as written), and NAME[]=CSS or NAME[]=CSS@ATTR every match's, " +
			"a list (at most 100)"},
	{Field: "allow", Live: true, Flag: "allow", Kind: KindList, Before: "", ptr: func(s *Settings) any { return &s.Allow },
		Usage: "REGEX (repeatable, RE2, on the canonical URL): follow only URLs that match one"},
	{Field: "deny", Live: true, Flag: "deny", Kind: KindList, Before: "", ptr: func(s *Settings) any { return &s.Deny },
		Usage: "REGEX (repeatable): never follow URLs that match one (deny wins over allow)"},
	{Field: "max_path_repeat", Live: true, Flag: "max-path-repeat", Kind: KindInt, Before: "3", ptr: func(s *Settings) any { return &s.MaxPathRepeat },
		Usage: "trap defence: skip URLs whose path repeats a segment more than this"},
	{Field: "max_path_depth", Live: true, Flag: "max-path-depth", Kind: KindInt, Before: "16", ptr: func(s *Settings) any { return &s.MaxPathDepth },
		Usage: "trap defence: skip URLs whose path has more segments than this"},
	{Field: "max_query_params", Live: true, Flag: "max-query-params", Kind: KindInt, Before: "4", ptr: func(s *Settings) any { return &s.MaxQueryParams },
		Usage: "trap defence: skip URLs with more query parameters than this"},
	{Field: "max_url_length", Live: true, Flag: "max-url-length", Kind: KindInt, Before: "1024", ptr: func(s *Settings) any { return &s.MaxURLLength },
		Usage: "trap defence: skip URLs longer than this many bytes"},
	{Field: "sitemaps", Flag: "sitemaps", Kind: KindBool, Before: "true", ptr: func(s *Settings) any { return &s.Sitemaps },
		Usage: "read the sitemaps robots.txt lists and crawl their URLs (--sitemaps=false: do not)"},
	{Field: "headers", Live: true, Flag: "header", Kind: KindList, Before: "", ptr: func(s *Settings) any { return &s.Headers },
		Usage: "'Name: value' sent with every request (repeatable)"},
	// Crawls seeded before the cap read as uncapped, as they ran.
	{Field: "max_pages_per_host", Live: true, Flag: "max-pages-per-host", Kind: KindInt64, Before: "0",
		ptr: func(s *Settings) any { return &s.MaxPagesPerHost },
		Usage: "trap defence: stop taking a host's URLs once this many of its pages were fetched, and queue at most twice as many " +
			"(0: no limit); URLs handed out before it is reached still go, a worker's buffer at most"},
	{Field: "keep_tracking_params", Flag: "keep-tracking-params", Kind: KindBool, Before: "false",
		ptr:   func(s *Settings) any { return &s.KeepTrackingParams },
		Usage: "keep utm_*, gclid, fbclid and the like in URLs (by default they are removed)"},
	{Field: "keep_visits", Flag: "keep-visits", Kind: KindBool, Before: "true", ptr: func(s *Settings) any { return &s.KeepVisits },
		Usage: "keep what each fetch returned (ETag, Last-Modified, digest, when due: about 280 bytes a page in Redis) so that " +
			"'crawler recrawl' and --revisit can fetch pages again with conditional requests (--keep-visits=false: a one-off crawl)"},
	{Field: "dedup_payloads", Flag: "dedup-payloads", Kind: KindBool, Before: "false", ptr: func(s *Settings) any { return &s.DedupPayloads },
		Usage: "with --warc-dir: archive a payload another URL's response archived already as a revisit record of it, by a crawl-wide " +
			"digest index in Redis (at most a million digests, ~180 bytes each; about one Redis call a page archived). " +
			"A page's refetch with its own last payload is a revisit without it"},
	{Field: "dedup_from", Flag: "dedup-from", Kind: KindList, Before: "", ptr: func(s *Settings) any { return &s.DedupFrom },
		Usage: "CRAWL (repeatable; with --dedup-payloads): a payload an earlier, completed crawl in this Redis archived whole " +
			"(it ran with --warc-dir and --dedup-payloads) is archived as a revisit record referring to that crawl's record; " +
			"package both crawls' WARC folders together (crawler wacz) to replay this one. A crawl's payloads join when it completes"},
	{Field: "revisit", Flag: "revisit", Kind: KindDuration, Before: "0s", JSON: "revisit_seconds",
		ptr: func(s *Settings) any { return &s.Revisit },
		Usage: "make the crawl continuous: each fetched page is fetched again when due, first after this long, then as often as it " +
			"is seen to change (within --revisit-min and --revisit-max), and the crawl never ends on its own; 0: the crawl ends, " +
			"and 'crawler recrawl' runs it again"},
	{Field: "revisit_min", Flag: "revisit-min", Kind: KindDuration, Before: "0s", JSON: "revisit_min_seconds",
		ptr: func(s *Settings) any { return &s.RevisitMin }, DefaultText: "a tenth of --revisit; 2h24m0s without it",
		Usage: "the shortest time between fetches of a page that changes at every visit"},
	{Field: "revisit_max", Flag: "revisit-max", Kind: KindDuration, Before: "0s", JSON: "revisit_max_seconds",
		ptr: func(s *Settings) any { return &s.RevisitMax }, DefaultText: "30 times --revisit; 720h0m0s without it",
		Usage: "the longest time between fetches of a page that never changes"},
	// Crawls seeded before the setting kept 1 000 links a page.
	{Field: "max_links", Live: true, Flag: "max-links", Kind: KindInt, Before: "1000", ptr: func(s *Settings) any { return &s.MaxLinks },
		Usage: "links kept of one page; past it the rest are left out, the page's record says how many (links_cut) and status counts the page"},
	{Field: "order", Flag: "order", Kind: KindString, Before: OrderBreadth, Live: true, ptr: func(s *Settings) any { return &s.Order },
		Usage: "the order of each host's URLs of one priority: breadth (first found, first fetched) or depth (last found, first fetched: " +
			"depth-first); across hosts the order is always their tokens'"},
	{Field: "obey_noarchive", Flag: "obey-noarchive", Kind: KindBool, Before: "false", ptr: func(s *Settings) any { return &s.ObeyNoArchive },
		Usage: "with --warc-dir: do not archive a response whose owner says noarchive (X-Robots-Tag, or an HTML page's robots meta tag " +
			"naming every crawler or this one); its record says why. Off, noarchive is only recorded, in the record's robots"},
	{Field: "results_kept", Flag: "results-kept", Kind: KindInt64, Before: "1000000", ptr: func(s *Settings) any { return &s.ResultsKept },
		Usage: "records the results streams in Redis keep (about 600 bytes each): with export groups (export --group) the streams are " +
			"trimmed below what every group acknowledged, and a group this far behind loses its oldest unread records (status says so " +
			"from 80 % of it); the workers' --out files keep every record whatever this is"},
	{Field: "politeness", Flag: "politeness", Kind: KindString, Before: PolitenessHost, Live: true, ptr: func(s *Settings) any { return &s.Politeness },
		Usage: "what the rate and burst hold: each host (host), or also each server address (ip: hosts that resolve to one address, " +
			"virtual hosts on one server, share its rate too; the workers resolve each host and keep the answer in Redis as long as its TTL says)"},
	{Field: "canonical", Flag: "canonical", Kind: KindString, Before: CanonicalRecord, Live: true, ptr: func(s *Settings) any { return &s.Canonical },
		Usage: "a page whose rel=canonical (a <link> in its head, or a Link header) names another URL the crawl would follow: " +
			"record (its record says canonical, it is archived and its links followed as any page's) or skip (its canonical URL is " +
			"queued instead, it is not archived, and its record says duplicate_of)"},
	{Field: "near_duplicates", Flag: "near-duplicates", Kind: KindString, Before: NearOff, Live: true,
		ptr: func(s *Settings) any { return &s.NearDuplicates },
		Usage: "an HTML page whose main text is a near copy of a page of its host fetched before (another date line, a few words, " +
			"a banner: MinHash of its words outside nav, header, footer, forms and links, about 1.1 KB a page in Redis, the latest " +
			"10000 of a host and a million in all): off; mark (its record says near_duplicate_of and the similarity); or skip (that, and it is neither " +
			"archived nor rendered; its links are still followed)"},
	{Field: "render", Flag: "render", Kind: KindString, Before: RenderNever, ptr: func(s *Settings) any { return &s.Render },
		Usage: "which pages a browser renders (workers started with --render): never; always (every HTML page); or auto: the crawl " +
			"renders a few pages of each host that were also fetched plainly, and sends the hosts where rendering finds links " +
			"the plain fetch missed to the render lane (and, where a host's pages mix, fetches plainly the path prefixes that need no browser)"},
	{Field: "render_match", Flag: "render-match", Kind: KindList, Before: "", ptr: func(s *Settings) any { return &s.RenderMatch },
		Usage: "REGEX (repeatable, RE2, on the canonical URL): render the URLs that match, whatever --render says"},
	{Field: "render_third_party", Flag: "render-third-party", Kind: KindBool, Before: "false",
		ptr:   func(s *Settings) any { return &s.RenderThirdParty },
		Usage: "let a rendered page's scripts and styles come from hosts outside the crawl's scope (each through robots.txt and its host's tokens)"},
	{Field: "shards", Flag: "shards", Kind: KindInt, Before: "1", ptr: func(s *Settings) any { return &s.Shards },
		DefaultText: fmt.Sprintf("%d on a Redis Cluster, else 1", ClusterShards),
		Usage:       fmt.Sprintf("split the frontier by host over N hash tags (1 to %d), so that a Redis Cluster spreads it over its masters", MaxShards)},
}

// Format is the setting's value in s as the config hash stores it.
func (st Setting) Format(s *Settings) string {
	switch p := st.ptr(s).(type) {
	case *int:
		return strconv.Itoa(*p)
	case *int64:
		return strconv.FormatInt(*p, 10)
	case *float64:
		if st.Kind == KindRate {
			return FormatRate(*p)
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	case *bool:
		return strconv.FormatBool(*p)
	case *time.Duration:
		return p.String()
	case *string:
		return *p
	case *parse.ScopeMode:
		return string(*p)
	case *[]string:
		if st.Kind == KindTypes {
			return strings.Join(*p, ",")
		}
		return strings.Join(*p, "\n")
	}
	panic("crawl: setting " + st.Field + " of no known type")
}

// Parse sets the setting in s from its stored (or flag's) text.
func (st Setting) Parse(s *Settings, v string) error {
	var err error
	switch p := st.ptr(s).(type) {
	case *int:
		*p, err = strconv.Atoi(v)
	case *int64:
		*p, err = strconv.ParseInt(v, 10, 64)
	case *float64:
		if st.Kind == KindRate {
			*p, err = ParseRate(v)
		} else {
			*p, err = strconv.ParseFloat(v, 64)
		}
	case *bool:
		*p, err = strconv.ParseBool(v)
	case *time.Duration:
		*p, err = time.ParseDuration(v)
	case *string:
		*p = v
	case *parse.ScopeMode:
		*p, err = parse.ParseScopeMode(v)
	case *[]string:
		switch {
		case st.Kind == KindTypes:
			*p = ParseTypes(v)
		case v == "":
			*p = nil
		default:
			*p = strings.Split(v, "\n")
		}
	}
	if err != nil {
		return fmt.Errorf("%s %q: %w", st.Field, v, err)
	}
	return nil
}

// jsonValue is the setting's value in s as status --json shows it: of its
// own type, a rate of no limit as null, a duration in seconds, a list
// never null.
func (st Setting) jsonValue(s *Settings) any {
	switch p := st.ptr(s).(type) {
	case *float64:
		if st.Kind == KindRate && math.IsInf(*p, 1) {
			return nil
		}
		return *p
	case *time.Duration:
		return p.Seconds()
	case *parse.ScopeMode:
		return string(*p)
	case *[]string:
		if *p == nil {
			return []string{}
		}
		return *p
	case *int:
		return *p
	case *int64:
		return *p
	case *bool:
		return *p
	case *string:
		return *p
	}
	return nil
}

// Value is the setting's value in s, of its own type (int, int64,
// float64, bool, time.Duration, string, parse.ScopeMode or []string).
func (st Setting) Value(s *Settings) any {
	switch p := st.ptr(s).(type) {
	case *int:
		return *p
	case *int64:
		return *p
	case *float64:
		return *p
	case *bool:
		return *p
	case *time.Duration:
		return *p
	case *string:
		return *p
	case *parse.ScopeMode:
		return *p
	case *[]string:
		return *p
	}
	return nil
}

// Hash is s as the crawl's config hash stores it.
func (s Settings) Hash() map[string]string {
	m := map[string]string{}
	for _, st := range Table {
		m[st.Field] = st.Format(&s)
	}
	return m
}

// Typed is the settings as JSON values of their own types (status --json).
func (s Settings) Typed() map[string]any {
	m := map[string]any{}
	for _, st := range Table {
		key := st.Field
		if st.JSON != "" {
			key = st.JSON
		}
		m[key] = st.jsonValue(&s)
	}
	return m
}

// fromHash reads settings from the config hash m; a field a crawl
// seeded by an older RedCrawl lacks reads as its Before value.
func fromHash(m map[string]string) (Settings, error) {
	var s Settings
	var errs []error
	for _, st := range Table {
		v, ok := m[st.Field]
		if !ok {
			v = st.Before
		}
		errs = append(errs, st.Parse(&s, v))
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	s.Instance = m[control.InstanceField]
	if v, ok := m[control.VersionField]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return Settings{}, fmt.Errorf("%s %q: not a version", control.VersionField, v)
		}
		s.Version = n
	}
	return s, s.Validate()
}

// withBefore fills in what an older crawl's stored fields lack.
func withBefore(have map[string]string) {
	for _, st := range Table {
		if _, ok := have[st.Field]; !ok {
			have[st.Field] = st.Before
		}
	}
}
