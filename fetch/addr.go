package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"
)

// Addresser resolves a host name to the server address politeness per
// address counts its requests under (seed --politeness ip), with the TTL
// of the answer, which the crawl keeps in Redis that long for every
// worker. It asks the DNS server the crawl's fetches ask (Config.DNS), or
// the system's (/etc/resolv.conf), with miekg/dns: the standard library's
// resolver does not say how long an answer holds. A name the DNS does not
// answer for (one of /etc/hosts) is looked up as the fetches would, and
// kept for NoTTL.
type Addresser struct {
	servers []string
	client  *dns.Client
}

// NoTTL is how long an address found without a TTL is kept.
const NoTTL = time.Minute

// NewAddresser asks server ("host:port"), or the servers /etc/resolv.conf
// names when it is "".
func NewAddresser(server string) *Addresser {
	a := &Addresser{client: &dns.Client{Timeout: 5 * time.Second}}
	if server != "" {
		a.servers = []string{server}
	} else if cc, err := dns.ClientConfigFromFile("/etc/resolv.conf"); err == nil {
		for _, s := range cc.Servers {
			a.servers = append(a.servers, net.JoinHostPort(s, cc.Port))
		}
	}
	return a
}

// Address is host's (a name, with or without a port) address: the lowest
// of the name's IPv4 addresses, or of its IPv6 ones when it has none, so
// that every worker names a server alike, and how long that holds.
func (a *Addresser) Address(ctx context.Context, host string) (string, time.Duration, error) {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		return ip.Unmap().String(), time.Hour, nil
	}
	var errs []error
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		addr, ttl, err := a.ask(ctx, name, qt)
		if err == nil {
			return addr, ttl, nil
		}
		errs = append(errs, err)
	}
	// Not in the DNS (or no server answers): as the fetch would find it.
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	if err != nil || len(ips) == 0 {
		return "", 0, fmt.Errorf("address of %s: %w", name, errors.Join(append(errs, err)...))
	}
	return lowest(ips).String(), NoTTL, nil
}

// ask sends one query of type qt for name to each server in turn, and
// returns the lowest address of the answer and its least TTL (CNAMEs on
// the way included).
func (a *Addresser) ask(ctx context.Context, name string, qt uint16) (string, time.Duration, error) {
	if len(a.servers) == 0 {
		return "", 0, errors.New("no DNS server")
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qt)
	var last error
	for _, s := range a.servers {
		r, _, err := a.client.ExchangeContext(ctx, m, s)
		if err != nil {
			last = err
			continue
		}
		if r.Rcode != dns.RcodeSuccess {
			return "", 0, fmt.Errorf("%s: %s", dns.TypeToString[qt], dns.RcodeToString[r.Rcode])
		}
		var ips []netip.Addr
		ttl := uint32(0)
		for i, rr := range r.Answer {
			if i == 0 || rr.Header().Ttl < ttl {
				ttl = rr.Header().Ttl
			}
			switch v := rr.(type) {
			case *dns.A:
				if ip, ok := netip.AddrFromSlice(v.A); ok {
					ips = append(ips, ip.Unmap())
				}
			case *dns.AAAA:
				if ip, ok := netip.AddrFromSlice(v.AAAA); ok {
					ips = append(ips, ip)
				}
			}
		}
		if len(ips) == 0 {
			return "", 0, fmt.Errorf("%s: no address", dns.TypeToString[qt])
		}
		return lowest(ips).String(), time.Duration(ttl) * time.Second, nil
	}
	return "", 0, last
}

func lowest(ips []netip.Addr) netip.Addr {
	for i := range ips {
		ips[i] = ips[i].Unmap()
	}
	return slices.MinFunc(ips, func(x, y netip.Addr) int { return x.Compare(y) })
}
