package status

import (
	"fmt"
	"strings"
)

// busiestAddresses is how many addresses status lists.
const busiestAddresses = 5

// writeAddresses writes the busiest server addresses, with their hosts.
func (st *Status) writeAddresses(b *strings.Builder) {
	if len(st.Addresses) == 0 {
		return
	}
	var parts []string
	for _, a := range st.Addresses {
		hosts := strings.Join(a.Named, " ")
		if more := a.Hosts - int64(len(a.Named)); more > 0 {
			hosts += fmt.Sprintf(" and %d more", more)
		}
		noun := "hosts"
		if a.Hosts == 1 {
			noun = "host"
		}
		parts = append(parts, fmt.Sprintf("%s (%d tokens given; %d %s: %s)", a.Addr, a.Tokens, a.Hosts, noun, hosts))
	}
	fmt.Fprintf(b, "  servers     busiest addresses, each held to the crawl's rate (--politeness ip), by the tokens their buckets gave: %s\n", strings.Join(parts, ", "))
}
