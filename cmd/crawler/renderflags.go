package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/render"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

// renderTabsFlag is work's flag for a render worker's tabs; crawl, whose
// --render is seed's (which pages), calls it --render-tabs.
const renderTabsFlag = "render"

// crawlWorkFlags are work's flags as crawl takes them beside seed's.
func crawlWorkFlags() []cli.Flag {
	flags := workFlags()
	for i, f := range flags {
		if f.Names()[0] == renderTabsFlag {
			tabs := *f.(*cli.IntFlag)
			tabs.Name, tabs.EnvVars = "render-tabs", []string{"CRAWLER_RENDER_TABS"}
			flags[i] = &tabs
		}
	}
	return flags
}

// renderTabs is the render worker's tabs the command asks for (0: none).
func renderTabs(c *cli.Context) int {
	if c.Command.Name == "crawl" {
		return c.Int("render-tabs")
	}
	return c.Int(renderTabsFlag)
}

// renderWorker is the render worker --render N asks for, beside the plain
// one (o), under the same name and crawl.RenderWorkerSuffix; nil without.
func renderWorker(ctx context.Context, c *cli.Context, rdb redis.UniversalClient, o crawl.Options) (*crawl.Worker, error) {
	n := renderTabs(c)
	if n == 0 {
		return nil, nil
	}
	rss, _ := parseSize(c.String("render-max-rss"))               // checked by checkWorkFlags
	iso, _ := render.ParseIsolation(c.String("render-isolation")) // and this
	o.Render = &crawl.RenderOptions{Tabs: n, Exec: c.String("chromium"), PagesPerBrowser: c.Int("render-pages"), MaxRSS: rss,
		PageTimeout: c.Duration("render-timeout"), Isolation: iso}
	rw, err := crawl.NewWorker(ctx, rdb, c.String("crawl"), o)
	if err != nil {
		return nil, err
	}
	o.Log.Info("render worker started", "worker", o.ID+crawl.RenderWorkerSuffix, "tabs", n, "isolation", rw.RenderIsolation())
	return rw, nil
}

// runBoth runs the plain worker and the render worker (nil: none) until
// both end; one that fails stops the other.
func runBoth(ctx context.Context, w, rw *crawl.Worker, logger *slog.Logger) error {
	if rw == nil {
		return w.Run(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rerr := make(chan error, 1)
	go func() {
		err := rw.Run(ctx)
		if err != nil {
			cancel()
		}
		logger.Info("render worker exits", "rendered", rw.Counters.Rendered.Load(), "subresources", rw.Counters.Subresources.Load(),
			"subresource_cache_hits", rw.Counters.SubresourceHits.Load(), "refused_out_of_scope", rw.Counters.SubresourcesRefused.Load(),
			"browser_peak_mib", rw.BrowserPeak()>>20, "render_redis_calls", rw.Counters.RenderCalls.Load())
		rerr <- err
	}()
	err := w.Run(ctx)
	if err != nil {
		cancel()
	}
	return errors.Join(err, <-rerr)
}
