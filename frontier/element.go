package frontier

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is the Go half of the queue's element encoding (queue.lua has
// the other half and the format): a new link costs Redis its path, not
// its host, scheme and parent again.

// entry is an item as the scripts keep it outside the queues (in flight,
// deferred, put back at the front): "host\nitem-json".
func entry(it Item) (string, error) {
	host, err := hostOf(it.URL)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(it)
	if err != nil {
		return "", err
	}
	return host + "\n" + string(b), nil
}

// hostOf is the host of an item's URL. A URL that is not valid UTF-8 is
// refused: items travel as JSON, whose encoders (Go's, and the scripts'
// cjson read back by Go) would give back U+FFFD for its bytes, another
// URL. (Canonical URLs are ASCII: parse.Canonicalize percent-encodes.)
func hostOf(raw string) (string, error) {
	if !utf8.ValidString(raw) {
		return "", fmt.Errorf("frontier: %q is not valid UTF-8", raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("frontier: %q is not an absolute URL", raw)
	}
	return u.Host, nil
}

// backEntry is an item as it goes to the back of its host's queue:
// "host\nparent\nelement" ("host level\n…" for a compact element of
// another priority than 0, which its level's list holds), element compact ('s'/'h' depth ' ' rest) for a
// plain page link of http(s)://host — nearly every link — and the item's
// JSON otherwise (a retry's attempts and errors, a sitemap, another
// scheme, a URL with user info), parent then empty.
func backEntry(it Item) (string, error) {
	host, err := hostOf(it.URL)
	if err != nil {
		return "", err
	}
	if !utf8.ValidString(it.Parent) {
		return "", fmt.Errorf("frontier: the parent of %q, %q, is not valid UTF-8", it.URL, it.Parent)
	}
	if it.Priority < MinPriority || it.Priority > MaxPriority {
		return "", fmt.Errorf("frontier: %q has priority %d: want %d to %d", it.URL, it.Priority, MinPriority, MaxPriority)
	}
	if el, ok := compact(it, host); ok {
		if it.Priority != 0 { // the level after the host: the element goes to that level's list, compact
			return host + " " + strconv.Itoa(it.Priority) + "\n" + it.Parent + "\n" + el, nil
		}
		return host + "\n" + it.Parent + "\n" + el, nil
	}
	b, err := json.Marshal(it)
	if err != nil {
		return "", err
	}
	return host + "\n\n" + string(b), nil
}

// compact is the element of it, when it has one.
func compact(it Item, host string) (string, bool) {
	if it.Kind != "" || it.Attempts != 0 || len(it.Errors) > 0 || it.Err != "" || it.Depth < 0 ||
		strings.ContainsAny(it.Parent, "\n") {
		return "", false
	}
	var scheme byte
	rest, ok := strings.CutPrefix(it.URL, "https://"+host)
	if ok {
		scheme = 's'
	} else if rest, ok = strings.CutPrefix(it.URL, "http://"+host); ok {
		scheme = 'h'
	} else {
		return "", false
	}
	if rest != "" && rest[0] != '/' && rest[0] != '?' {
		return "", false // "http://host" + ":8080/…" is another host; the parser says so, this makes sure
	}
	b := make([]byte, 0, 4+len(rest))
	b = append(b, scheme)
	b = strconv.AppendInt(b, int64(it.Depth), 10)
	b = append(b, ' ')
	return string(append(b, rest...)), true
}
