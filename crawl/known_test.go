package crawl

import (
	"fmt"
	"testing"
)

func TestKnownIsBounded(t *testing.T) {
	k := newKnown(100)
	for i := 0; i < 1000; i++ {
		k.add(fmt.Sprint(i))
	}
	if len(k.cur)+len(k.prev) > 100 {
		t.Fatalf("holds %d URLs, cap 100", len(k.cur)+len(k.prev))
	}
	if !k.has("999") || !k.has("950") || k.has("0") {
		t.Fatal("recent URLs must be kept, old ones dropped")
	}
}
