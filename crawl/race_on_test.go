//go:build race

package crawl

// raceOn: the tests run under the race detector, which makes the
// simulation's miniredis Lua ten times slower.
const raceOn = true
