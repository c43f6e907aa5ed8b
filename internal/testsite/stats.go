package testsite

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// HostStats is what one host saw.
type HostStats struct {
	Requests int `json:"requests"` // all requests, robots.txt included
	// MaxPerSecond is the most page requests (robots.txt excluded) in any
	// sliding one-second window.
	MaxPerSecond int `json:"max_per_second"`
}

// Stats is what the site saw.
type Stats struct {
	Hosts map[string]HostStats `json:"hosts"`
	// MaxFetchesPerURL is the most requests any one URL got (robots.txt excluded).
	MaxFetchesPerURL int `json:"max_fetches_per_url"`
	// FetchedMoreThanTwice lists URLs requested three times or more.
	FetchedMoreThanTwice []string `json:"fetched_more_than_twice"`
	// Disallowed lists robots-disallowed URLs that were requested anyway.
	Disallowed []string `json:"disallowed"`
	// Fetched is every URL requested at least once (robots.txt excluded).
	Fetched []string `json:"fetched"`
	// Repeated counts the requests of each URL requested more than once.
	Repeated map[string]int `json:"repeated"`
	// NotModified counts the 304s versioned pages answered; Bytes is the
	// bytes of the HTML pages' bodies sent.
	NotModified int   `json:"not_modified"`
	Bytes       int64 `json:"bytes"`
	// Conditional lists the URLs requested with a validator
	// (If-None-Match or If-Modified-Since) at least once.
	Conditional []string `json:"conditional"`
	// Trapped are the requests that reached a trap outside the scope, and
	// Browser the URLs requested with a browser's User-Agent (scripted.go):
	// both empty for a crawler whose fetcher makes every request.
	Trapped []string `json:"trapped"`
	Browser []string `json:"browser"`
}

// Stats reports what the site saw so far.
func (s *Site) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Hosts: map[string]HostStats{}, Disallowed: append([]string{}, s.private...), FetchedMoreThanTwice: []string{},
		Repeated: map[string]int{}, NotModified: s.notModified, Bytes: s.bytes,
		Trapped: append([]string{}, s.trapped...), Browser: append([]string{}, s.browser...)}
	for _, h := range s.hosts {
		st.Hosts[h] = HostStats{Requests: s.total[h], MaxPerSecond: MaxInWindow(s.reqs[h], time.Second)}
	}
	for u, n := range s.perURL {
		if strings.HasSuffix(u, "/robots.txt") {
			continue
		}
		st.Fetched = append(st.Fetched, u)
		st.MaxFetchesPerURL = max(st.MaxFetchesPerURL, n)
		if n > 1 {
			st.Repeated[u] = n
		}
		if n > 2 {
			st.FetchedMoreThanTwice = append(st.FetchedMoreThanTwice, u)
		}
	}
	sort.Strings(st.Fetched)
	for u := range s.conditional {
		st.Conditional = append(st.Conditional, u)
	}
	sort.Strings(st.Conditional)
	return st
}

// MaxInWindow: the most times within any window of length w (times are in
// arrival order, so sorted).
func MaxInWindow(times []time.Time, w time.Duration) int {
	best, lo := 0, 0
	for hi := range times {
		for times[hi].Sub(times[lo]) >= w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// Overfetched lists the URLs requested more often than a correct crawl
// may: once, or twice for a /flaky/ page (it fails once by design), plus
// once per crash the crawl went through (a SIGKILLed worker's unsent pages,
// or the work a Redis rollback undid, are fetched again, once each).
func (s *Site) Overfetched(crashes int) []string { return s.Stats().Overfetched(crashes) }

// Overfetched is Site.Overfetched for stats read over HTTP (/_stats).
func (st Stats) Overfetched(crashes int) []string {
	var over []string
	for u, n := range st.Repeated {
		allowed := 1 + crashes
		if strings.Contains(u, "/flaky/") {
			allowed++
		}
		if n > allowed {
			over = append(over, fmt.Sprintf("%s (%d times, %d allowed)", u, n, allowed))
		}
	}
	sort.Strings(over)
	return over
}

// Extra is how many requests the crawl made beyond one a URL (and the one
// retry a /flaky/ page needs by design): the cost of the faults it met.
func (st Stats) Extra() int {
	extra := 0
	for u, n := range st.Repeated {
		allowed := 1
		if strings.Contains(u, "/flaky/") {
			allowed++
		}
		extra += max(n-allowed, 0)
	}
	return extra
}

// Requests counts every request the site answered, robots.txt and its own
// /_ endpoints excepted.
func (s *Site) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for u, c := range s.perURL {
		if !strings.HasSuffix(u, "/robots.txt") {
			n += c
		}
	}
	return n
}

// Missing lists the URLs of Truth that were never requested.
func (s *Site) Missing() []string { return Missing(s.Truth(), s.Stats()) }

// Missing lists the URLs of truth that st never saw requested.
func Missing(truth []string, st Stats) []string {
	fetched := make(map[string]bool, len(st.Fetched))
	for _, u := range st.Fetched {
		fetched[u] = true
	}
	var missing []string
	for _, u := range truth {
		if !fetched[u] {
			missing = append(missing, u)
		}
	}
	return missing
}

// Times are the times of the page requests (robots.txt excluded) host got
// so far, in arrival order.
func (s *Site) Times(host string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.reqs[host]...)
}
