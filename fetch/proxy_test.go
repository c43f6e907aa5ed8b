package fetch

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/redcrawl/crawler/internal/testsite"
	"pgregory.net/rapid"
)

// testProxy is an HTTP proxy on loopback that speaks both ways a client
// may ask: CONNECT host:port (a tunnel) and an absolute-form GET. It
// resolves names by its own table, as a proxy with its own DNS would (the
// rebinding attacker's). It logs what it was asked for.
type testProxy struct {
	srv      *httptest.Server
	resolve  map[string]string // name -> IP, for the proxy's own lookups
	refuse   bool              // answer CONNECT with 403
	mu       sync.Mutex
	connects []string // CONNECT targets, as asked
	gets     []string // absolute-form request URLs
}

func startProxy(t *testing.T, resolve map[string]string) *testProxy {
	p := &testProxy{resolve: resolve}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *testProxy) url() *url.URL { u, _ := url.Parse(p.srv.URL); return u }

// addr is where the proxy itself would connect for host:port.
func (p *testProxy) addr(hostport string) string {
	host, port, _ := net.SplitHostPort(hostport)
	if ip, ok := p.resolve[host]; ok {
		host = ip
	}
	return net.JoinHostPort(host, port)
}

func (p *testProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if r.Method == http.MethodConnect {
		p.connects = append(p.connects, r.Host)
	} else {
		p.gets = append(p.gets, r.URL.String())
	}
	p.mu.Unlock()
	if r.Method != http.MethodConnect {
		port := r.URL.Port()
		if port == "" {
			port = "80"
		}
		out := r.Clone(context.Background())
		out.RequestURI = ""
		out.URL.Host = p.addr(net.JoinHostPort(r.URL.Hostname(), port))
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		return
	}
	if p.refuse {
		http.Error(w, "CONNECT to that port is not allowed", http.StatusForbidden)
		return
	}
	up, err := net.Dial("tcp", p.addr(r.Host))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	c, brw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		up.Close()
		return
	}
	brw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n")
	brw.Flush()
	go func() { io.Copy(up, brw); up.Close() }()
	io.Copy(c, up)
	c.Close()
}

func (p *testProxy) asked() (connects, gets []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.connects...), append([]string(nil), p.gets...)
}

// serveOn starts a server on addr that answers every request with body.
func serveOn(t *testing.T, addr, body string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l, nil
}

// twoServers: "public" on 127.0.0.2 and "private" on 127.0.0.1, on one port.
func twoServers(t *testing.T) (port string) {
	for range 20 {
		l, err := serveOn(t, "127.0.0.2:0", "public")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ = net.SplitHostPort(l.Addr().String())
		if _, err := serveOn(t, "127.0.0.1:"+port, "private"); err == nil {
			return port
		}
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return ""
}

// In these tests 127.0.0.2 stands for a public address, 127.0.0.1 for
// the private network: every server a test may reach is on loopback.
func onlyLocalhostBlocked(ip net.IP) bool { return ip.Equal(net.IPv4(127, 0, 0, 1)) }

// With --proxy, the name is judged here and the proxy asked for a tunnel
// to the address judged: a proxy whose own DNS answers the name with a
// private address (rebinding) never gets to use it. Before, the proxy was
// sent the name and fetched the private page.
func TestAProxyIsAskedForTheAddressJudged(t *testing.T) {
	port := twoServers(t)
	dns, err := testsite.StartDNS("127.0.0.1:0", []string{"rebind.test"}, net.IPv4(127, 0, 0, 2), 60)
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	p := startProxy(t, map[string]string{"rebind.test": "127.0.0.1"})
	cfg := testConfig()
	cfg.AllowPrivate, cfg.blocked, cfg.DNS = false, onlyLocalhostBlocked, dns.Addr()
	cfg.Proxy = http.ProxyURL(p.url())
	res, err := New(cfg).FetchBody(context.Background(), "http://rebind.test:"+port+"/")
	if err != nil {
		t.Fatal(err)
	}
	connects, gets := p.asked()
	if string(res.Body) != "public" || len(gets) != 0 || len(connects) != 1 || connects[0] != "127.0.0.2:"+port {
		t.Fatalf("got %q; the proxy was asked CONNECT %q, GET %q; want the public page through CONNECT 127.0.0.2:%s", res.Body, connects, gets, port)
	}
	// The private address itself, by name or by number: refused before the
	// proxy hears of it.
	for _, target := range []string{"http://127.0.0.1:" + port + "/", "http://localhost:" + port + "/"} {
		if _, err := New(cfg).Fetch(context.Background(), target); !errors.Is(err, ErrBlockedAddress) || IsTransient(err) {
			t.Fatalf("%s through the proxy: %v; want ErrBlockedAddress, permanent", target, err)
		}
	}
	if connects, gets := p.asked(); len(connects)+len(gets) != 1 {
		t.Fatalf("the proxy heard of a refused target: CONNECT %q, GET %q", connects, gets)
	}
}

// A request the proxy setting leaves direct (HTTPS_PROXY set, an http://
// URL; NO_PROXY) keeps the guard. Before, any proxy setting turned the
// guard off for every connection.
func TestADirectRequestBesideAProxyIsGuarded(t *testing.T) {
	var hit sync.Once
	reached := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Do(func() { reached = true }) }))
	defer srv.Close()
	p := startProxy(t, nil)
	cfg := testConfig()
	cfg.AllowPrivate = false
	cfg.Proxy = func(r *http.Request) (*url.URL, error) { // as HTTPS_PROXY alone
		if r.URL.Scheme == "https" {
			return p.url(), nil
		}
		return nil, nil
	}
	if _, err := New(cfg).Fetch(context.Background(), srv.URL+"/"); !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("an http:// URL on loopback beside an https proxy: %v; want ErrBlockedAddress", err)
	}
	if connects, gets := p.asked(); reached || len(connects)+len(gets) > 0 {
		t.Fatalf("reached the server %v; the proxy was asked %q %q", reached, connects, gets)
	}
	cfg.AllowPrivate = true // allowed: direct, still not through the proxy
	if res, err := New(cfg).Fetch(context.Background(), srv.URL+"/"); err != nil || res.Status != 200 || !reached {
		t.Fatalf("allowed: %+v, %v, reached %v", res, err, reached)
	}
}

