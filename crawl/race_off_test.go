//go:build !race

package crawl

const raceOn = false
