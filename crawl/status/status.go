package status

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/control"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/frontier/perhost"
	"github.com/redcrawl/crawler/frontier/records"
	"github.com/redcrawl/crawler/frontier/registry"
	"github.com/redcrawl/crawler/leader"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redcrawl/crawler/session"
)

// Status is a crawl at one moment, as `crawler status` shows it.
type Status struct {
	Crawl        string            `json:"crawl"`
	Settings     settings.Settings `json:"-"`
	SettingsJSON map[string]any    `json:"settings"` // typed: numbers, booleans, lists; rate null for no limit
	// SettingsVersion counts the changes 'crawler set' made (0: as seeded).
	SettingsVersion int64            `json:"settings_version"`
	Frontier        frontier.Sizes   `json:"frontier"`
	Counters        map[string]int64 `json:"counters"` // pages, ok, http_error, failed, skipped, unchanged, change:WORD, enqueued, offered, records
	PagesPerSecond  float64          `json:"pages_per_second"`
	Bloom           dedup.Stats      `json:"bloom"`
	Leader          *leader.Info     `json:"leader,omitempty"`
	Epoch           int64            `json:"epoch"`   // newest epoch minted
	Workers         []string         `json:"workers"` // alive now
	// WorkerNotes are the registered workers, alive or lapsed, with what
	// their last heartbeats said: pages finished, leases held, how long ago.
	WorkerNotes []registry.Worker `json:"worker_notes"`
	// RedisOutOfMemory: Redis is over its memory limit and refuses writes,
	// so heartbeats fail and registrations lapse although workers live;
	// WorkersUnknown are those registered workers, neither known alive nor
	// known gone.
	RedisOutOfMemory bool     `json:"redis_out_of_memory"`
	RedisMemoryLine  string   `json:"-"`
	WorkersUnknown   []string `json:"workers_unknown,omitempty"`
	// ResultsTrimmed counts records the results stream dropped (it keeps
	// the newest million): the workers' --out files still have them.
	ResultsTrimmed int64 `json:"results_trimmed"`
	// Paused are the hosts paused now (they answered 429 or 503, or
	// failed again and again), the longest pause first, with how long each
	// has left and why.
	Paused []perhost.PausedHost `json:"paused_hosts,omitempty"`
	// TopHosts are the hosts with the most URLs queued (at most
	// StatusTopHosts; past perhost.ScanLimit hosts, of those due
	// soonest), of HostsQueued hosts with URLs queued.
	TopHosts    []perhost.Queue `json:"top_hosts"`
	HostsQueued int64           `json:"hosts_queued"`
	// Revisits is the schedule: pages on it, due now (or by the recrawl
	// asked for), and when the next one is.
	Revisits RevisitStatus `json:"revisits"`
	// Events are the newest of the crawl's event log (StatusEvents of
	// them), newest first: lock handovers, fenced sweeps, paused hosts,
	// resent exchanges.
	Events []events.Event `json:"events"`
	// Login is the crawl's login (seed --login-url): its URL and its
	// session, never its form; nil without one.
	Login *session.State `json:"login,omitempty"`
	// Committed: with --dedup-payloads, the payload digests committed when
	// the crawl last completed, which later crawls' --dedup-from refer
	// to; nil while none are.
	Committed *Committed `json:"committed,omitempty"`
	// Hosts.Rules are the hosts with rules of their own (crawler host): a
	// rate, or a block; by name.
	HostRules []perhost.Rule `json:"host_rules,omitempty"`
	// Addresses are the busiest server addresses, with politeness per
	// address (seed --politeness ip): the requests each gave, and its
	// hosts (addresses.go).
	Addresses []perhost.AddressLoad `json:"addresses,omitempty"`
	// Groups are the export groups reading the results (export --follow
	// --group), what each has not acknowledged, and whether it lags
	// (crawl/groups.go).
	Groups []records.GroupState `json:"export_groups,omitempty"`
	// Hold is the crawl's pause (crawler pause), nil when it is not
	// paused: nothing is handed out while it holds.
	Hold *control.Hold `json:"hold,omitempty"`
	// Render is what rendering does (seed --render, --render-match); nil
	// for a crawl that renders nothing.
	Render *RenderStatus `json:"render,omitempty"`
	Done   bool          `json:"done"`
}

