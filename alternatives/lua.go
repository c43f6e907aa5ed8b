package alternatives

import (
	"embed"

	"github.com/redcrawl/crawler/internal/script"
)

// The alternatives' scripts, one a file.
var (
	//go:embed *.lua
	luaFiles embed.FS
	lua      = script.NewLib("alternatives", luaFiles)

	fixedWindowScript = lua.Script("fixed_window")
	slidingLogScript  = lua.Script("sliding_log")
	leakyMeterScript  = lua.Script("leaky_meter")
	leakyQueueScript  = lua.Script("leaky_queue")
	redlockAcquire    = lua.Script("redlock_acquire")
	redlockRelease    = lua.Script("redlock_release")
	fenceEach         = lua.Script("fence_each")
)
