package crawl

import (
	"context"
	"os"
	"time"

	"github.com/redcrawl/crawler/archive"
)

// closeOrphans closes the WARC files of dir that a worker killed with
// kill -9 left open (their records point at the names without ".open"):
// those of this worker's id (registered now, so no live process has it),
// and those no live worker of the crawl holds, that say they are part of
// this crawl and that no one wrote to for a lease (a worker whose leases
// lapsed archives nothing more). Each is cut back to its last whole
// exchange and renamed, and said in the log.
func (w *Worker) closeOrphans(ctx context.Context, cfg archive.Config) {
	orphans, err := archive.Orphans(cfg.Dir, cfg.Prefix)
	if err != nil || len(orphans) == 0 {
		if err != nil {
			w.log.Warn("looking for WARC files left open failed", "dir", cfg.Dir, "err", err)
		}
		return
	}
	alive := map[string]bool{}
	ids, err := w.fr.Registry.Workers(ctx)
	if err != nil {
		w.log.Warn("reading the live workers failed: only this worker's own WARC files left open are closed", "err", err)
	}
	for _, id := range ids {
		alive[archive.FileSafe(id)] = true
	}
	own := archive.FileSafe(w.opts.ID)
	for _, o := range orphans {
		if o.Worker != own {
			fi, err := os.Stat(o.Path)
			if err != nil || alive[o.Worker] || ids == nil || time.Since(fi.ModTime()) < w.opts.Lease || archive.PartOf(o.Path) != w.name {
				continue
			}
		}
		res, err := archive.Recover(o.Path)
		switch {
		case err != nil:
			w.log.Warn("closing a WARC file left open failed; it stays as it is", "file", o.Path, "err", err)
		case res.Path == "":
			w.log.Warn("a WARC file left open held no whole record: removed", "file", o.Path, "bytes", res.Dropped)
		default:
			w.log.Info("closed a WARC file left open by a worker that died: cut to its last whole exchange",
				"file", res.Path, "records", res.Records, "bytes", res.Kept, "dropped_bytes", res.Dropped, "writer", o.Worker)
		}
	}
}
