package frontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

var (
	moveScript = lua.Script("move")
)

// moveScanMax bounds the elements of one host's lists a Requeue reads, in
// pages of moveScanPage.
const (
	moveScanMax  = 1 << 20
	moveScanPage = 1000
)

// Requeued is what Requeue did with a seed.
type Requeued int8

const (
	// NotSeen: the Bloom filter never saw the URL; enqueue it.
	NotSeen Requeued = iota
	// Moved: the URL was queued (and is now at its item's priority) or is
	// in flight; it is not queued again.
	Moved
	// QueuedAgain: the filter saw the URL, which waited nowhere and was not
	// in flight (fetched already, or a false positive): Requeue queued it.
	QueuedAgain
)

// Requeue gives seeds the filter has seen the places their items ask for
// (a seed's priority), never queueing a URL twice: a URL queued at another
// level is moved there, one in flight is left alone, one waiting nowhere
// is queued again. For the URLs the filter has seen, it reads the leases
// and their hosts' lists under WATCH of those lists, and writes in that
// transaction (move.lua): a pop or a give-back of those hosts between the
// reads and the writes makes Redis refuse the writes, and it reads again.
// (Reads alone cannot decide it: a URL popped between a read of the leases
// and a read of its list is in neither, and was queued twice.)
func (f *Frontier) Requeue(ctx context.Context, items []Item) ([]Requeued, error) {
	out := make([]Requeued, len(items))
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

// requeueHosts is the most hosts one transaction of requeue watches; a
// transaction refused (one of its hosts popped or pushed) is tried again
// with half as many, down to one host, at most requeueTries times in a
// row; one that went through lets the next watch twice as many.
const (
	requeueHosts = 64
	requeueTries = 50
)

// requeue is Requeue of the items at idx, all of this shard.
func (f *shard) requeue(ctx context.Context, items []Item, idx []int, out []Requeued) error {
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
	size, tries := requeueHosts, 0
	for len(hosts) > 0 {
		n := min(size, len(hosts))
		err := f.requeueTx(ctx, hosts[:n], byHost, items, out)
		if err == nil {
			hosts, tries, size = hosts[n:], 0, min(2*n, requeueHosts)
			continue
		}
		noScript := script.IsNoScript(err) // not loaded yet, or flushed (a restart): nothing ran
		if !noScript && !errors.Is(err, redis.TxFailedErr) {
			return err
		}
		if tries++; tries == requeueTries {
			return fmt.Errorf("frontier: requeue: the queues of %s changed under each of %d reads; seed again", hosts[0], tries)
		}
		if noScript {
			if err := moveScript.Load(ctx, f.c).Err(); err != nil {
				return fmt.Errorf("frontier: requeue: %w", err)
			}
			continue
		}
		size = max(1, n/2)
		// A busy host: let its pops pass before reading again.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(tries) * time.Millisecond):
		}
	}
	return nil
}

// requeueTx decides hosts' seeds in one transaction: WATCH of the levels
// hash and of each host's lists, their reads and the leases', then
// move.lua in MULTI. It returns redis.TxFailedErr when a watched key
// changed meanwhile (nothing written), and sets out only when it wrote.
func (f *shard) requeueTx(ctx context.Context, hosts []string, byHost map[string]map[string]int, items []Item, out []Requeued) error {
	return f.c.Watch(ctx, func(tx *redis.Tx) error {
		places, err := f.seedPlaces(ctx, tx, hosts, byHost)
		if err != nil {
			return err
		}
		return f.placeSeeds(ctx, tx, places, items, out)
	}, f.keys.Queues+" levels")
}

// seedPlace is where a seed waits as read under WATCH: its item's index,
// its element if queued, and whether it is leased.
type seedPlace struct {
	i              int
	at             queuedAt
	queued, leased bool
}

// seedPlaces watches the hosts' lists and reads them, then the leases,
// through tx: the levels of every host in one read, the lists' first
// pages in one pipeline, further pages of long lists one by one.
func (f *shard) seedPlaces(ctx context.Context, tx *redis.Tx, hosts []string, byHost map[string]map[string]int) ([]seedPlace, error) {
	levels, err := f.levels(ctx, tx, hosts)
	if err != nil {
		return nil, err
	}
	var keys []string
	for h, host := range hosts {
		for _, l := range levels[h] {
			keys = append(keys, f.keys.Queues+listOf(host, l))
		}
	}
	if err := tx.Watch(ctx, keys...).Err(); err != nil {
		return nil, fmt.Errorf("frontier: requeue: %w", err)
	}
	first := make([]*redis.StringSliceCmd, len(keys))
	if _, err := tx.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for k, key := range keys {
			first[k] = pipe.LRange(ctx, key, 0, moveScanPage-1)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("frontier: requeue: %w", err)
	}
	var places []seedPlace
	k := 0
	for h, host := range hosts {
		found, err := f.findQueued(ctx, tx, host, levels[h], first[k:k+len(levels[h])], byHost[host])
		if err != nil {
			return nil, err
		}
		k += len(levels[h])
		for url, i := range byHost[host] {
			at, ok := found[url]
			places = append(places, seedPlace{i: i, at: at, queued: ok})
		}
	}
	// Read after the lists are watched: a URL that leaves the leases for
	// its list, or its list for the leases, changes a watched list.
	leased := map[int]bool{}
	if err := f.leased(ctx, tx, func(host, url string) {
		if i, ok := byHost[host][url]; ok {
			leased[i] = true
		}
	}); err != nil {
		return nil, err
	}
	for k := range places {
		places[k].leased = leased[places[k].i]
	}
	return places, nil
}

