package settings

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Rules decide which discovered URLs a crawl follows, beyond its scope and
// depth: the user's --allow and --deny filters, and the defences against
// crawler traps (a path that repeats itself, that goes too deep, a query
// with too many parameters, a URL too long). Every URL refused has a
// reason, and the reasons are counted (status shows them): none is
// dropped in silence.
type Rules struct {
	allow, deny                            []*regexp.Regexp
	maxRepeat, maxDepth, maxParams, maxLen int
}

// Reasons a discovered URL is not followed.
const (
	SkipDenied      = "denied"       // matches a --deny filter
	SkipNotAllowed  = "not_allowed"  // matches none of the --allow filters
	SkipPathRepeat  = "path_repeat"  // a path segment repeated more than --max-path-repeat times
	SkipPathDepth   = "path_depth"   // more than --max-path-depth segments
	SkipQueryParams = "query_params" // more than --max-query-params parameters
	SkipURLLength   = "url_length"   // longer than --max-url-length
)

// CompilePatterns compiles RE2 patterns given by flag (named in errors).
func CompilePatterns(patterns []string, flag string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range patterns {
		if strings.Contains(p, "\n") {
			return nil, fmt.Errorf("%s %q: a pattern is one line", flag, p)
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %v", flag, p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// NewRules compiles the settings' filters and trap limits.
func NewRules(s Settings) (*Rules, error) {
	allow, err := CompilePatterns(s.Allow, "--allow")
	if err != nil {
		return nil, err
	}
	deny, err := CompilePatterns(s.Deny, "--deny")
	if err != nil {
		return nil, err
	}
	return &Rules{allow: allow, deny: deny, maxRepeat: s.MaxPathRepeat, maxDepth: s.MaxPathDepth,
		maxParams: s.MaxQueryParams, maxLen: s.MaxURLLength}, nil
}

// Skip says why the canonical URL u is not to be followed ("" to follow it).
func (r *Rules) Skip(u *url.URL, canonical string) string {
	for _, re := range r.deny {
		if re.MatchString(canonical) {
			return SkipDenied
		}
	}
	if len(r.allow) > 0 {
		allowed := false
		for _, re := range r.allow {
			if re.MatchString(canonical) {
				allowed = true
				break
			}
		}
		if !allowed {
			return SkipNotAllowed
		}
	}
	if len(canonical) > r.maxLen {
		return SkipURLLength
	}
	if u.RawQuery != "" && strings.Count(u.RawQuery, "&")+1 > r.maxParams {
		return SkipQueryParams
	}
	segments := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	if len(segments) > r.maxDepth {
		return SkipPathDepth
	}
	seen := make(map[string]int, len(segments))
	for _, seg := range segments {
		if seg == "" {
			continue
		}
		if seen[seg]++; seen[seg] > r.maxRepeat {
			return SkipPathRepeat
		}
	}
	return ""
}

// RenderRules are the render settings, compiled: the mode (Render) and
// the --render-match patterns.
type RenderRules struct {
	Mode  string
	Match []*regexp.Regexp
}

// NewRenderRules compiles the render settings of s.
func NewRenderRules(s Settings) (*RenderRules, error) {
	m, err := CompilePatterns(s.RenderMatch, "--render-match")
	return &RenderRules{Mode: s.Render, Match: m}, err
}

// Matches: url matches a --render-match pattern.
func (r *RenderRules) Matches(url string) bool {
	for _, re := range r.Match {
		if re.MatchString(url) {
			return true
		}
	}
	return false
}
