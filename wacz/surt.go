package wacz

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// wwwPrefix is what SURTs leave out of a host: www, www2 …
var wwwPrefix = regexp.MustCompile(`^www\d*\.`)

// SURT is the sort-friendly form of an http(s) URL that CDXJ indexes are
// keyed and sorted by, as replay tools compute it to look a URL up:
// lowercased, the host's leading www. (or wwwN.) dropped, its labels
// reversed and joined by commas, the port kept, ")" before the path, the
// query's parameters sorted. Another URL is its own key, lowercased.
func SURT(raw string) string {
	lower := strings.ToLower(raw)
	u, err := url.Parse(lower)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return lower
	}
	host := wwwPrefix.ReplaceAllString(u.Hostname(), "")
	labels := strings.Split(host, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	var b strings.Builder
	b.WriteString(strings.Join(labels, ","))
	if p := u.Port(); p != "" && !(p == "80" && u.Scheme == "http") && !(p == "443" && u.Scheme == "https") {
		b.WriteString(":" + p)
	}
	b.WriteString(")")
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(path)
	if u.RawQuery != "" {
		args := strings.Split(u.RawQuery, "&")
		sort.Strings(args)
		b.WriteString("?" + strings.Join(args, "&"))
	}
	return b.String()
}