// With private addresses allowed, a proxy still carries the request (by
// the name's address), and a proxy that refuses the tunnel says so.
func TestAProxyCarriesOrSaysWhyNot(t *testing.T) {
	port := twoServers(t)
	p := startProxy(t, nil)
	cfg := testConfig()
	cfg.AllowPrivate = true
	cfg.Proxy = http.ProxyURL(p.url())
	res, err := New(cfg).FetchBody(context.Background(), "http://127.0.0.2:"+port+"/")
	if err != nil || string(res.Body) != "public" {
		t.Fatalf("through the proxy: %+v, %v", res, err)
	}
	p.refuse = true
	_, err = New(cfg).Fetch(context.Background(), "http://127.0.0.2:"+port+"/")
	if !errors.Is(err, ErrProxy) || IsTransient(err) {
		t.Fatalf("a proxy that refuses CONNECT: %v; want ErrProxy, permanent", err)
	}
	t.Log(err)
}

// The special-purpose registries' ranges, each side of every edge.
func TestBlockedRanges(t *testing.T) {
	for ip, want := range map[string]bool{
		"0.1.2.3": true, "10.0.0.1": true, "100.64.0.1": true, "100.127.255.255": true, "100.128.0.0": false,
		"127.0.0.1": true, "169.254.169.254": true, "172.16.0.1": true, "172.32.0.1": false,
		"192.0.0.1": true, "192.0.0.9": false, "192.0.0.10": false, "192.0.0.170": true, "192.0.2.1": true,
		"192.88.99.1": true, "192.168.1.1": true, "198.18.0.1": true, "198.19.255.255": true, "198.20.0.0": false,
		"198.51.100.7": true, "203.0.113.9": true, "224.0.0.1": true, "240.0.0.1": true, "255.255.255.255": true,
		"8.8.8.8": false, "93.184.216.34": false, "192.31.196.1": false, "192.52.193.1": false, "192.175.48.1": false,
		"::": true, "::1": true, "::127.0.0.1": true, "::ffff:10.0.0.1": true, "::ffff:8.8.8.8": false,
		"64:ff9b::7f00:1": true, "64:ff9b::a00:1": true, "64:ff9b::c0a8:101": true, "64:ff9b::808:808": false,
		"64:ff9b:1::1": true, "2002:7f00:1::": true, "2002:a9fe:a9fe::1": true, "2002:808:808::1": false,
		"100::1": true, "2001::1": true, "2001:0:4136:e378:8000:63bf:3fff:fdd2": true, "2001:2::1": true,
		"2001:db8::1": true, "3fff::1": true, "5f00::1": true, "fc00::1": true, "fd12::1": true,
		"fe80::1": true, "fec0::1": true, "ff02::1": true,
		"2001:1::1": false, "2001:3::1": false, "2001:4:112::1": false, "2001:20::1": false,
		"2606:4700::1111": false, "2a00:1450::1": false,
	} {
		if got := Blocked(net.ParseIP(ip)); got != want {
			t.Errorf("Blocked(%s) = %v; want %v", ip, got, want)
		}
	}
}

// An IPv4 address is judged alike however it is carried: as itself,
// mapped, through NAT64 or in a 6to4 prefix.
func TestBlockedJudgesEmbeddedIPv4AsIPv4(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var b [4]byte
		for i := range b {
			b[i] = byte(rapid.IntRange(0, 255).Draw(t, "b"+strconv.Itoa(i)))
		}
		v4 := netip.AddrFrom4(b)
		want := Blocked(net.IP(b[:]))
		var mapped, nat, six [16]byte
		mapped[10], mapped[11] = 0xff, 0xff
		copy(mapped[12:], b[:])
		nat[0], nat[1], nat[2], nat[3] = 0x00, 0x64, 0xff, 0x9b
		copy(nat[12:], b[:])
		six[0], six[1] = 0x20, 0x02
		copy(six[2:6], b[:])
		for name, a := range map[string][16]byte{"mapped": mapped, "NAT64": nat, "6to4": six} {
			if got := Blocked(net.IP(a[:])); got != want {
				t.Fatalf("%s %v: %v; as IPv4 %v: %v", name, netip.AddrFrom16(a), got, v4, want)
			}
		}
	})
}
