package fetch

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"sync"
)

// Raw is one HTTP exchange as it crossed the wire: the request as written
// and the response as read (status line, headers and body, chunked or
// compressed as the server sent them), for an archive (WARC) to keep.
// A response cut at MaxBody holds what was read until the cut.
type Raw struct {
	Request, Response []byte
	RemoteIP          string // the address the bytes came from
}

// capConn hands what is written to and read from a connection to the
// exchange that uses it now. HTTP/1.1 carries one exchange at a time on a
// connection: the transport writes a request after GotConn, reads its
// response to the end, and only then may give the connection to another
// request, whose GotConn switches the sink. The previous exchange keeps
// its own buffers, so it may read them after the switch.
type capConn struct {
	net.Conn
	mu        sync.Mutex
	sink      *exchange
	maxRecord int
}

// exchange is the bytes of one request and its response.
type exchange struct {
	mu          sync.Mutex
	wrote, read bytes.Buffer
	max         int // bytes kept each way at most
}

func (e *exchange) add(b *bytes.Buffer, p []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if room := e.max - b.Len(); room > 0 {
		b.Write(p[:min(len(p), room)])
	}
}

func (c *capConn) current() *exchange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sink
}

func (c *capConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if e := c.current(); e != nil && n > 0 {
		e.add(&e.read, p[:n])
	}
	return n, err
}

func (c *capConn) Write(p []byte) (int, error) {
	if e := c.current(); e != nil {
		e.add(&e.wrote, p)
	}
	return c.Conn.Write(p)
}

// begin gives the connection to a new exchange and returns it.
func (c *capConn) begin() *exchange {
	e := &exchange{max: c.maxRecord}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sink = e
	return e
}

// raw is the exchange's bytes so far.
func (e *exchange) raw(conn net.Conn) *Raw {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &Raw{Request: bytes.Clone(e.wrote.Bytes()), Response: bytes.Clone(e.read.Bytes())}
	if a, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		r.RemoteIP = a.IP.String()
	}
	return r
}

// capturingDialers wrap the transport's connections (plain, and TLS above
// TCP, so what is recorded is the HTTP, not the ciphertext).
func capturingDialers(d *dialer, maxRecord int) (dial, dialTLS func(ctx context.Context, network, addr string) (net.Conn, error)) {
	dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &capConn{Conn: c, maxRecord: maxRecord}, nil
	}
	dialTLS = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(addr)
		tc := tls.Client(c, &tls.Config{ServerName: host, NextProtos: []string{"http/1.1"}})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return &capConn{Conn: tc, maxRecord: maxRecord}, nil
	}
	return dial, dialTLS
}
