package frontier

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/records"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A finished page travels to exchange.lua as numbers by place (doneArgs:
// exchangeargs.go) and texts after them, which the script reads back by
// place (contract.lua: EX_STAT …). Whatever outcome Go sends, Redis
// keeps exactly it: its record in the results stream with the count of
// its new links, each of its stats counters bumped once, its failed entry,
// a page counted when one was fetched. On miniredis and redis-server; the
// committed corpus (testdata/fuzz/FuzzDoneArgs) runs with go test.
func FuzzDoneArgs(f *testing.F) {
	f.Add("ok", int16(200), "change", `{"url":"x"}`, "", true, uint8(2), uint8(0))
	f.Add("", int16(0), "", "", "", false, uint8(0), uint8(0))
	f.Add("failed", int16(0), "", `{"e":"é\n"}`, "a reason, with a comma", false, uint8(0), uint8(3))
	f.Add("http_error", int16(503), "gone", "\x00\xff raw", "", true, uint8(5), uint8(1))
	f.Add("ok", int16(-1), "", "", "", true, uint8(1), uint8(0))
	servers := []*redistest.Server{redistest.Mini(f), redistest.Real(f)}
	f.Fuzz(func(t *testing.T, stat string, status int16, change, record, failed string, fetched bool, links, also uint8) {
		// Counters are words without commas (Outcome's contract): the
		// script splits a page's counters at commas.
		for _, w := range []string{stat, change} {
			if strings.Contains(w, ",") {
				return
			}
		}
		o := Outcome{Stat: stat, Status: int(status), Change: change, Failed: failed, Fetched: fetched}
		if record != "" {
			o.Record = []byte(record)
		}
		for i := 0; i < int(also%4); i++ {
			o.Also = append(o.Also, fmt.Sprintf("also%d", i))
		}
		for i := 0; i < int(links%8); i++ {
			o.Children = append(o.Children, Item{URL: fmt.Sprintf("http://h.example/c%d", i%5), Depth: 1, Parent: "http://h.example/"})
		}
		for _, s := range servers {
			doneArgsRoundTrip(t, s, o)
		}
	})
}

func doneArgsRoundTrip(t *testing.T, s *redistest.Server, o Outcome) {
	ctx := context.Background()
	s.Client.FlushAll(ctx)
	fr := openShards(t, s.Client, "fz", 1, 0)
	if _, err := fr.EnqueueAll(ctx, []Item{{URL: "http://h.example/"}}); err != nil {
		t.Fatal(err)
	}
	x, err := fr.Exchange(ctx, nil, nil, 1)
	if err != nil || len(x.Popped) != 1 {
		t.Fatalf("%s: pop: %d, %v", s.Kind, len(x.Popped), err)
	}
	before, _ := fr.Stats(ctx)
	lease := x.Popped[0]
	x, err = fr.Exchange(ctx, []Finished{{Lease: lease, Outcome: o}}, nil, 0)
	if err != nil || len(x.Held) != 1 || !x.Held[0] {
		t.Fatalf("%s: finish %+v: held %v, %v", s.Kind, o, x.Held, err)
	}
	after, _ := fr.Stats(ctx)
	want := map[string]int64{}
	if c := o.counters(); c != "" {
		for _, f := range strings.Split(c, ",") {
			want[f]++
		}
	}
	if o.Fetched {
		want["pages"]++
	}
	if o.Record != nil {
		want["records"]++
	}
	fresh := 0
	for _, q := range x.Queued[0] {
		if q {
			fresh++
		}
	}
	want["enqueued"] += int64(fresh)
	want["offered"] += int64(len(o.Children))
	for field, n := range want {
		if n != 0 && after[field]-before[field] != n {
			t.Fatalf("%s: %+v: stats %q moved by %d; want %d", s.Kind, o, field, after[field]-before[field], n)
		}
	}
	var recs []records.Stored
	fr.Records.Read(ctx, fr.Records.NewCursor(), func(r records.Stored) error { recs = append(recs, r); return nil })
	switch {
	case o.Record == nil && len(recs) != 0:
		t.Fatalf("%s: %+v: %d records; want none", s.Kind, o, len(recs))
	case o.Record != nil && (len(recs) != 1 || string(recs[0].Body) != string(o.Record) || recs[0].NewLinks != fresh):
		t.Fatalf("%s: %+v: records %+v; want one, the record given, with %d new links", s.Kind, o, recs, fresh)
	}
	entries := s.Client.LRange(ctx, keyspace.KeysFor("fz").Failed, 0, -1).Val()
	if (o.Failed != "") != (len(entries) == 1) || o.Failed != "" && entries[0] != lease.failedEntry(o.Failed) {
		t.Fatalf("%s: %+v: failed list %q", s.Kind, o, entries)
	}
}
