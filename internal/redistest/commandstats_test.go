package redistest

import "testing"

// ParseCommandStats reads each command's calls and time, subcommands too,
// and nothing else of the text.
func TestParseCommandStats(t *testing.T) {
	got := ParseCommandStats("# Commandstats\r\ncmdstat_evalsha:calls=12,usec=340,usec_per_call=28.33,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_config|resetstat:calls=1,usec=5,usec_per_call=5.00\r\nused_memory:123\r\n")
	want := map[string]CommandStat{"evalsha": {12, 340}, "config|resetstat": {1, 5}}
	if len(got) != len(want) || got["evalsha"] != want["evalsha"] || got["config|resetstat"] != want["config|resetstat"] {
		t.Errorf("ParseCommandStats = %v; want %v", got, want)
	}
}
