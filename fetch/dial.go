package fetch

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/ncruces/go-dns"
)

// Where a fetch connects: names resolved through a cache, and the SSRF
// guard on every address dialled.

// resolver is a caching resolver (ncruces/go-dns: the answers' TTLs, a
// bound on names) over the system's DNS servers, or over server.
func resolver(server string) *net.Resolver {
	parent := &net.Resolver{PreferGo: true}
	if server != "" {
		parent.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		}
	}
	return dns.NewCachingResolver(parent, dns.MaxCacheEntries(DNSCacheNames), dns.MaxCacheTTL(time.Hour))
}

// guardTarget is the SSRF guard for a request through a proxy: the
// target's addresses, looked up here, must all be allowed.
func guardTarget(ctx context.Context, host string) error {
	if ip := net.ParseIP(host); ip != nil {
		if Blocked(ip) {
			return fmt.Errorf("%w: %s", ErrBlockedAddress, host)
		}
		return nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if Blocked(a.IP) {
			return fmt.Errorf("%w: %s is %s", ErrBlockedAddress, host, a.IP)
		}
	}
	return nil
}

// guard runs after DNS resolution, on the address actually dialled, so a
// name that resolves (or re-resolves: DNS rebinding) to a private address
// is refused too.
func guard(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || Blocked(ip) {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, host)
	}
	return nil
}

// Blocked reports whether the SSRF guard refuses ip.
func Blocked(ip net.IP) bool {
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() ||
		(ip.To4() != nil && ip.To4()[0] == 100 && ip.To4()[1]&0xc0 == 64) // 100.64/10, carrier-grade NAT
}
