package parse

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// ScopeMode says which hosts a crawl may enter.
type ScopeMode string

const (
	ScopeHost   ScopeMode = "host"   // exactly the seeds' hosts
	ScopeDomain ScopeMode = "domain" // the seeds' registrable domains (public-suffix aware)
	ScopeAny    ScopeMode = "any"    // everywhere
)

// ParseScopeMode reads "host", "domain" or "any".
func ParseScopeMode(s string) (ScopeMode, error) {
	switch m := ScopeMode(strings.ToLower(s)); m {
	case ScopeHost, ScopeDomain, ScopeAny:
		return m, nil
	}
	return "", fmt.Errorf("parse: scope %q: want host, domain or any", s)
}

// Scope decides whether a canonical URL is inside the crawl.
type Scope struct {
	Mode  ScopeMode
	allow map[string]bool
}

// NewScope builds a scope from the seeds' hosts (as they appear in canonical URLs).
func NewScope(mode ScopeMode, seedHosts []string) *Scope {
	s := &Scope{Mode: mode, allow: map[string]bool{}}
	for _, h := range seedHosts {
		s.allow[s.key(h)] = true
	}
	return s
}

func (s *Scope) key(host string) string {
	if s.Mode != ScopeDomain {
		return host
	}
	h := host
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(h); err == nil {
		return d
	}
	return h
}

// Allows reports whether u is in scope.
func (s *Scope) Allows(u *url.URL) bool {
	return s.Mode == ScopeAny || s.allow[s.key(u.Host)]
}
