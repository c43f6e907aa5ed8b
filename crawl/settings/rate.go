package settings

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FormatRate is a rate as a person reads it ("inf" for no limit).
func FormatRate(r float64) string {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// MinRate is the smallest rate a crawl or a host may have: one request a
// day. A slower one is no rate anyone means, and its bucket's times (a
// burst of MaxBurst at it is 2.7 years, 8.6e13 µs) stay below 1e14, past
// which Redis's cjson writes a number in exponent form. MaxBurst bounds a
// burst, for the same reason.
const (
	MinRate  = 1.0 / 86400
	MaxBurst = 1000
	// MaxHostConcurrency bounds --host-concurrency: a pop reads a capped
	// host's slots whole (frontier/queue/hostslots.lua).
	MaxHostConcurrency = 1000
)

// ParseRate reads a rate: a number of requests per second from MinRate
// (one a day: 0.0000116, or 1/86400) up, or "inf".
func ParseRate(s string) (float64, error) {
	if strings.EqualFold(s, "inf") {
		return math.Inf(1), nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if n, d, ok := strings.Cut(s, "/"); ok && err != nil { // 1/86400
		num, e1 := strconv.ParseFloat(n, 64)
		den, e2 := strconv.ParseFloat(d, 64)
		if e1 == nil && e2 == nil && den > 0 {
			r, err = num/den, nil
		}
	}
	if err != nil || !(r > 0) || math.IsInf(r, 0) {
		return 0, fmt.Errorf("rate %q: want a number of requests per second (1/86400, one a day, or more), or inf", s)
	}
	if r < MinRate*(1-1e-9) {
		return 0, fmt.Errorf("rate %q: below one request a day (1/86400 = %.3g requests/s), the slowest a crawl or a host may go", s, MinRate)
	}
	return r, nil
}
