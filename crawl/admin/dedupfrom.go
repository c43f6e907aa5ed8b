package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/payloads"
	"github.com/redis/go-redis/v9"
)

// ErrDedupFrom: a crawl seed --dedup-from names has no committed payload
// digests to refer to.
var ErrDedupFrom = errors.New("--dedup-from")

// checkDedupFrom: each crawl that crawl name's --dedup-from names is
// another crawl, seeded with --dedup-payloads, that completed and whose
// payload digests were committed; one that completed while no scheduler
// was left to commit them (every worker stopped in between) is committed
// now. The message says which crawl, and what it lacks.
func checkDedupFrom(ctx context.Context, c redis.UniversalClient, name string, from []string) error {
	for _, other := range from {
		if other == name {
			return fmt.Errorf("%w %s: a crawl cannot refer to its own archive as an earlier crawl's (--dedup-payloads does that within it)", ErrDedupFrom, other)
		}
		if _, _, ok, err := payloads.Committed(ctx, c, other); err != nil || ok {
			continue // Redis unreachable: the seed's next step says so
		}
		s, err := settings.Load(ctx, c, other)
		switch {
		case errors.Is(err, crawl.ErrNoCrawl):
			return fmt.Errorf("%w %s: no such crawl in this Redis (crawler list shows those there are)", ErrDedupFrom, other)
		case err != nil:
			return err
		case !s.DedupPayloads:
			return fmt.Errorf("%w %s: that crawl ran without --dedup-payloads: it kept no payload digests to refer to", ErrDedupFrom, other)
		}
		fr, err := frontier.New(c, other, crawl.FrontierOptions(s))
		if err != nil {
			return err
		}
		if _, err := fr.Digests.Commit(ctx); errors.Is(err, payloads.ErrNotComplete) {
			return fmt.Errorf("%w %s: that crawl has not completed: its payloads join what later crawls refer to when it does", ErrDedupFrom, other)
		} else if err != nil {
			return err
		}
	}
	return nil
}
