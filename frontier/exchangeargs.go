package frontier

import (
	"encoding/json"
	"strconv"
)

// exchangeArgs are exchange.lua's arguments after the Bloom filter's and
// the links' (and finish.lua's, back.lua's, handout.lua's and take.lua's,
// alone), as
// one JSON object whose fields the scripts read by name (A.expect …):
// this declaration is the one description of them. Then come the texts
// it names: a field that holds a
// lease's member, a record, a stat or a lease id holds its place among
// the strings after the object (1-based), so that strings travel as Redis
// hands them to the script rather than through its JSON decoder, which
// costs Redis about as much as a page's commands.
type exchangeArgs struct {
	Expect     int64   `json:"expect"`                  // this process's exchanges Redis should hold
	Instance   string  `json:"instance,omitempty"`      // the crawl's instance id as this process read it (fr_ours)
	Count      bool    `json:"count,omitempty"`         // this call counts as one (the batch's last call)
	Want       int     `json:"want,omitempty"`          // URLs the handout grants at most
	ResultsCap int64   `json:"results_cap"`             // the results stream's length kept (MAXLEN ~)
	FailedCap  int     `json:"failed_cap"`              // the failed list's length kept
	LeaseMs    int64   `json:"lease_ms,omitempty"`      // how long a lease the take makes is held
	Rate       float64 `json:"rate,omitempty"`          // a host's tokens a second (0: no limit)
	Burst      int     `json:"burst,omitempty"`         // a host's bucket size
	PauseKeep  int64   `json:"pause_keep_ms,omitempty"` // how long a bucket keeps a pause's count (tokens.lua)
	AheadMs    int64   `json:"ahead_ms,omitempty"`      // how far ahead of now a token may be granted
	LeastMs    int64   `json:"least_ms,omitempty"`      // a token's least window (politeness.LeastWindow)
	// Adaptive politeness: a finished page's fetch time (dMs) times
	// Factor, at most MaxDelayMs, becomes its host's interval.
	Factor     float64 `json:"factor,omitempty"`
	MaxDelayMs int64   `json:"max_delay_ms,omitempty"`
	// Budget is pages for the whole crawl (0: none; -1: this shard's
	// share, its stats' field 'allow'): the crawl may be over once spent.
	Budget int64 `json:"budget,omitempty"`
	// HostMax is pages a host (0: none): a host's new links are not queued
	// past twice the cap, and its queue is dropped once it reached it.
	HostMax int64 `json:"host_max,omitempty"`
	// HostConc is requests a host may have in flight (0: no cap): a URL
	// is granted with a slot of its host's (hostslots.lua), held by its
	// lease.
	HostConc   int        `json:"host_conc,omitempty"`
	Settings   int64      `json:"settings,omitempty"` // the settings version the policy's values come from (Policy.Version; older than the shard's: nothing granted)
	Lifo       bool       `json:"lifo,omitempty"`     // new links go to the front of their hosts' lists (Policy.Depth)
	Lane       string     `json:"lane,omitempty"`     // the lane popped from (Options.Lane)
	IP         bool       `json:"ip,omitempty"`       // politeness per address (Policy.PerAddress)
	IPShard    int        `json:"ip_shard,omitempty"` // this shard's place, and their count: which of an address's slots it takes
	IPShards   int        `json:"ip_shards,omitempty"`
	Done       []doneArgs `json:"done,omitempty"`        // the finished leases, each by place (doneArgs; finish.lua)
	Fresh      [][2]int   `json:"fresh,omitempty"`       // per finished lease: {text: its id, its links among the call's (after the previous lease's)} (exchange.lua)
	Back       []int      `json:"back,omitempty"`        // texts: the members of the leases given back
	BackGrants []int64    `json:"back_grants,omitempty"` // their tokens' slots (µs, Redis's clock), which go back
	BackAgain  []int      `json:"back_again,omitempty"`  // the places in Back (1-based) of late leases, which ask their hosts again
	BackAddrs  []int      `json:"back_addrs,omitempty"`  // texts: the addresses whose tokens go back too, by place (0: none)
	Kept       []int      `json:"kept,omitempty"`        // texts: the late leases back.lua asked about; those still held count among the URLs wanted
	IDs        int        `json:"ids,omitempty"`         // text: the first of want lease ids, the rest after it
	// The outbox (Frontier.Exchange over shards): this call's entry,
	// written when a page with away links is recorded; the text of those
	// links (JSON, for the scheduler to offer again should no ack come);
	// and the entries whose offers went through, each with the new links
	// the offers found per page: their records go to the results stream
	// and the entries are deleted (one gone already, acked by the
	// scheduler, is skipped).
	OutboxID string      `json:"outbox_id,omitempty"`
	Outbox   int         `json:"outbox,omitempty"`
	Acks     []outboxAck `json:"acks,omitempty"`
	texts    []string
	stats    map[string]int // a stat's text, written once a call
}

