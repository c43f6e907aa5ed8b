package perhost

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
)

// Politeness per server address (Policy.PerAddress, addrs.lua): hosts
// that resolve to one address share its token bucket as well as each
// keeping its own. The workers resolve the names (the pops ask for those
// they need: PopInfo.Resolve) and store the answers in Redis with their
// TTLs, in each host's shard, so that every worker's pops agree which
// hosts share a server.

var addrStoreScript = lua.Script("addrstore")

// Address is a DNS answer for a host: the address its requests go to
// (the lowest of those the name has, so that every worker picks the same),
// and how long the answer holds.
type Address struct {
	Host, Addr string
	TTL        time.Duration
}

// SetAddresses stores answers, each in its host's shard, kept for its
// TTL (a second at least); the next pops of those hosts take their
// addresses' tokens.
func (f Controls) SetAddresses(ctx context.Context, answers []Address) error {
	by := map[int][]any{}
	for _, a := range answers {
		if a.Host == "" || a.Addr == "" || strings.ContainsAny(a.Addr, " \n") {
			return fmt.Errorf("frontier: address %q of host %q: not storable", a.Addr, a.Host)
		}
		s := keyspace.ShardOf(a.Host, len(f.Keys))
		by[s] = append(by[s], a.Host, a.Addr, a.TTL.Milliseconds())
	}
	for s, args := range by {
		k := f.Keys[s]
		err := addrStoreScript.Run(ctx, f.C, []string{k.Config, k.Queues}, append([]any{f.Instance}, args...)...).Err()
		switch {
		case keyspace.IsGone(err):
			return keyspace.ErrGone
		case err != nil:
			return fmt.Errorf("frontier: storing addresses: %w", err)
		}
	}
	return nil
}

// AddressLoad is one server address's share of a crawl: the tokens its
// bucket gave (its hosts' requests, over every shard), how many hosts
// resolved to it, and the first few of them.
type AddressLoad struct {
	Addr   string   `json:"addr"`
	Tokens int64    `json:"tokens"`
	Hosts  int64    `json:"hosts"`
	Named  []string `json:"named,omitempty"`
}

// BusiestAddresses are the n addresses whose buckets gave the most tokens
// (with politeness per address), busiest first.
func (f Controls) BusiestAddresses(ctx context.Context, n int) ([]AddressLoad, error) {
	tokens := map[string]int64{}
	for _, k := range f.Keys {
		k := k.Queues
		zs, err := f.C.ZRevRangeWithScores(ctx, k+" addr busy", 0, int64(n)-1).Result()
		if err != nil {
			return nil, fmt.Errorf("frontier: busiest addresses: %w", err)
		}
		for _, z := range zs {
			a, _ := z.Member.(string)
			tokens[a] += int64(z.Score)
		}
	}
	var out []AddressLoad
	for a, t := range tokens {
		out = append(out, AddressLoad{Addr: a, Tokens: t})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tokens != out[j].Tokens {
			return out[i].Tokens > out[j].Tokens
		}
		return out[i].Addr < out[j].Addr
	})
	out = out[:min(len(out), n)]
	if len(out) == 0 {
		return nil, nil
	}
	names := make([]string, len(out))
	for i, l := range out {
		names[i] = l.Addr
	}
	for _, k := range f.Keys {
		vs, err := f.C.HMGet(ctx, k.Queues+" addr hosts", names...).Result()
		if err != nil {
			return nil, fmt.Errorf("frontier: busiest addresses: %w", err)
		}
		for i, v := range vs {
			s, _ := v.(string)
			count, rest, _ := strings.Cut(s, " ")
			c, _ := strconv.ParseInt(count, 10, 64)
			out[i].Hosts += c
			for _, h := range strings.Fields(rest) {
				if len(out[i].Named) < 8 {
					out[i].Named = append(out[i].Named, h)
				}
			}
		}
	}
	return out, nil
}
