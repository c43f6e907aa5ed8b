package frontier

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

var (
	moveScript = lua.Script("move")
)

// moveScanMax bounds the elements of one host's lists a Requeue reads.
const moveScanMax = 1 << 20

// Requeue gives URLs already queued the places their items ask for (a
// seed's priority): each one found in its host's lists is moved there, in
// one script per URL that takes its old element off and pushes the new
// (move.lua), never queued twice. It reports, per item, whether the URL
// was queued or in flight (moved, taken by a pop meanwhile, or leased):
// such an item must not be enqueued again. A batch costs a Bloom read,
// then, for the URLs the filter has seen, a read of the leases and of the
// queued hosts' lengths, and of the lists of those with URLs queued.
func (f *Frontier) Requeue(ctx context.Context, items []Item) ([]bool, error) {
	out := make([]bool, len(items))
	byShard := make([][]int, len(f.fs))
	for i, it := range items {
		host, err := hostOf(it.URL)
		if err != nil {
			return nil, err
		}
		sh := keyspace.ShardOf(host, len(f.fs))
		byShard[sh] = append(byShard[sh], i)
	}
	for s, idx := range byShard {
		if len(idx) > 0 {
			if err := f.fs[s].requeue(ctx, items, idx, out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// requeue is Requeue of the items at idx, all of this shard: only a URL
// the Bloom filter has seen can be queued, and only on a host with URLs
// queued (one call each for the batch), whose lists are then read.
func (f *shard) requeue(ctx context.Context, items []Item, idx []int, out []bool) error {
	urls := make([]string, len(idx))
	for j, i := range idx {
		urls[j] = items[i].URL
	}
	seen, err := f.seen.Contains(ctx, urls)
	if err != nil {
		return fmt.Errorf("frontier: requeue: %w", err)
	}
	byHost := map[string]map[string]int{}
	var hosts []string
	for j, i := range idx {
		if !seen[j] {
			continue
		}
		host, _ := hostOf(items[i].URL)
		if byHost[host] == nil {
			byHost[host] = map[string]int{}
			hosts = append(hosts, host)
		}
		byHost[host][items[i].URL] = i
	}
	if len(hosts) == 0 {
		return nil
	}
	// A URL leased now is being fetched: it is not queued again either.
	if err := f.leased(ctx, func(host, url string) {
		if i, ok := byHost[host][url]; ok {
			out[i] = true
			delete(byHost[host], url)
		}
	}); err != nil {
		return err
	}
	lengths, err := f.c.HMGet(ctx, f.keys.Lengths, hosts...).Result()
	if err != nil {
		return fmt.Errorf("frontier: requeue: %w", err)
	}
	for h, host := range hosts {
		if n, _ := lengths[h].(string); n == "" || n == "0" {
			continue
		}
		want := byHost[host]
		if len(want) == 0 {
			continue
		}
		found, err := f.findQueued(ctx, host, want)
		if err != nil {
			return err
		}
		for url, at := range found {
			i := want[url]
			if at.level == items[i].Priority {
				out[i] = true // queued already where it should be
				continue
			}
			e, err := backEntry(items[i])
			if err != nil {
				return err
			}
			if _, err := moveScript.Run(ctx, f.c, []string{f.keys.Queues, f.keys.Ready, f.keys.Stats, f.keys.Lengths, f.keys.Refill},
				at.list, at.el, e, keyspace.Flag(f.policy().Depth)).Int(); err != nil {
				return fmt.Errorf("frontier: requeue %s: %w", url, err)
			}
			out[i] = true
		}
	}
	return nil
}

// leased calls fn with the host and URL of every lease (a ZSCAN of the
// leases: as many as URLs in flight).
func (f *shard) leased(ctx context.Context, fn func(host, url string)) error {
	iter := f.c.ZScan(ctx, f.keys.Leases, 0, "", 1000).Iterator()
	for i := 0; iter.Next(ctx); i++ {
		if i%2 == 1 {
			continue // a score
		}
		parts := strings.SplitN(iter.Val(), "\n", 3) // lease-id, host, item JSON
		if len(parts) != 3 {
			continue
		}
		var it Item
		if json.Unmarshal([]byte(parts[2]), &it) == nil {
			fn(parts[1], it.URL)
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("frontier: requeue: %w", err)
	}
	return nil
}

// queuedAt is where a URL waits: its list's suffix, its level and its
// element as stored.
type queuedAt struct {
	list, el string
	level    int
}

// findQueued reads host's lists, highest level first, up to moveScanMax
// elements in all, and says where each URL of want waits (its first
// element).
func (f *shard) findQueued(ctx context.Context, host string, want map[string]int) (map[string]queuedAt, error) {
	levels := []int{0}
	if s, err := f.c.HGet(ctx, f.keys.Queues+" levels", host).Result(); err == nil {
		for _, l := range strings.Fields(s) {
			if n, err := strconv.Atoi(l); err == nil {
				levels = append(levels, n)
			}
		}
	} else if err != redis.Nil {
		return nil, fmt.Errorf("frontier: requeue: %w", err)
	}
	found := map[string]queuedAt{}
	read := 0
	for _, level := range levels {
		list := host
		if level != 0 {
			list = host + " " + strconv.Itoa(level)
		}
		for start := int64(0); read < moveScanMax && len(found) < len(want); start += 1000 {
			els, err := f.c.LRange(ctx, f.keys.Queues+list, start, start+999).Result()
			if err != nil {
				return nil, fmt.Errorf("frontier: requeue: %w", err)
			}
			read += len(els)
			for _, el := range els {
				u := elementURL(host, el)
				if _, ok := want[u]; ok && u != "" {
					if _, dup := found[u]; !dup {
						found[u] = queuedAt{list: list, el: el, level: level}
					}
				}
			}
			if len(els) < 1000 {
				break
			}
		}
	}
	return found, nil
}

// elementURL is the URL of a queue element of host ("" for a marker, or
// what does not decode): queue.lua's format.
func elementURL(host, el string) string {
	switch {
	case el == "" || el[0] == 'P':
		return ""
	case el[0] == '{':
		var it Item
		if json.Unmarshal([]byte(el), &it) != nil {
			return ""
		}
		return it.URL
	case el[0] == 'h' || el[0] == 's':
		sp := strings.IndexByte(el, ' ')
		if sp < 0 {
			return ""
		}
		scheme := "http://"
		if el[0] == 's' {
			scheme = "https://"
		}
		return scheme + host + el[sp+1:]
	}
	return ""
}
