package rendering

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// The crawl's shared cache of rendered pages' subresources (a script, a
// stylesheet, a JSON answer), so that one is fetched once a crawl however
// many render workers run: keys in the first shard, each holding one
// answer of at most SubMaxBody bytes for SubKeep. A URL has one slot (by
// its hash) among those of its kind: a newer answer of another URL in it
// takes the older's place. The kinds have slots of their own, so that the
// stream of answers one page each asks for (its XHR and fetch data) never
// takes the place of a script or stylesheet every page of a site shares.
// Its memory is bounded by construction, (SubAssetSlots + SubDataSlots) ×
// SubMaxBody (64 MiB) at most, whatever the crawl renders.
const (
	SubAssetSlots = 192
	SubDataSlots  = 64
	SubMaxBody    = 256 << 10
	SubKeep       = time.Hour
)

// SubKind is what a subresource is to the pages that ask for it.
type SubKind uint8

const (
	// SubAsset is a script, stylesheet, font or image: many of a site's
	// pages ask for the same one.
	SubAsset SubKind = iota
	// SubData is anything else (an XHR or fetch answer): one page's.
	SubData
)

// Sub is a cached subresource's answer.
type Sub struct {
	Status      int
	ContentType string
	Location    string
	Body        []byte
}

// subKey is url's slot among its kind's.
func subKey(k keyspace.Keys, url string, kind SubKind) string {
	h := fnv.New32a()
	h.Write([]byte(url))
	if kind == SubData {
		return k.Subs + "d" + strconv.Itoa(int(h.Sum32()%SubDataSlots))
	}
	return k.Subs + "a" + strconv.Itoa(int(h.Sum32()%SubAssetSlots))
}

// GetSub is url's answer of that kind in the shared cache; ok is false
// when its slot holds none, or another URL's.
func (f Shared) GetSub(ctx context.Context, url string, kind SubKind) (Sub, bool, error) {
	b, err := f.C.Get(ctx, subKey(f.Keys[0], url, kind)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return Sub{}, false, nil
	case err != nil:
		return Sub{}, false, fmt.Errorf("frontier: subresource cache: %w", err)
	}
	// "url \n status \n content-type \n location \n" body
	var head [4][]byte
	for i := range head {
		j := bytes.IndexByte(b, '\n')
		if j < 0 {
			return Sub{}, false, nil // not one of ours: a miss
		}
		head[i], b = b[:j], b[j+1:]
	}
	status, err := strconv.Atoi(string(head[1]))
	if string(head[0]) != url || err != nil {
		return Sub{}, false, nil
	}
	return Sub{Status: status, ContentType: string(head[2]), Location: string(head[3]), Body: b}, true, nil
}

// PutSub keeps url's answer in the shared cache (a body past SubMaxBody,
// or a name with a newline, is not kept). It reports whether it was.
func (f Shared) PutSub(ctx context.Context, url string, kind SubKind, s Sub) (bool, error) {
	if len(s.Body) > SubMaxBody || bytes.ContainsAny([]byte(url+s.ContentType+s.Location), "\n") {
		return false, nil
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n%d\n%s\n%s\n", url, s.Status, s.ContentType, s.Location)
	b.Write(s.Body)
	if err := f.C.Set(ctx, subKey(f.Keys[0], url, kind), b.Bytes(), SubKeep).Err(); err != nil {
		return false, fmt.Errorf("frontier: subresource cache: %w", err)
	}
	return true, nil
}
