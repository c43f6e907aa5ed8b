package crawl

import "github.com/redcrawl/crawler/frontier"

// Keys are every Redis key of one crawl. Keys of the crawl as a whole
// share the hash tag {name}, so multi-key scripts are legal on a Redis
// Cluster; per-host keys (rate, robots) carry the host as their own tag and
// spread across the cluster.
type Keys struct {
	Name     string
	Config   string // hash: the crawl's settings, written once by seed
	Hosts    string // set: the seeds' hosts (scope)
	Seen     string // Bloom filter (dedup), with its segments under Seen+":"
	Leader   string // scheduler lock; its epoch counter is Leader+":epoch"
	Results  string // stream of result records, capped
	Done     string // string "1" once the scheduler saw nothing left to do
	Frontier frontier.Keys
}

// KeysFor names the keys of crawl name.
func KeysFor(name string) Keys {
	p := "crawl:{" + name + "}:"
	return Keys{Name: name, Config: p + "config", Hosts: p + "hosts", Seen: p + "seen", Leader: p + "leader",
		Results: p + "results", Done: p + "done", Frontier: frontier.KeysFor(name)}
}

// RatePrefix and RobotsPrefix precede "{host}" in per-host keys.
func (k Keys) RatePrefix() string   { return "crawl:" + k.Name + ":rate:" }
func (k Keys) RobotsPrefix() string { return "crawl:" + k.Name + ":robots:" }

// Patterns match every key of the crawl, for reset (SCAN MATCH).
func (k Keys) Patterns() []string {
	return []string{"crawl:{" + escapeGlob(k.Name) + "}:*", "crawl:" + escapeGlob(k.Name) + ":*"}
}

func escapeGlob(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
