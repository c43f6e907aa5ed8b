package status

import (
	"fmt"
	"strings"

	"github.com/redcrawl/crawler/crawl"
)

// writeGroups writes status's line of export groups.
func (st *Status) writeGroups(b *strings.Builder) {
	if len(st.Groups) == 0 {
		return
	}
	var parts []string
	lag := false
	for _, g := range st.Groups {
		s := fmt.Sprintf("%s (%d readers, %d behind)", g.Name, g.Consumers, g.Behind())
		if crawl.Lagging(g) {
			s += " LAGS"
			lag = true
		}
		parts = append(parts, s)
	}
	note := "the results are trimmed only below what every group acknowledged"
	if lag {
		share := ""
		if st.Settings.Shards > 1 {
			share = fmt.Sprintf(", a shard's share of them with %d shards", st.Settings.Shards)
		}
		note = fmt.Sprintf("a group %.0f %% of %d records behind lags: past them (seed --results-kept%s) the oldest records it has not read are dropped",
			100*crawl.LagWarnAt, st.Settings.ResultsKept, share)
	}
	fmt.Fprintf(b, "  export      groups: %s; %s\n", strings.Join(parts, ", "), note)
}
