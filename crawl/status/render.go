package status

import (
	"context"
	"fmt"
	"strings"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/rendering"
)

// ReadRender is status's word on rendering (the dashboard's too), for a
// crawl whose settings s render (Renders), with the workers alive.
func ReadRender(ctx context.Context, fr *frontier.Frontier, s settings.Settings, workers []string) (*RenderStatus, error) {
	lanes, err := fr.Render.Lanes(ctx)
	if err != nil {
		return nil, err
	}
	rs := &RenderStatus{Mode: s.Render, LaneQueued: lanes.Ready[frontier.LaneRender], Hosts: lanes.RenderHosts()}
	if s.Render == settings.RenderAuto {
		learned, waiting, err := fr.Render.LearnedHosts(ctx)
		if err != nil {
			return nil, err
		}
		rs.Learned, rs.SamplesWaiting = map[string]string{}, waiting
		for h, l := range learned {
			if host, prefix, ok := strings.Cut(h, " "); ok {
				if rs.Prefixes == nil {
					rs.Prefixes = map[string]string{}
				}
				rs.Prefixes[host+prefix] = l.Verdict
			} else {
				rs.Learned[h] = l.Verdict
			}
		}
	}
	for _, w := range workers {
		if strings.HasSuffix(w, crawl.RenderWorkerSuffix) {
			rs.Workers++
		}
	}
	rs.Line = rs.line()
	return rs, nil
}

// line is the status line: the lane, what was learnt, the render workers
// (and, without one, that the lane waits for one).
func (rs *RenderStatus) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s; render lane: %d hosts queued", rs.Mode, rs.LaneQueued)
	if len(rs.Hosts) > 0 {
		fmt.Fprintf(&b, ", %d hosts put there", len(rs.Hosts))
	}
	if rs.Learned != nil {
		n := map[string]int{}
		for _, v := range rs.Learned {
			n[v]++
		}
		fmt.Fprintf(&b, "; learnt: %d hosts need a browser, %d do not, %d learning, %d samples waiting",
			n[rendering.VerdictRender], n[rendering.VerdictPlain], n[rendering.VerdictLearning], rs.SamplesWaiting)
		plain := 0
		for _, v := range rs.Prefixes {
			if v == rendering.VerdictPlain {
				plain++
			}
		}
		if plain > 0 {
			fmt.Fprintf(&b, "; %d path prefixes of theirs fetched plainly", plain)
		}
	}
	fmt.Fprintf(&b, "; %d render workers", rs.Workers)
	if rs.Workers == 0 && (rs.LaneQueued > 0 || rs.SamplesWaiting > 0) {
		b.WriteString(" — the render lane waits for one: start 'crawler work --render N'")
	}
	return b.String()
}
