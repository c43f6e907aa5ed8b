package crawl

import (
	"errors"

	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/redisconn"
)

// The crawl's errors, in one place. Those the frontier also returns are
// the frontier's own, so that errors.Is answers the same whichever
// package an error came through.
var (
	// ErrNoCrawl: no crawl of that name exists in Redis.
	ErrNoCrawl = settings.ErrNoCrawl

	// ErrGone: the crawl a worker was working on disappeared from Redis. It
	// is frontier.ErrGone, which the scripts' refusals are: one sentinel, so
	// errors.Is answers the same whichever package an error came through.
	ErrGone = frontier.ErrGone

	// ErrName: a crawl name outside the safe alphabet.
	ErrName = frontier.ErrName

	// ErrSettings: settings that cannot run a crawl.
	ErrSettings = settings.ErrSettings

	// ErrConflict: the crawl exists with other settings.
	ErrConflict = settings.ErrConflict

	// ErrOptions: options a worker cannot run with.
	ErrOptions = errors.New("crawl: invalid worker options")

	// ErrIDInUse: another live worker of the crawl has this worker's id
	// (frontier.ErrIDInUse: the registry refused it).
	ErrIDInUse = frontier.ErrIDInUse

	// ErrEvictingRedis: Redis may evict keys (maxmemory set, a policy other
	// than noeviction).
	ErrEvictingRedis = redisconn.ErrEvicting

	// ErrWorkersAlive: reset was asked of a crawl that workers are working on.
	ErrWorkersAlive = errors.New("crawl: workers are alive")
)
