// Package tcpproxy puts a TCP proxy between a test's client and a server
// on loopback, which the test can pause: bytes stop flowing both ways and
// are delivered, late, when it resumes — a network partition that heals,
// as a client far away meets it (its timeouts fire, its late requests
// still arrive).
package tcpproxy

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards connections to its target until closed.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	paused bool
	resume chan struct{} // closed on Resume
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Start listens on a free loopback port and forwards to target; the test's
// end closes it.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is where clients connect.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Pause holds every byte in either direction, on open connections and new
// ones, until Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused, p.resume = true, make(chan struct{})
	}
}

// Resume lets the held bytes go.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resume)
	}
}

// gate blocks while the proxy is paused.
func (p *Proxy) gate() {
	p.mu.Lock()
	paused, resume := p.paused, p.resume
	p.mu.Unlock()
	if paused {
		<-resume
	}
}

// Close stops listening and cuts every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Resume()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.track(in, true)
		p.track(out, true)
		p.wg.Add(2)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// pipe copies from src to dst, a read at a time, each write through the
// gate; when either side ends, both close.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer p.wg.Done()
	defer func() {
		src.Close()
		dst.Close()
		p.track(src, false)
		p.track(dst, false)
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
