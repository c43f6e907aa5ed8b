package render

import (
	"fmt"
	"strings"
)

// Isolation is how a Pool keeps its browser off the network. Every request
// a page makes over HTTP is paused and made by the caller's Fetcher, but
// not every packet a browser can send is HTTP: WebRTC (STUN and TURN over
// UDP or TCP), QUIC, DNS prefetch and a popup's requests never reach the
// DevTools protocol's Fetch domain. Only a browser with no network can be
// trusted to send nothing.
type Isolation string

const (
	// IsolateAuto is IsolateNetns where the machine allows a network
	// namespace (Linux; root, or unprivileged user namespaces), and
	// IsolateFlags where it does not (Pool.Isolation says which).
	IsolateAuto Isolation = "auto"
	// IsolateNetns starts the browser in a network namespace of its own
	// in which no interface is up, not even loopback: it reaches nothing,
	// by construction. The pool talks to it over the pipe of
	// --remote-debugging-pipe, which no namespace divides. New fails where
	// the machine does not allow one.
	IsolateNetns Isolation = "netns"
	// IsolateFlags shares the worker's network and closes what flags and
	// an injected script can: a proxy that does not exist, no QUIC, no
	// DNS prefetch, WebRTC's constructors removed from every page, popups
	// blocked and closed at once. It is the fall-back; a browser feature
	// that none of them covers could still send a packet.
	IsolateFlags Isolation = "flags"
)

// ParseIsolation reads --render-isolation's value.
func ParseIsolation(s string) (Isolation, error) {
	switch i := Isolation(strings.ToLower(s)); i {
	case IsolateAuto, IsolateNetns, IsolateFlags:
		return i, nil
	case "":
		return IsolateAuto, nil
	}
	return "", fmt.Errorf("render: isolation %q: want auto, netns or flags", s)
}

// noWebRTC runs in every frame of a page before its scripts (IsolateFlags):
// a page that cannot make a peer connection sends no STUN or TURN packet.
const noWebRTC = `(() => {
  for (const n of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel', 'RTCIceTransport',
                   'RTCRtpSender', 'RTCRtpReceiver', 'RTCSctpTransport', 'RTCDtlsTransport']) {
    try { Object.defineProperty(globalThis, n, {value: undefined, writable: false, configurable: false}) } catch (e) {}
  }
})()`
