package fetch

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/ncruces/go-dns"
	"golang.org/x/net/proxy"
)

// Where a fetch connects: names resolved through a cache, and the SSRF
// guard on every connection to a target, direct or through a proxy.
//
// Direct, the guard runs on the address actually dialled (the dialer's
// Control), after DNS, so a name that resolves, or re-resolves (DNS
// rebinding), to a private address is refused. Through a proxy, the name
// is resolved here, every address is judged, and the proxy is asked for a
// tunnel to the address that was judged (HTTP CONNECT, or SOCKS5 to the
// address), never for the name: a proxy that resolved the name again could
// be answered otherwise. The request itself travels in the tunnel as it
// would directly (Host: the name; TLS verified for the name), so virtual
// hosts are served as without a proxy. A proxy must therefore allow
// CONNECT to port 80 for http:// URLs; one that refuses says so in the
// fetch's error.

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

// proxyKey is the context key of a request's proxy (a *url.URL): the
// Fetcher sets it where its Proxy names one, and the dialer reads it.
type proxyKey struct{}

// dialer makes a Fetcher's connections to targets.
type dialer struct {
	direct  *net.Dialer       // to a target: guarded by Control unless private addresses are allowed
	toProxy *net.Dialer       // to a proxy: the operator's choice, not judged
	res     *net.Resolver     // the names of targets reached through a proxy
	blocked func(net.IP) bool // nil: every address is allowed (AllowPrivate)
}

func newDialer(cfg Config) *dialer {
	res := resolver(cfg.DNS)
	dl := &dialer{
		direct:  &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second, Resolver: res},
		toProxy: &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second},
		res:     res,
	}
	if !cfg.AllowPrivate {
		dl.blocked = Blocked
		if cfg.blocked != nil {
			dl.blocked = cfg.blocked
		}
		dl.direct.Control = dl.guard
	}
	return dl
}

// dial connects to addr (a target's host:port), directly or through the
// proxy the request's context names.
func (dl *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if pu, _ := ctx.Value(proxyKey{}).(*url.URL); pu != nil {
		return dl.viaProxy(ctx, pu, network, addr)
	}
	return dl.direct.DialContext(ctx, network, addr)
}

// guard runs on the address actually dialled, after DNS resolution.
func (dl *dialer) guard(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || dl.blocked(ip) {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, host)
	}
	return nil
}

// judged resolves the host of addr and returns the address to connect
// to: the first the name has, once every one of them is allowed (a name
// with a private address among public ones is refused whole: which one a
// proxy would pick is not known).
func (dl *dialer) judged(ctx context.Context, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		as, err := dl.res.LookupIPAddr(ctx, host)
		if err != nil {
			return "", err
		}
		for _, a := range as {
			ips = append(ips, a.IP)
		}
	}
	if len(ips) == 0 {
		return "", &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	if dl.blocked != nil {
		for _, ip := range ips {
			if dl.blocked(ip) {
				if ip.String() == host {
					return "", fmt.Errorf("%w: %s", ErrBlockedAddress, host)
				}
				return "", fmt.Errorf("%w: %s is %s", ErrBlockedAddress, host, ip)
			}
		}
	}
	return net.JoinHostPort(ips[0].String(), port), nil
}

// viaProxy opens a tunnel through the proxy pu to the judged address of
// addr.
func (dl *dialer) viaProxy(ctx context.Context, pu *url.URL, network, addr string) (net.Conn, error) {
	target, err := dl.judged(ctx, addr)
	if err != nil {
		return nil, err
	}
	switch pu.Scheme {
	case "socks5", "socks5h":
		var auth *proxy.Auth
		if pu.User != nil {
			pass, _ := pu.User.Password()
			auth = &proxy.Auth{User: pu.User.Username(), Password: pass}
		}
		d, err := proxy.SOCKS5("tcp", proxyAddr(pu), auth, dl.toProxy)
		if err != nil {
			return nil, err
		}
		c, err := d.(proxy.ContextDialer).DialContext(ctx, network, target)
		if err != nil {
			return nil, fmt.Errorf("proxy %s: %w", pu.Redacted(), err)
		}
		return c, nil
	case "http", "https":
		return dl.connect(ctx, pu, target)
	}
	return nil, fmt.Errorf("%w: proxy scheme %q (want http, https or socks5)", ErrProxy, pu.Scheme)
}