// placeSeeds sends move.lua, in tx's MULTI, for the seeds that wait at
// another level or nowhere, and sets out once the transaction ran.
func (f *shard) placeSeeds(ctx context.Context, tx *redis.Tx, places []seedPlace, items []Item, out []Requeued) error {
	args := []any{keyspace.Flag(f.policy().Depth)}
	var sent []int
	result := map[int]Requeued{}
	for _, p := range places {
		if p.queued && p.at.level == items[p.i].Priority || !p.queued && p.leased {
			result[p.i] = Moved // where it should be already, or being fetched
			continue
		}
		e, err := backEntry(items[p.i])
		if err != nil {
			return err
		}
		if p.queued {
			args = append(args, p.at.list, p.at.el, e)
		} else {
			args = append(args, "", "", e)
		}
		sent = append(sent, p.i)
	}
	var run *redis.Cmd
	if _, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		if len(sent) > 0 {
			run = moveScript.EvalSha(ctx, pipe, []string{f.keys.Queues, f.keys.Ready, f.keys.Stats, f.keys.Lengths, f.keys.Refill, f.keys.DoneFlag}, args...)
		} else {
			pipe.Ping(ctx) // an empty MULTI still checks the WATCH
		}
		return nil
	}); err != nil {
		if errors.Is(err, redis.TxFailedErr) {
			return err
		}
		return fmt.Errorf("frontier: requeue: %w", err)
	}
	if run != nil {
		rs, err := run.Int64Slice()
		if err != nil || len(rs) != len(sent) {
			return fmt.Errorf("frontier: requeue: move: reply %v for %d seeds: %v", rs, len(sent), err)
		}
		for k, i := range sent {
			result[i] = Moved
			if rs[k] == 2 {
				result[i] = QueuedAgain
			}
		}
	}
	for i, r := range result {
		out[i] = r
	}
	return nil
}

// leased calls fn with the host and URL of every lease (a ZSCAN of the
// leases: as many as URLs in flight).
func (f *shard) leased(ctx context.Context, c redis.Cmdable, fn func(host, url string)) error {
	iter := c.ZScan(ctx, f.keys.Leases, 0, "", 1000).Iterator()
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

// levels are, per host, the levels of its lists: 0 and those the levels
// hash names, highest first after 0 (read through c: the transaction's).
func (f *shard) levels(ctx context.Context, c redis.Cmdable, hosts []string) ([][]int, error) {
	vals, err := c.HMGet(ctx, f.keys.Queues+" levels", hosts...).Result()
	if err != nil {
		return nil, fmt.Errorf("frontier: requeue: %w", err)
	}
	out := make([][]int, len(hosts))
	for h, v := range vals {
		out[h] = []int{0}
		s, _ := v.(string)
		for _, l := range strings.Fields(s) {
			if n, err := strconv.Atoi(l); err == nil {
				out[h] = append(out[h], n)
			}
		}
	}
	return out, nil
}

// listOf is the suffix of host's list of level (queue.lua's fr_qkey).
func listOf(host string, level int) string {
	if level == 0 {
		return host
	}
	return host + " " + strconv.Itoa(level)
}

// findQueued says where each URL of want waits in host's lists of
// levels (its first element), from the first page of each list read
// already (first, by level) and, for a list longer than a page, its next
// pages read through c, up to moveScanMax elements in all.
func (f *shard) findQueued(ctx context.Context, c redis.Cmdable, host string, levels []int, first []*redis.StringSliceCmd, want map[string]int) (map[string]queuedAt, error) {
	found := map[string]queuedAt{}
	read := 0
	for k, level := range levels {
		list := listOf(host, level)
		els, err := first[k].Result()
		for start := int64(0); ; {
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
			if len(els) < moveScanPage || read >= moveScanMax || len(found) == len(want) {
				break
			}
			start += moveScanPage
			els, err = c.LRange(ctx, f.keys.Queues+list, start, start+moveScanPage-1).Result()
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
