package settings

import (
	"errors"
	"fmt"
	"time"
)

// defaultFirstRevisit is the first interval of a crawl without --revisit:
// what `crawler recrawl` without --all counts as due.
const defaultFirstRevisit = 24 * time.Hour

// RevisitBounds are the schedule's first interval and its bounds.
func (s Settings) RevisitBounds() (first, lo, hi time.Duration) {
	first = s.Revisit
	if first <= 0 {
		first = defaultFirstRevisit
	}
	lo, hi = s.RevisitMin, s.RevisitMax
	if lo <= 0 {
		lo = max(first/10, time.Second)
	}
	if hi <= 0 {
		hi = first * 30
	}
	return min(max(first, lo), hi), lo, hi
}

func (s Settings) checkRevisit() error {
	if s.Revisit < 0 || s.RevisitMin < 0 || s.RevisitMax < 0 {
		return errors.New("--revisit, --revisit-min and --revisit-max cannot be negative")
	}
	if s.Revisit > 0 && !s.KeepVisits {
		return errors.New("--revisit needs --keep-visits: a continuous crawl refetches by what each fetch kept")
	}
	if s.Revisit > 0 && s.MaxPages > 0 {
		return errors.New("--revisit with --max-pages: a continuous crawl never ends, so a page budget would only stop it for good; drop one")
	}
	if s.Revisit > 0 && s.Revisit < time.Second {
		return fmt.Errorf("--revisit %v: want at least 1s (0: a crawl that ends)", s.Revisit)
	}
	if _, lo, hi := s.RevisitBounds(); lo < time.Second || lo > hi {
		return fmt.Errorf("--revisit-min %v and --revisit-max %v: want a minimum of at least 1s, and no more than the maximum", lo, hi)
	}
	return nil
}
