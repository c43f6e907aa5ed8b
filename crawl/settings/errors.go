package settings

import "errors"

// The settings' errors (crawl's errors.go names them too: one sentinel
// each, so errors.Is answers the same whichever package an error came
// through).
var (
	// ErrNoCrawl: no crawl of that name exists in Redis.
	ErrNoCrawl = errors.New("crawl: no such crawl")
	// ErrSettings: settings that cannot run a crawl.
	ErrSettings = errors.New("crawl: invalid settings")
	// ErrConflict: the crawl exists with other settings.
	ErrConflict = errors.New("crawl: settings conflict with the existing crawl")
)