// RenderStatus is status's word on rendering.
type RenderStatus struct {
	Mode string `json:"mode"`
	// LaneQueued counts the hosts with URLs queued in the render lane,
	// which only render workers pop; Hosts are those put there one by one
	// (a --render-match, the samples' verdict).
	LaneQueued int64    `json:"lane_hosts_queued"`
	Hosts      []string `json:"hosts,omitempty"`
	// Learned: host -> what its samples taught (render, plain, or ? while
	// learning), with --render auto; SamplesWaiting, those not rendered yet.
	Learned        map[string]string `json:"learned,omitempty"`
	SamplesWaiting int64             `json:"samples_waiting"`
	// Prefixes: host+prefix -> what the pages under a path prefix of a
	// host that needs a browser taught (a prefix that needs none has its
	// pages fetched plainly).
	Prefixes map[string]string `json:"prefixes,omitempty"`
	// Workers are the render workers alive (work --render).
	Workers int    `json:"render_workers"`
	Line    string `json:"line"` // what status says of it
}

// StatusEvents is how many events Status reads.
const StatusEvents = 20

// RevisitStatus is the schedule, as status --json gives it.
type RevisitStatus struct {
	Scheduled      int64      `json:"scheduled"` // fetched, not in flight, not gone for good
	DueNow         int64      `json:"due_now"`
	NextDueSeconds float64    `json:"next_due_seconds"` // -1: none
	RecrawlAt      *time.Time `json:"recrawl_at,omitempty"`
	Continuous     bool       `json:"continuous"`
}

// ReadRevisits reads the schedule of the crawl of fr, whose settings are s.
func ReadRevisits(ctx context.Context, fr *frontier.Frontier, s settings.Settings) (RevisitStatus, error) {
	rv, err := fr.Visits.Read(ctx)
	if err != nil {
		return RevisitStatus{}, err
	}
	out := RevisitStatus{Scheduled: rv.Scheduled, DueNow: rv.DueNow, NextDueSeconds: -1, Continuous: s.Revisit > 0}
	if rv.NextDue >= 0 {
		out.NextDueSeconds = rv.NextDue.Seconds()
	}
	if !rv.RecrawlAt.IsZero() {
		at := rv.RecrawlAt.UTC()
		out.RecrawlAt = &at
	}
	return out, nil
}

// StatusTopHosts is how many hosts Status lists, busiest queue first.
const StatusTopHosts = 10

// String renders the status for a person.
func (st *Status) String() string {
	var b strings.Builder
	state := "running"
	switch h := st.Hold; {
	case st.Done && st.Frontier.Queued > 0 && st.Settings.MaxPages > 0 && st.Counters["pages"] >= st.Settings.MaxPages:
		state = fmt.Sprintf("done: its page budget is spent (%d pages, seed or set --max-pages); the %d URLs still queued were not fetched "+
			"('crawler set --max-pages N' raises it, and the crawl goes on)", st.Settings.MaxPages, st.Frontier.Queued)
	case st.Done:
		state = "done"
	case h != nil:
		state = fmt.Sprintf("paused since %s (%v ago) by %s: no URL is handed out until 'crawler resume'",
			h.Since.UTC().Format(time.RFC3339), time.Since(h.Since).Round(time.Second), h.By)
		if h.Shards < h.Of {
			state += fmt.Sprintf(" (in %d of %d shards: a pause or resume failed half-way; run it again)", h.Shards, h.Of)
		}
	}
	fmt.Fprintf(&b, "crawl %q: %s\n", st.Crawl, state)
	c := st.Counters
	fmt.Fprintf(&b, "  pages       %d fetched; %d ok, %d http_error, %d failed, %d skipped; %.1f pages/s over the last 10 s\n",
		c["pages"], c[crawl.OutcomeOK], c[crawl.OutcomeHTTPError], c[crawl.OutcomeFailed], c[crawl.OutcomeSkipped], st.PagesPerSecond)
	if n := c[crawl.OutcomeUnchanged]; n > 0 {
		fmt.Fprintf(&b, "  unchanged   %d refetches answered 304 Not Modified (counted in pages, not in ok)\n", n)
	}
	// A one-off crawl keeps a schedule for 'crawler recrawl', but says
	// nothing of it until it is recrawled.
	recrawled := c["change:"+crawl.ChangeChanged]+c["change:"+crawl.ChangeUnchanged]+c["change:"+crawl.ChangeGone] > 0
	if rv := st.Revisits; rv.Continuous || rv.RecrawlAt != nil || recrawled {
		fmt.Fprintf(&b, "  revisits    %s\n", rv.line(c))
	}
	fmt.Fprintf(&b, "  frontier    %d queued, %d in flight, %d deferred, %d on the failed list; %d URLs enqueued in all\n",
		st.Frontier.Queued, st.Frontier.InFlight, st.Frontier.Deferred, st.Frontier.Failed, c["enqueued"])
	if n := st.Frontier.AtCap; n > 0 {
		fmt.Fprintf(&b, "  at cap      %d hosts have every slot of --host-concurrency in use, their next URLs waiting for a request to end\n", n)
	}
	if st.Render != nil {
		fmt.Fprintf(&b, "  render      %s\n", st.Render.Line)
	}
	if l := st.Login; l != nil {
		fmt.Fprintf(&b, "  login       %s\n", l.Line())
	}
	if cm := st.Committed; cm != nil {
		fmt.Fprintf(&b, "  committed   %d payload digests at %s, for later crawls' --dedup-from\n", cm.Digests, cm.At.Format(time.RFC3339))
	}
	st.writeCounters(&b)
	st.writeHosts(&b)
	if st.ResultsTrimmed > 0 {
		fmt.Fprintf(&b, "  results     %d records trimmed from the stream before export (the workers' --out files have them)\n", st.ResultsTrimmed)
	}
	fmt.Fprintf(&b, "  dedup       %d URLs seen in %d layer(s), %.1f KiB of bitmaps, estimated false-positive rate %.4f%%\n",
		st.Bloom.Count, len(st.Bloom.Layers), float64(st.Bloom.Bits)/8/1024, 100*st.Bloom.EstimatedFPRate)
	st.writeCoordination(&b)
	fmt.Fprintf(&b, "  settings    %s\n", st.Settings.Summary())
	return b.String()
}

