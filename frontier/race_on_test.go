//go:build race

package frontier_test

// raceOn: the tests run under the race detector, which makes miniredis's
// Lua (run in Go) about ten times slower.
const raceOn = true
