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

// capConn records what is written to and read from a connection between
// begin and end. HTTP/1.1 carries one exchange at a time on a connection,
// so the bytes between the two calls are exactly one request and its
// response (the transport writes the request after GotConn, and a server
// sends nothing before it is asked).
type capConn struct {
	net.Conn
	mu        sync.Mutex
	on        bool
	wrote     bytes.Buffer
	read      bytes.Buffer
	maxRecord int // bytes kept each way at most
}

func (c *capConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	if c.on && c.read.Len() < c.maxRecord {
		c.read.Write(p[:min(n, c.maxRecord-c.read.Len())])
	}
	c.mu.Unlock()
	return n, err
}

func (c *capConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.on && c.wrote.Len() < c.maxRecord {
		c.wrote.Write(p[:min(len(p), c.maxRecord-c.wrote.Len())])
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *capConn) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = true
	c.wrote.Reset()
	c.read.Reset()
}

func (c *capConn) end() *Raw {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	r := &Raw{Request: bytes.Clone(c.wrote.Bytes()), Response: bytes.Clone(c.read.Bytes())}
	if a, ok := c.Conn.RemoteAddr().(*net.TCPAddr); ok {
		r.RemoteIP = a.IP.String()
	}
	c.wrote.Reset()
	c.read.Reset()
	return r
}

// capturingDialers wrap the transport's connections (plain, and TLS above
// TCP, so what is recorded is the HTTP, not the ciphertext).
func capturingDialers(d *net.Dialer, maxRecord int) (dial, dialTLS func(ctx context.Context, network, addr string) (net.Conn, error)) {
	dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &capConn{Conn: c, maxRecord: maxRecord}, nil
	}
	dialTLS = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
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
