package crawl_test

import (
	"testing"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redis/go-redis/v9"
)

// frontierOf is crawl name's frontier of shards shards, to read it.
func frontierOf(t *testing.T, c redis.UniversalClient, name string, shards int) *frontier.Frontier {
	t.Helper()
	fr, err := frontier.New(c, name, frontier.Options{Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	return fr
}
