package testsite

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Pages that change, for recrawls (Config.Versioned). A page /p/N.html has
// a version, 0 when the site starts; its body says which, and its ETag
// ("N-vV") and Last-Modified (when it took that version) let a crawler ask
// whether it changed: If-None-Match, or without it If-Modified-Since, is
// answered 304 Not Modified with no body when the page is as the crawler
// last saw it. Its links never change, so Truth stays what it was.
//
// Change moves a fraction of the pages on by one version, at once. With
// Config.ChangeEvery, pages also change by themselves, at rates a
// revisiting crawler should learn: N%10 == 0 every period (hot), N%10 == 1
// every fourth (warm), any other N never (cold).

// versioned: the site's pages have validators and may change.
func (s *Site) versioned() bool { return s.cfg.Versioned || s.cfg.ChangeEvery > 0 }

// Version is the state of one page.
type Version struct {
	Version  int       `json:"version"`
	ETag     string    `json:"etag"`
	Modified time.Time `json:"modified"`
}

// changeClass is how many periods of ChangeEvery page n waits between its
// changes (0: it never changes by itself).
func changeClass(n int) int {
	switch n % 10 {
	case 0:
		return 1
	case 1:
		return 4
	}
	return 0
}

// version is page n of host hi as it is at now.
func (s *Site) version(hi, n int, now time.Time) Version {
	u := fmt.Sprintf("http://%s/p/%d.html", s.hosts[hi], n)
	v := Version{Modified: s.started}
	if k := changeClass(n); k > 0 && s.cfg.ChangeEvery > 0 {
		periods := int(now.Sub(s.started) / s.cfg.ChangeEvery)
		v.Version = periods / k
		v.Modified = s.started.Add(time.Duration(v.Version*k) * s.cfg.ChangeEvery)
	}
	s.mu.Lock()
	bump := s.bumped[u]
	s.mu.Unlock()
	v.Version += bump.Version
	if bump.Modified.After(v.Modified) {
		v.Modified = bump.Modified
	}
	v.ETag = fmt.Sprintf(`"%d-v%d"`, n, v.Version)
	return v
}

// Change moves a fraction (0 to 1) of every host's pages /p/N.html on by
// one version now, chosen at random but the same for the same calls on
// the same site, and returns their URLs, sorted.
func (s *Site) Change(fraction float64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes++
	rng := rand.New(rand.NewPCG(uint64(s.changes), uint64(len(s.hosts))))
	// A Last-Modified is whole seconds: each change takes a later one than
	// the last change's (or the start's), a second ahead of the clock if
	// need be, so that If-Modified-Since always tells the versions apart.
	at := time.Now().Truncate(time.Second)
	if !at.After(s.lastChange) {
		at = s.lastChange.Add(time.Second)
	}
	s.lastChange = at
	var changed []string
	for _, h := range s.hosts {
		for n := 0; n < s.cfg.Pages; n++ {
			if rng.Float64() >= fraction {
				continue
			}
			u := fmt.Sprintf("http://%s/p/%d.html", h, n)
			b := s.bumped[u]
			b.Version++
			b.Modified = at
			s.bumped[u] = b
			changed = append(changed, u)
		}
	}
	sort.Strings(changed)
	return changed
}

// Versions is every page /p/N.html's current version, by URL (/_truth?versions).
func (s *Site) Versions() map[string]Version {
	now := time.Now()
	out := make(map[string]Version, len(s.hosts)*s.cfg.Pages)
	for hi, h := range s.hosts {
		for n := 0; n < s.cfg.Pages; n++ {
			out[fmt.Sprintf("http://%s/p/%d.html", h, n)] = s.version(hi, n, now)
		}
	}
	return out
}

// notModified reports whether r asks about page version v and may be
// answered 304: If-None-Match naming its ETag (weakly compared, as RFC
// 9110 says for this header), or, without If-None-Match, If-Modified-Since
// no earlier than its Last-Modified.
func notModified(r *http.Request, v Version) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, tag := range strings.Split(inm, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == "*" || tag == v.ETag {
				return true
			}
		}
		return false
	}
	t, err := http.ParseTime(r.Header.Get("If-Modified-Since"))
	return err == nil && !v.Modified.Truncate(time.Second).After(t)
}

// serveChange is POST /_change?fraction=F: Change(F), answered with the
// URLs changed.
func (s *Site) serveChange(w http.ResponseWriter, r *http.Request) {
	f, err := strconv.ParseFloat(r.URL.Query().Get("fraction"), 64)
	switch {
	case r.Method != http.MethodPost:
		http.Error(w, "POST /_change?fraction=F", http.StatusMethodNotAllowed)
	case !s.cfg.Versioned && s.cfg.ChangeEvery == 0:
		http.Error(w, "the site's pages are not versioned (--versioned)", http.StatusConflict)
	case err != nil || f < 0 || f > 1:
		http.Error(w, "fraction: want a number from 0 to 1", http.StatusBadRequest)
	default:
		writeJSON(w, s.Change(f))
	}
}
