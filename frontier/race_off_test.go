//go:build !race

package frontier_test

const raceOn = false
