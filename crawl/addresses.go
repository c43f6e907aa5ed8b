package crawl

import (
	"context"
	"sync"
	"time"

	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/perhost"
	"golang.org/x/sync/errgroup"
)

// With seed --politeness ip, a pop hands out no URL of a host whose server
// address is not known yet; its reply lists such hosts
// (frontier.PopInfo.Resolve). The exchanger resolves them at once and
// stores the answers in Redis, in the same turn as the reply, so that its
// next pop has them (and every other worker's). A name that does not
// resolve is stored as its own address for a while (unresolvedTTL): its
// fetch will fail and say why, and the host alone holds its rate.

// unresolvedTTL is how long a host whose address could not be found
// counts as its own server before it is asked again.
const unresolvedTTL = 30 * time.Second

// resolveAtOnce bounds the lookups one reply makes together.
const resolveAtOnce = 16

// addresses resolves hosts and stores what it found.
type addresses struct {
	dns *fetch.Addresser
	fr  *frontier.Frontier
}

// store resolves hosts (each once) and stores their answers; it reports
// a failure to store them (the next pop asks again).
func (a *addresses) store(ctx context.Context, hosts []string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	var answers []perhost.Address
	seen := map[string]bool{}
	g := errgroup.Group{}
	g.SetLimit(resolveAtOnce)
	for _, h := range hosts {
		if seen[h] {
			continue
		}
		seen[h] = true
		g.Go(func() error {
			addr, ttl, err := a.dns.Address(ctx, h)
			if err != nil {
				addr, ttl = h, unresolvedTTL
			}
			mu.Lock()
			answers = append(answers, perhost.Address{Host: h, Addr: addr, TTL: ttl})
			mu.Unlock()
			return nil
		})
	}
	g.Wait()
	return a.fr.Hosts.SetAddresses(ctx, answers)
}
