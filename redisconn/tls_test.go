package redisconn

import (
	"testing"

	"github.com/redcrawl/crawler/internal/redistest"
)

// wantsClientCert tells a server that refuses a client without a
// certificate from one that does not, by the alert it sends after the
// handshake: the hint for a missing --redis-cert must not hang on whether
// go-redis's first write met that alert or a reset connection.
func TestWantsClientCert(t *testing.T) {
	for _, want := range []bool{true, false} {
		s := redistest.RealTLS(t, want)
		u, err := Parse("rediss://" + s.TLSAddr + "/0")
		if err != nil {
			t.Fatal(err)
		}
		if err := u.UseTLSFiles(s.CAFile, "", ""); err != nil {
			t.Fatal(err)
		}
		if got := wantsClientCert(u.opt.Addr, u.opt.TLSConfig); got != want {
			t.Errorf("a server that asks for a client certificate: %v; wantsClientCert says %v", want, got)
		}
	}
}