// ErrProxy: the proxy would not carry a request (it refused the tunnel,
// or is of a kind not spoken here). The error says which and why.
var ErrProxy = errors.New("fetch: proxy")

// connect asks an HTTP proxy for a tunnel to target (ip:port).
func (dl *dialer) connect(ctx context.Context, pu *url.URL, target string) (net.Conn, error) {
	c, err := dl.toProxy.DialContext(ctx, "tcp", proxyAddr(pu))
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", pu.Redacted(), err)
	}
	if pu.Scheme == "https" {
		tc := tls.Client(c, &tls.Config{ServerName: pu.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("proxy %s: %w", pu.Redacted(), err)
		}
		c = tc
	}
	if until, ok := ctx.Deadline(); ok {
		c.SetDeadline(until)
	} else {
		c.SetDeadline(time.Now().Add(dl.toProxy.Timeout + time.Second))
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	if pu.User != nil {
		pass, _ := pu.User.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(pu.User.Username()+":"+pass)))
	}
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("proxy %s: %w", pu.Redacted(), err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("proxy %s: reading its answer to CONNECT %s: %w", pu.Redacted(), target, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("%w %s refused CONNECT %s: %s (a proxy must allow CONNECT to the target's port, 80 too for http:// URLs)", ErrProxy, pu.Redacted(), target, resp.Status)
	}
	c.SetDeadline(time.Time{})
	if br.Buffered() > 0 { // the target spoke first, inside the tunnel
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// bufferedConn reads what the reader kept before the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// proxyAddr is a proxy URL's host:port, with the scheme's port where none
// is given.
func proxyAddr(pu *url.URL) string {
	if port := pu.Port(); port != "" {
		return pu.Host
	}
	port := map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[pu.Scheme]
	return net.JoinHostPort(pu.Hostname(), port)
}

// Blocked reports whether the SSRF guard refuses ip: every range of the
// IANA special-purpose address registries (IPv4 and IPv6, as of 2026)
// that is not globally reachable, multicast and broadcast; an IPv4
// address carried in an IPv6 one (IPv4-mapped ::ffff:0:0/96, NAT64's
// 64:ff9b::/96, 6to4's 2002::/16) is judged by the IPv4 rules, since
// that is where a connection to it goes.
func Blocked(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return true
	}
	return blockedAddr(a.Unmap())
}

func blockedAddr(a netip.Addr) bool {
	if a.Is6() {
		switch b := a.As16(); {
		case nat64.Contains(a):
			return blockedAddr(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(a):
			return blockedAddr(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	if a.IsMulticast() {
		return true
	}
	for _, p := range reachable {
		if p.Contains(a) {
			return false
		}
	}
	for _, p := range unreachable {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	// unreachable: the registries' entries whose "Globally Reachable" is
	// False (or N/A, for the deprecated and the tunnelling ones), and the
	// ranges reserved beside them. reachable: the entries inside those
	// that are globally reachable (anycast services, AS112, AMT, ORCHIDv2,
	// DRIP), checked first.
	unreachable = prefixes(
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared address space (carrier-grade NAT)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link local
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation (TEST-NET-1)
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation (TEST-NET-2)
		"203.0.113.0/24",  // documentation (TEST-NET-3)
		"240.0.0.0/4",     // reserved, and the limited broadcast address
		"::/96",           // unspecified, loopback, IPv4-compatible (deprecated)
		"64:ff9b:1::/48",  // local-use IPv4/IPv6 translation
		"100::/64",        // discard-only
		"100:0:0:1::/64",  // dummy prefix
		"2001::/23",       // IETF protocol assignments (Teredo among them)
		"2001:db8::/32",   // documentation
		"3fff::/20",       // documentation
		"5f00::/16",       // segment routing (SRv6) SIDs
		"fc00::/7",        // unique local
		"fe80::/10",       // link local
		"fec0::/10",       // site local (deprecated)
	)
	reachable = prefixes(
		"192.0.0.9/32", "192.0.0.10/32", // PCP and TURN anycast
		"2001:1::1/128", "2001:1::2/128", "2001:1::3/128", // PCP, TURN, DNS-SD SRP anycast
		"2001:3::/32",     // AMT
		"2001:4:112::/48", // AS112-v6
		"2001:20::/28",    // ORCHIDv2
		"2001:30::/28",    // DRIP
	)
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}
