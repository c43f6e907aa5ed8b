package wacz

import "fmt"

// revisits are the revisit records an index's lines point at, and the
// responses they may refer to (key and 14-digit timestamp).
type revisits struct {
	responses map[string]bool
	targets   []revisitTarget
}

type revisitTarget struct{ of, to, at string }

// resolve checks that every revisit refers to a response of the index,
// and returns how many there are.
func (rv *revisits) resolve() (int, error) {
	for _, t := range rv.targets {
		if !rv.responses[t.to] {
			return 0, fmt.Errorf("wacz: the revisit record of %s refers to %s at %s, of which the package has no response", t.of, clip(t.to), t.at)
		}
	}
	return len(rv.targets), nil
}
