package fetch

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryAfter reads Retry-After as seconds or an HTTP date (RFC 9110
// §10.2.3), capped at one hour.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if digits(v) {
		// Compared before it is multiplied: seconds past the cap (or
		// past int64 altogether) are the cap, never an overflow to 0.
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n >= uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(n) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return min(max(t.Sub(now), 0), maxRetryAfter) // Sub saturates: a date however far is the cap
}

// maxRetryAfter is the longest a Retry-After pauses a host.
const maxRetryAfter = time.Hour

// digits: s is delay-seconds (RFC 9110: one digit or more, nothing else).
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
