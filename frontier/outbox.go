package frontier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/redcrawl/crawler/frontier/keyspace"
)

// The transactional outbox of an exchange over shards (Frontier.Exchange,
// exchange.lua): a page's record and its links to other shards' hosts wait
// in its own shard until the offers of those links are acked, by the
// worker's next exchange or, should no ack come in OutboxAge, by the
// scheduler's sweep (deliver).

// awayLink is a link of a page to another shard's host, as an outbox
// entry keeps it: the page's place in its call (1-based) and the link.
type awayLink struct {
	D    int  `json:"d"`
	Item Item `json:"i"`
	to   int
	ref  linkRef
}

// outboxAck acks an outbox entry: Extra[d-1] is how many of the away links
// of the call's d-th page the offers found new.
type outboxAck struct {
	ID    string `json:"id"`
	Extra []int  `json:"extra,omitempty"`
}

// maxAcks bounds the acks a shard that fails keeps in memory.
const maxAcks = 1000

// deliver is the sweep's part in the outbox (Frontier.Exchange): the
// entries of shard sh no ack came for in time, in entries (id, entry …),
// have their links offered again and are acked (f.mu held).
func (f *Frontier) deliver(ctx context.Context, sh int, entries []string) error {
	var acks []outboxAck
	for i := 0; i+1 < len(entries); i += 2 {
		parts := strings.SplitN(entries[i+1], "\n", 3)
		var links []awayLink
		if len(parts) != 3 || json.Unmarshal([]byte(parts[2]), &links) != nil {
			return fmt.Errorf("frontier: outbox entry %q of shard %d is malformed", entries[i], sh)
		}
		ack := outboxAck{ID: entries[i]}
		by := make([][]awayLink, len(f.fs))
		for _, l := range links {
			if host, err := hostOf(l.Item.URL); err == nil {
				to := keyspace.ShardOf(host, len(f.fs))
				by[to] = append(by[to], l)
			}
		}
		for to, ls := range by {
			if len(ls) == 0 {
				continue
			}
			items := make([]Item, len(ls))
			for k, l := range ls {
				items[k] = l.Item
			}
			fresh, err := f.fs[to].Offer(ctx, items)
			if err != nil {
				return f.in(to, err)
			}
			for k, l := range ls {
				for len(ack.Extra) < l.D {
					ack.Extra = append(ack.Extra, 0)
				}
				if fresh[k] {
					ack.Extra[l.D-1]++
				}
			}
		}
		acks = append(acks, ack)
	}
	return f.fs[sh].ack(ctx, acks)
}

// ack acks outbox entries in a call of their own.
func (f *shard) ack(ctx context.Context, acks []outboxAck) error {
	if len(acks) == 0 {
		return nil
	}
	f.xmu.Lock()
	defer f.xmu.Unlock()
	_, err := f.offer(ctx, nil, nil, acks)
	return err
}
