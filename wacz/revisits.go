package wacz

import (
	"fmt"
	"strings"
	"time"
)

// revisits are the revisit records an index's lines point at, and the
// responses they may refer to (an index line's key and 14-digit
// timestamp).
type revisits struct {
	responses map[string]bool
	targets   []revisitTarget
}

// revisitTarget is a revisit record's (of: its URI) reference: the URI
// and date of the response that holds its payload.
type revisitTarget struct {
	of, uri string
	date    time.Time
}

// key is the index's key and timestamp of the response the revisit
// refers to.
func (t revisitTarget) key() string {
	return strings.ReplaceAll(SURT(t.uri), " ", "%20") + " " + t.date.UTC().Format("20060102150405")
}

// resolve checks that every revisit refers to a response of the index,
// and returns how many there are.
func (rv *revisits) resolve() (int, error) {
	for _, t := range rv.targets {
		if !rv.responses[t.key()] {
			return 0, fmt.Errorf("wacz: the revisit record of %s refers to the response of %s at %s, which the package does not hold "+
				"(a crawl run with --dedup-from: package the earlier crawl's WARC files with it)", clip(t.of), clip(t.uri), t.date.UTC().Format(time.RFC3339))
		}
	}
	return len(rv.targets), nil
}
