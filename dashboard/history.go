package dashboard

import (
	"math"
	"time"
)

// HistoryEvery is how often a server samples the crawl's pages counter
// while no page is open (Dashboard.Run), and HistoryKept how far back the
// chart goes.
const (
	HistoryEvery = 2 * time.Second
	HistoryKept  = 10 * time.Minute
)

// rateWindow is the span pages/s is measured over, as status measures it.
const rateWindow = 10 * time.Second

// history is the pages counter as this server saw it, oldest first.
type history struct {
	at    []time.Time
	pages []int64
}

func (h *history) add(at time.Time, pages int64) {
	if n := len(h.at); n > 0 && pages < h.pages[n-1] { // the crawl was reset and seeded again
		h.at, h.pages = h.at[:0], h.pages[:0]
	}
	h.at, h.pages = append(h.at, at), append(h.pages, pages)
	drop := 0
	for drop < len(h.at) && at.Sub(h.at[drop]) > HistoryKept {
		drop++
	}
	h.at, h.pages = h.at[drop:], h.pages[drop:]
}

// rateAt is pages/s over the rateWindow that ends at sample i: NaN when
// the samples in it span less than two seconds.
func (h *history) rateAt(i int) float64 {
	j := i
	for j > 0 && h.at[i].Sub(h.at[j-1]) <= rateWindow {
		j--
	}
	dt := h.at[i].Sub(h.at[j])
	if dt < 2*time.Second {
		return math.NaN()
	}
	return float64(h.pages[i]-h.pages[j]) / dt.Seconds()
}

// rate is pages/s now, by the newest sample (NaN: too few yet).
func (h *history) rate() float64 {
	if len(h.at) == 0 {
		return math.NaN()
	}
	return h.rateAt(len(h.at) - 1)
}

// maxPoints bounds the history a state carries.
const maxPoints = 300

// points is the chart: [unix ms, pages/s], oldest first, at most
// maxPoints.
func (h *history) points() [][2]float64 {
	step := max(1, (len(h.at)+maxPoints-1)/maxPoints)
	var out [][2]float64
	for i := len(h.at) - 1; i >= 0; i -= step {
		if r := h.rateAt(i); !math.IsNaN(r) {
			out = append(out, [2]float64{float64(h.at[i].UnixMilli()), r})
		}
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	return out
}
