//go:build !race

package rapidtest

// RaceOn: the tests run under the race detector.
const RaceOn = false
