package testsite

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	"golang.org/x/net/dns/dnsmessage"
)

// DNS is a DNS server on loopback for the site's named hosts: an A query
// for one of them is answered with the site's address, any other name
// with NXDOMAIN, so that a crawler told to ask it (fetch.Config.DNS,
// `crawler work --dns`) resolves ten thousand host names the way it would
// on the web, through its own resolver and its cache.
type DNS struct {
	conn    net.PacketConn
	ttl     uint32 // seconds, for every answer
	names   map[string]net.IP
	Queries atomic.Int64 // questions answered
	done    chan struct{}
}

// StartDNS serves names (without a port) on addr ("127.0.0.1:0" picks a
// port), each resolving to ip, with a TTL of ttl seconds.
func StartDNS(addr string, names []string, ip net.IP, ttl uint32) (*DNS, error) {
	m := make(map[string]net.IP, len(names))
	for _, n := range names {
		m[n] = ip
	}
	return StartDNSFor(addr, m, ttl)
}

// StartDNSFor serves names on addr, each resolving to its own address.
func StartDNSFor(addr string, names map[string]net.IP, ttl uint32) (*DNS, error) {
	conn, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("testsite: dns: %w", err)
	}
	d := &DNS{conn: conn, ttl: ttl, names: map[string]net.IP{}, done: make(chan struct{})}
	for n, ip := range names {
		d.names[strings.ToLower(strings.TrimSuffix(n, "."))+"."] = ip.To4()
	}
	go d.serve()
	return d, nil
}

// Addr is where the server listens.
func (d *DNS) Addr() string { return d.conn.LocalAddr().String() }

// Close stops the server.
func (d *DNS) Close() {
	d.conn.Close()
	<-d.done
}

func (d *DNS) serve() {
	defer close(d.done)
	buf := make([]byte, 512)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if out, ok := d.answer(buf[:n]); ok {
			d.conn.WriteTo(out, from)
		}
	}
}

// answer is the reply to one query; false for what is not a query.
func (d *DNS) answer(q []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil || h.Response {
		return nil, false
	}
	question, err := p.Question()
	if err != nil {
		return nil, false
	}
	d.Queries.Add(1)
	name := strings.ToLower(question.Name.String())
	ip, known := d.names[name]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	b.StartQuestions()
	b.Question(question)
	b.StartAnswers()
	if known && question.Type == dnsmessage.TypeA {
		var a dnsmessage.AResource
		copy(a.A[:], ip)
		b.AResource(dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: d.ttl}, a)
	}
	out, err := b.Finish()
	return out, err == nil
}