// text adds s to the texts after the object, and returns its place.
func (a *exchangeArgs) text(s string) int {
	a.texts = append(a.texts, s)
	return len(a.texts)
}

// stat is the place of stat among the texts, added the first time.
func (a *exchangeArgs) stat(stat string) int {
	if stat == "" {
		return 0
	}
	if i, ok := a.stats[stat]; ok {
		return i
	}
	if a.stats == nil {
		a.stats = map[string]int{}
	}
	a.stats[stat] = a.text(stat)
	return a.stats[stat]
}

// doneArgs are one finished lease's, by place (finish.lua reads them):
// numbers only, most of them the places of texts, 0 for none, so that a
// page costs the script's JSON decoder a few characters.
type doneArgs [doneFields]int64

const (
	dLease   = iota // text: its member
	dStat           // text: the stats fields to bump, comma-separated (one text for a call's equal ones)
	dRecord         // text: its record
	dVisit          // text: the due set's member its fetch leaves (the sweep took the one it was fetched with out)
	dDue            // ms from now until that visit is due
	dFlags          // its flags (doneFetched …, below)
	dFailed         // text: its failed-list entry
	dMs             // its fetch's time, ms (adaptive politeness)
	dCounted        // its new links that earlier calls of the batch counted (a batch over shards)
	dGrant          // with doneRefund: its token's slot, µs by Redis's clock (0: unknown, the token stays taken)
	dPut            // with doneDeferred or doneRequeued: text, the entry that goes back ("host\nitem-json": a retry's attempts and errors; 0: the lease's own)
	dAfter          // with doneDeferred or doneRequeued: ms from now (PutBack.After)
	dAddr           // with doneRefund: text, the address whose token goes back too (0: none)
	doneFields
)

// doneArgs' flags.
const (
	doneFetched = 1 << iota // a page was fetched
	doneRefund              // no request went to its host, whose token goes back
	// doneAway: it has links to other shards' hosts, offered there in the
	// same pipeline; its record waits in the call's outbox entry.
	doneAway
	doneDeferred // no page: its URL deferred (PutBack.Deferred)
	doneRequeued // no page: its URL back at its queue's front, its host held off
)

// MarshalJSON writes the fields as an array without its trailing zeros.
func (d doneArgs) MarshalJSON() ([]byte, error) {
	n := len(d)
	for n > 1 && d[n-1] == 0 {
		n--
	}
	b := append(make([]byte, 0, 8*n), '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, d[i], 10)
	}
	return append(b, ']'), nil
}

// encode is the script's last arguments: the object, then its texts.
func (a exchangeArgs) encode() []any {
	a.FailedCap = failedCap
	b, err := json.Marshal(a)
	if err != nil {
		panic("frontier: exchange arguments: " + err.Error()) // strings and numbers only: cannot fail
	}
	out := make([]any, 0, 1+len(a.texts))
	out = append(out, string(b))
	for _, t := range a.texts {
		out = append(out, t)
	}
	return out
}
