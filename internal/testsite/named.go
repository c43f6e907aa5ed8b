package testsite

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Named hosts: in a compose network every host name resolves to the
// site's one address, so one listener serves them all, told apart by the
// Host header.

// startNamed serves every named host on one listener.
func (s *Site) startNamed() (*Site, error) {
	if err := CheckNames(s.cfg.Names); err != nil {
		return nil, err
	}
	listen := s.cfg.Listen
	if listen == "" {
		listen = ":8080"
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("testsite: listen on %s: %w", listen, err)
	}
	if s.cfg.Port == 0 {
		s.cfg.Port = l.Addr().(*net.TCPAddr).Port
	}
	byHost := map[string]http.Handler{}
	for i, n := range s.cfg.Names {
		s.hosts = append(s.hosts, net.JoinHostPort(strings.ToLower(n), strconv.Itoa(s.cfg.Port)))
		byHost[s.hosts[i]] = s.handler(i)
		if s.cfg.Port == 80 {
			byHost[strings.ToLower(n)] = s.handler(i)
		}
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := byHost[strings.ToLower(r.Host)]; ok {
			h.ServeHTTP(w, r)
			return
		}
		switch r.URL.Path {
		case "/_truth":
			writeJSON(w, s.Truth())
		case "/_fetchable":
			writeJSON(w, s.Fetchable())
		case "/_stats":
			writeJSON(w, s.Stats())
		default:
			http.Error(w, fmt.Sprintf("this test site serves %s, not %q", strings.Join(s.hosts, ", "), r.Host), http.StatusMisdirectedRequest)
		}
	})}
	s.servers = append(s.servers, srv)
	go srv.Serve(l)
	if s.cfg.DNS != "" {
		ip := l.Addr().(*net.TCPAddr).IP
		if ip.IsUnspecified() {
			ip = net.IPv4(127, 0, 0, 1)
		}
		if s.dns, err = StartDNS(s.cfg.DNS, s.cfg.Names, ip, 300); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// DNS is the site's DNS server for its named hosts (Config.DNS); nil
// without one.
func (s *Site) DNS() *DNS { return s.dns }

// Numbered are n host names under domain, h1.domain to hn.domain, for a
// site of many named hosts.
func Numbered(n int, domain string) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("h%d.%s", i+1, domain)
	}
	return names
}

// CheckNames reports a host name that Config.Names cannot serve: not a
// DNS name, or given twice.
func CheckNames(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if !validName(n) {
			return fmt.Errorf("testsite: host name %q: want letters, digits, '-' and '.' (such as a.site.test)", n)
		}
		if seen[strings.ToLower(n)] {
			return fmt.Errorf("testsite: host name %q given twice", n)
		}
		seen[strings.ToLower(n)] = true
	}
	return nil
}

func validName(n string) bool {
	if n == "" || len(n) > 253 || strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".") || strings.Contains(n, "..") {
		return false
	}
	for _, r := range n {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
