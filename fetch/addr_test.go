package fetch

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/testsite"
)

// An address comes from the DNS server asked, with its TTL, port or not;
// an IP literal is its own; a name the server does not know, and the
// system cannot find either, is an error that names it.
func TestAddresserAsksTheDNSForTheAddressAndItsTTL(t *testing.T) {
	d, err := testsite.StartDNS("127.0.0.1:0", []string{"a.test", "b.test"}, net.ParseIP("127.0.0.9"), 300)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := NewAddresser(d.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for host, want := range map[string]string{"a.test": "127.0.0.9 5m0s", "b.test:8080": "127.0.0.9 5m0s",
		"127.0.0.3:80": "127.0.0.3 1h0m0s", "[::1]:80": "::1 1h0m0s"} {
		addr, ttl, err := a.Address(ctx, host)
		if err != nil || addr+" "+ttl.String() != want {
			t.Errorf("Address(%s) = %s %v, %v; want %s", host, addr, ttl, err, want)
		}
	}
	if _, _, err := a.Address(ctx, "nowhere.invalid"); err == nil || !strings.Contains(err.Error(), "nowhere.invalid") {
		t.Errorf("an unknown name: %v; want an error naming it", err)
	}
}
