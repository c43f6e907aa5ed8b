package status

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/payloads"
	"github.com/redcrawl/crawler/leader"
	"github.com/redcrawl/crawler/redisconn"
	"github.com/redcrawl/crawler/session"
	"github.com/redis/go-redis/v9"
)

// Read gathers a crawl's status.
func Read(ctx context.Context, c redis.UniversalClient, name string) (*Status, error) {
	if err := crawl.CheckName(name); err != nil {
		return nil, err
	}
	s, err := settings.Load(ctx, c, name)
	if err != nil {
		return nil, err
	}
	st := &Status{Crawl: name, Settings: s, SettingsJSON: s.Typed(), SettingsVersion: s.Version}
	fr, err := frontier.Open(ctx, c, name, crawl.FrontierOptions(s))
	if err != nil {
		return nil, err
	}
	for _, read := range []func(context.Context, redis.UniversalClient, *frontier.Frontier, *Status) error{
		readQueues, readLeader, readWorkers, readControls, readLoad, readLogin, readCommitted,
	} {
		if err := read(ctx, c, fr, st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// readQueues reads the frontier's sizes, counters, filter, events and
// revisits, and the longest queues.
func readQueues(ctx context.Context, _ redis.UniversalClient, fr *frontier.Frontier, st *Status) (err error) {
	if st.Frontier, err = fr.Sizes(ctx); err != nil {
		return err
	}
	if st.Counters, err = crawl.ReadCounters(ctx, fr); err != nil {
		return err
	}
	if st.Bloom, err = fr.BloomStats(ctx); err != nil {
		return err
	}
	if st.Events, err = fr.Events.Read(ctx, StatusEvents); err != nil {
		return err
	}
	if st.Revisits, err = ReadRevisits(ctx, fr, st.Settings); err != nil {
		return err
	}
	st.TopHosts, st.HostsQueued, err = fr.Hosts.Queues(ctx, StatusTopHosts)
	return err
}

// readLeader reads who leads, and the last epoch minted.
func readLeader(ctx context.Context, c redis.UniversalClient, fr *frontier.Frontier, st *Status) error {
	info, last, err := leader.Current(ctx, c, fr.LeaderKey())
	switch {
	case err == nil:
		st.Leader = &info
	case !errors.Is(err, leader.ErrNoLeader):
		return err
	}
	st.Epoch = last
	return nil
}

// readWorkers reads the workers, alive or lapsed (unknown while Redis is
// out of memory: their heartbeats could not be written), and whether the
// crawl is done.
func readWorkers(ctx context.Context, c redis.UniversalClient, fr *frontier.Frontier, st *Status) (err error) {
	if st.WorkerNotes, err = fr.Registry.WorkersNow(ctx); err != nil {
		return err
	}
	st.Workers = []string{}
	var lapsed []string
	for _, w := range st.WorkerNotes {
		if w.Alive {
			st.Workers = append(st.Workers, w.ID)
		} else {
			lapsed = append(lapsed, w.ID)
		}
	}
	if st.RedisOutOfMemory, st.RedisMemoryLine = redisconn.RedisFull(ctx, c); st.RedisOutOfMemory {
		st.WorkersUnknown = lapsed
	}
	if st.Done, err = fr.Done(ctx); err != nil {
		return fmt.Errorf("crawl: status: %w", err)
	}
	return nil
}

// readControls reads what people set: paused hosts, the crawl's hold,
// host rules, export groups.
func readControls(ctx context.Context, _ redis.UniversalClient, fr *frontier.Frontier, st *Status) (err error) {
	if st.Paused, err = fr.Hosts.Paused(ctx); err != nil {
		return fmt.Errorf("crawl: status: %w", err)
	}
	if st.Hold, err = fr.Control.Paused(ctx); err != nil {
		return fmt.Errorf("crawl: status: %w", err)
	}
	if st.HostRules, err = fr.Hosts.Rules(ctx); err != nil {
		return fmt.Errorf("crawl: status: %w", err)
	}
	if st.Groups, err = fr.Records.Groups(ctx); err != nil {
		return fmt.Errorf("crawl: status: %w", err)
	}
	return nil
}

// readLoad reads the records trimmed, the busiest addresses, rendering's
// state and the pages of the last seconds.
func readLoad(ctx context.Context, _ redis.UniversalClient, fr *frontier.Frontier, st *Status) error {
	kept, err := fr.Records.Kept(ctx)
	if err != nil {
		return err
	}
	st.ResultsTrimmed = max(st.Counters["records"]-kept, 0)
	if st.Settings.Politeness == settings.PolitenessIP {
		if st.Addresses, err = fr.Hosts.BusiestAddresses(ctx, busiestAddresses); err != nil {
			return fmt.Errorf("crawl: status: %w", err)
		}
	}
	if st.Settings.Renders() {
		if st.Render, err = ReadRender(ctx, fr, st.Settings, st.Workers); err != nil {
			return fmt.Errorf("crawl: status: %w", err)
		}
	}
	const window = 10 * time.Second
	recent, err := fr.Records.Recent(ctx, window)
	if err != nil {
		return err
	}
	st.PagesPerSecond = float64(recent) / window.Seconds()
	return nil
}

// readLogin reads the crawl's login: its URL and its session's state.
func readLogin(ctx context.Context, c redis.UniversalClient, fr *frontier.Frontier, st *Status) (err error) {
	st.Login, err = session.Describe(ctx, c, keyspace.LoginKey(st.Crawl), keyspace.SessionKey(st.Crawl))
	return err
}

// readCommitted reads, of a crawl with --dedup-payloads, whether its
// payload digests were committed for later crawls' --dedup-from.
func readCommitted(ctx context.Context, c redis.UniversalClient, _ *frontier.Frontier, st *Status) error {
	if !st.Settings.DedupPayloads {
		return nil
	}
	at, n, ok, err := payloads.Committed(ctx, c, st.Crawl)
	if err == nil && ok {
		st.Committed = &Committed{At: at.UTC(), Digests: n}
	}
	return err
}