// Committed is when a crawl's payload digests were committed, and how many.
type Committed struct {
	At      time.Time `json:"at"`
	Digests int64     `json:"digests"`
}

// writeCounters writes the lines of the counters that are not always there:
// statuses, links not followed, what was set aside or cut.
func (st *Status) writeCounters(b *strings.Builder) {
	c := st.Counters
	var skipped, statuses []string
	for name, n := range c {
		if reason, ok := strings.CutPrefix(name, "skipped_links:"); ok && n > 0 {
			skipped = append(skipped, fmt.Sprintf("%s %d", reason, n))
		}
		if code, ok := strings.CutPrefix(name, "status:"); ok && n > 0 {
			statuses = append(statuses, fmt.Sprintf("%s %d", code, n))
		}
	}
	if len(statuses) > 0 {
		sort.Strings(statuses)
		fmt.Fprintf(b, "  statuses    HTTP status of each page: %s\n", strings.Join(statuses, ", "))
	}
	if len(skipped) > 0 {
		sort.Strings(skipped)
		fmt.Fprintf(b, "  not followed  links refused by filters and trap defences: %s\n", strings.Join(skipped, ", "))
	}
	if n := c[crawl.CounterCorrupt]; n > 0 {
		fmt.Fprintf(b, "  corrupt     %d corrupt queue elements and bucket fields set aside (elements on the failed list, fields deleted): written by hand or by a bug\n", n)
	}
	if n := c[crawl.CounterLinksCut]; n > 0 {
		fmt.Fprintf(b, "  links cut   %d pages had more links than max-links (%d): the rest of theirs were left out (records: links_cut)\n",
			n, st.Settings.MaxLinks)
	}
	if n := c[crawl.CounterDuplicates]; n > 0 {
		fmt.Fprintf(b, "  duplicates  %d pages named another URL their canonical: not archived, their canonical queued instead (--canonical skip; records: duplicate_of)\n", n)
	}
	if n := c[crawl.CounterNearDuplicates]; n > 0 {
		what := "marked (records: near_duplicate_of)"
		if st.Settings.NearDuplicates == settings.NearSkip {
			what = "not archived or rendered, their links followed (records: near_duplicate_of)"
		}
		fmt.Fprintf(b, "  near copies %d pages were near copies of a page of their host fetched before: %s\n", n, what)
	}
	if n := c[crawl.CounterDelayCapped]; n > 0 {
		fmt.Fprintf(b, "  robots.txt  %d asked for a Crawl-delay over %v: those hosts are held to one request every %v\n",
			n, politeness.MaxCrawlDelay, politeness.MaxCrawlDelay)
	}
}

