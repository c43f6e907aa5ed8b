package settings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/redcrawl/crawler/frontier/keyspace"
)

// MaxDedupFrom bounds Settings.DedupFrom: each crawl named is one more
// lookup in each batch of payload claims.
const MaxDedupFrom = 16

// checkDedupFrom: the crawls named are crawl names, each once, at most
// MaxDedupFrom, and only with --dedup-payloads (which looks them up).
func (s Settings) checkDedupFrom() error {
	if len(s.DedupFrom) == 0 {
		return nil
	}
	if !s.DedupPayloads {
		return fmt.Errorf("--dedup-from needs --dedup-payloads (and workers with --warc-dir): it is the payload index that looks the earlier crawls up")
	}
	if len(s.DedupFrom) > MaxDedupFrom {
		return fmt.Errorf("--dedup-from names %d crawls; at most %d", len(s.DedupFrom), MaxDedupFrom)
	}
	for i, name := range s.DedupFrom {
		if err := keyspace.CheckName(name); err != nil {
			return fmt.Errorf("--dedup-from: %w", err)
		}
		if slices.Contains(s.DedupFrom[:i], name) {
			return fmt.Errorf("--dedup-from names %s twice", name)
		}
	}
	return nil
}

// duplicates is what Summary says of the duplicates a crawl looks for
// beyond one URL: payloads archived before (and by which earlier crawls),
// near copies.
func (s Settings) duplicates() string {
	var b strings.Builder
	if s.DedupPayloads {
		b.WriteString(", payloads archived once")
		if len(s.DedupFrom) > 0 {
			b.WriteString(" (and by " + strings.Join(s.DedupFrom, ", ") + ")")
		}
	}
	if s.NearDuplicates != NearOff {
		b.WriteString(", near copies: " + s.NearDuplicates)
	}
	return b.String()
}
