package netlab

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// Counter counts the IPv4 packets, of any protocol and port, sent to a
// set of addresses in the lab: every frame on its loopback interface
// (where all its traffic goes) is read from a packet socket.
type Counter struct {
	fd   int
	dst  map[[4]byte]bool
	n    atomic.Int64
	stop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	by   map[string]int64 // "10.0.0.1 udp 3478" -> packets
}

// Count starts counting the packets sent to addrs, until the test ends.
func Count(t *testing.T, addrs ...string) *Counter {
	t.Helper()
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, int(htons(syscall.ETH_P_ALL)))
	if err != nil {
		t.Fatalf("netlab: a packet socket: %v", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: lo.Index}); err != nil {
		syscall.Close(fd)
		t.Fatalf("netlab: binding the packet socket to lo: %v", err)
	}
	// A read wakes every 100 ms, so that Close is heard.
	tv := syscall.Timeval{Usec: 100_000}
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	c := &Counter{fd: fd, dst: map[[4]byte]bool{}, by: map[string]int64{}}
	for _, a := range addrs {
		c.dst[[4]byte(net.ParseIP(a).To4())] = true
	}
	c.wg.Add(1)
	go c.read()
	t.Cleanup(c.close)
	return c
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (c *Counter) read() {
	defer c.wg.Done()
	buf := make([]byte, 1<<16)
	for !c.stop.Load() {
		n, from, err := syscall.Recvfrom(c.fd, buf, 0)
		if err != nil || n < 14+20 {
			continue
		}
		// Each packet crosses lo twice (sent, then received): count it as
		// it is sent.
		if ll, ok := from.(*syscall.SockaddrLinklayer); ok && ll.Pkttype != syscall.PACKET_OUTGOING {
			continue
		}
		ipv4 := buf[14:n] // lo frames carry an Ethernet header of zeros
		if buf[12] != 0x08 || buf[13] != 0x00 || ipv4[0]>>4 != 4 {
			continue
		}
		if !c.dst[[4]byte(ipv4[16:20])] {
			continue
		}
		c.n.Add(1)
		key := net.IP(ipv4[16:20]).String() + " " + proto(ipv4)
		c.mu.Lock()
		c.by[key]++
		c.mu.Unlock()
	}
}

// proto names an IPv4 packet's protocol and destination port.
func proto(p []byte) string {
	hl := int(p[0]&0x0f) * 4
	port := func() int {
		if len(p) < hl+4 {
			return 0
		}
		return int(p[hl+2])<<8 | int(p[hl+3])
	}
	switch p[9] {
	case syscall.IPPROTO_UDP:
		return "udp " + itoa(port())
	case syscall.IPPROTO_TCP:
		return "tcp " + itoa(port())
	case syscall.IPPROTO_ICMP:
		return "icmp"
	}
	return "proto " + itoa(int(p[9]))
}

func itoa(n int) string { return strconv.Itoa(n) }

// N is the packets counted so far.
func (c *Counter) N() int64 { return c.n.Load() }

// By is the packets counted so far, by address, protocol and port.
func (c *Counter) By() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.by))
	for k, v := range c.by {
		out[k] = v
	}
	return out
}

func (c *Counter) close() {
	c.stop.Store(true)
	c.wg.Wait()
	syscall.Close(c.fd)
}