// writeHosts writes the paused hosts and the longest queues.
func (st *Status) writeHosts(b *strings.Builder) {
	st.writeAddresses(b)
	st.writeGroups(b)
	if len(st.Paused) > 0 {
		var hosts []string
		for _, p := range st.Paused {
			hosts = append(hosts, fmt.Sprintf("%s (%v more, after %s)", p.Host, p.Left.Round(time.Second), cmp.Or(p.Why, "a 429/503")))
		}
		fmt.Fprintf(b, "  paused      %d hosts wait, for every worker: %s\n", len(hosts), strings.Join(hosts, ", "))
	}
	if len(st.HostRules) > 0 {
		var rules []string
		for _, r := range st.HostRules {
			if r.Blocked {
				rules = append(rules, r.Host+" blocked")
			} else {
				rules = append(rules, fmt.Sprintf("%s %s req/s (burst %d)", r.Host, admin.FormatRuleRate(r.Rate), r.Burst))
			}
		}
		fmt.Fprintf(b, "  own rules   %d hosts keep rules of their own (crawler host): %s\n", len(rules), strings.Join(rules, ", "))
	}
	if len(st.TopHosts) > 0 {
		if st.HostsQueued > perhost.ScanLimit {
			fmt.Fprintf(b, "  hosts       %d with URLs queued; the longest queues of the %d due soonest:\n", st.HostsQueued, perhost.ScanLimit)
		} else {
			fmt.Fprintf(b, "  hosts       %d with URLs queued; the longest queues:\n", st.HostsQueued)
		}
		for _, h := range st.TopHosts {
			state := "due now"
			if h.DueIn > 0 {
				state = fmt.Sprintf("next URL in %v", h.DueIn.Round(time.Millisecond))
			}
			for _, p := range st.Paused {
				if p.Host == h.Host {
					state = fmt.Sprintf("paused %v more (after %s)", p.Left.Round(time.Second), cmp.Or(p.Why, "a 429/503"))
				}
			}
			if h.Interval > 0 {
				state += fmt.Sprintf("; %.3g requests/s (%s)", float64(time.Second)/float64(h.Interval), h.Why)
			}
			fmt.Fprintf(b, "    %-32s %8d queued  %s\n", h.Host, h.Queued, state)
		}
	}
}

// writeCoordination writes the scheduler, the workers alive, the last
// events and Redis's memory warning.
func (st *Status) writeCoordination(b *strings.Builder) {
	if st.Leader != nil {
		fmt.Fprintf(b, "  scheduler   %s, epoch %d (lock expires in %v)\n", st.Leader.ID, st.Leader.Epoch, st.Leader.TTL.Round(time.Millisecond))
	} else {
		fmt.Fprintf(b, "  scheduler   none (last epoch %d)\n", st.Epoch)
	}
	if len(st.Workers) == 0 {
		fmt.Fprintf(b, "  workers     none alive\n")
	} else {
		var alive []string
		for _, w := range st.WorkerNotes {
			if !w.Alive {
				continue
			}
			if w.Beat < 0 {
				alive = append(alive, w.ID)
				continue
			}
			alive = append(alive, fmt.Sprintf("%s (%d pages, %d leases, last heartbeat %v ago)", w.ID, w.Pages, w.Leases, w.Beat.Round(100*time.Millisecond)))
		}
		fmt.Fprintf(b, "  workers     %d alive: %s\n", len(st.Workers), strings.Join(alive, ", "))
	}
	for i, e := range st.Events[:min(len(st.Events), 5)] {
		label := "            "
		if i == 0 {
			label = "events     "
		}
		fmt.Fprintf(b, "  %s %s  %s\n", label, e.At.Format("15:04:05"), e.Text)
	}
	if st.RedisOutOfMemory {
		fmt.Fprintf(b, "  WARNING     %s\n", st.RedisMemoryLine)
		if len(st.WorkersUnknown) > 0 {
			fmt.Fprintf(b, "              so these workers may be alive although their registrations lapsed: %s\n",
				strings.Join(st.WorkersUnknown, ", "))
		}
	}
}

// line is the schedule for a person: how pages compared with their last
// fetch, and what is due when.
func (rv RevisitStatus) line(c map[string]int64) string {
	s := fmt.Sprintf("%d new, %d changed, %d unchanged, %d gone; %d pages on the schedule",
		c["change:"+crawl.ChangeNew], c["change:"+crawl.ChangeChanged], c["change:"+crawl.ChangeUnchanged], c["change:"+crawl.ChangeGone], rv.Scheduled)
	switch {
	case rv.Continuous || rv.RecrawlAt != nil:
		s += fmt.Sprintf(", %d due now", rv.DueNow)
	default:
		s += " ('crawler recrawl' fetches those due)"
	}
	if rv.NextDueSeconds >= 0 {
		s += fmt.Sprintf(", the next due in %v", (time.Duration(rv.NextDueSeconds * float64(time.Second))).Round(time.Second))
	}
	return s
}
