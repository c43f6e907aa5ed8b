// Package admin holds what a person does to a running crawl from outside
// its workers: change its live settings (SetSettings, `crawler set`),
// pause and resume it (Pause, Resume), give a host rules of its own or
// block it (ChangeHost, `crawler host`), read its records (Export,
// ExportGroup, `crawler export`) and remove it (Reset). Each reads the
// crawl's settings from Redis, acts through the frontier in one step, and
// tells the workers and the crawl's event log what changed; none needs a
// worker running.
package admin
