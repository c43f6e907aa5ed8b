// Package netlab is a small internet for the tests: a network and mount
// namespace of the test's own, in which hosts have public-looking
// addresses and DNS names, as on the web, and nothing has a route out.
//
// Every other test runs on loopback, where browsers and HTTP clients act
// differently from the web: Chromium does not upgrade http:// to https://
// for a loopback address or a .test name, and a crawler told
// --allow-private never meets its own address guard. Here a test runs in
// a namespace made for it (Enter: the test binary runs the one test again
// under unshare's CLONE_NEWNET and CLONE_NEWNS, which needs root), whose
// loopback interface carries the addresses the test asks for (Up), with a
// DNS server for their names that /etc/resolv.conf points at (a bind mount
// seen only in the namespace), a certificate authority that the
// processes trust through SSL_CERT_FILE (CA), and a counter of the packets
// sent to an address (Count). Whatever a test's processes send stays in
// the namespace: it has no interface but loopback.
package netlab

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/testsite"
)

// insideEnv names the test that runs in the namespace, in its process.
const insideEnv = "REDCRAWL_NETLAB_TEST"

// Required: with CRAWLER_REQUIRE_NETNS=1 (CI, as root) a test that cannot
// make its namespace fails rather than skips.
func Required() bool { return os.Getenv("CRAWLER_REQUIRE_NETNS") == "1" }

// Enter runs the calling test (a top-level one) in a namespace of its own
// and reports whether the caller is there: true in the namespace, where
// the test goes on; false in the test's first process, which has waited
// for it, logged its output and taken its result. env is added to the
// environment of the test in the namespace. Where the machine cannot make
// a namespace (not Linux, not root) the test is skipped, or failed when
// Required.
func Enter(t *testing.T, env ...string) bool {
	t.Helper()
	if os.Getenv(insideEnv) == t.Name() {
		return true
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		why := "a network namespace of the test's own needs Linux and root"
		if Required() {
			t.Fatal(why + "; CRAWLER_REQUIRE_NETNS=1 makes this a failure")
		}
		t.Skip(why)
	}
	args := []string{"-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "-test.v", "-test.count=1"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), insideEnv+"="+t.Name()), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		if Required() {
			t.Fatalf("netlab: cannot make a namespace: %v", err)
		}
		t.Skipf("netlab: cannot make a namespace: %v", err)
	}
	skipped := relay(t, out)
	err = cmd.Wait()
	switch {
	case err != nil:
		t.Fatalf("netlab: the test in its namespace failed (%v): its output is above", err)
	case skipped:
		t.Skip("netlab: the test skipped itself in its namespace")
	}
	return false
}

// relay logs the namespace's test output line by line as it comes, and
// says whether the test was skipped there.
func relay(t *testing.T, r io.Reader) (skipped bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "--- SKIP: "+t.Name()) {
			skipped = true
		}
		t.Log(line)
	}
	return skipped
}

// Lab is the namespace as Up made it.
type Lab struct {
	// CA is the certificate authority every process of the test trusts.
	CA *CA
	// DNS answers for the names Up was given.
	DNS *testsite.DNS
}

// LANAddr is the lab machine's own address on its network interface.
const LANAddr = "10.0.0.2"

// dnsAddr is where the lab's DNS server listens.
const dnsAddr = "127.0.0.53:53"

// Up makes the namespace the test entered a small internet: loopback up
// with addrs (IPv4, each a /32) besides 127.0.0.1, a network interface
// (lab0, at LANAddr on 10.0.0.0/8 and at 169.254.0.2), a DNS server that
// resolves each of names (as DNS spells it: an IDN in its xn-- form) to
// its address, /etc/resolv.conf pointing at it, and a certificate
// authority in SSL_CERT_FILE. It must run in the namespace (after Enter).
func Up(t *testing.T, names map[string]string, addrs ...string) *Lab {
	t.Helper()
	if os.Getenv(insideEnv) != t.Name() {
		t.Fatal("netlab: Up outside the test's namespace: call Enter first")
	}
	// Mounts made here stay here.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("netlab: making / private to the namespace: %v", err)
	}
	ip(t, "link", "set", "lo", "up")
	// An interface besides loopback, as a machine on a network has (a
	// browser's WebRTC gathers candidates on such, never on loopback):
	// a veth pair with both ends here, one end on the LAN 10.0.0.0/8 and
	// link-local, the other bare. No route leaves the namespace.
	ip(t, "link", "add", "lab0", "type", "veth", "peer", "name", "lab1")
	ip(t, "link", "set", "lab0", "up")
	ip(t, "link", "set", "lab1", "up")
	ip(t, "addr", "add", LANAddr+"/8", "dev", "lab0")
	ip(t, "addr", "add", "169.254.0.2/16", "dev", "lab0")
	for _, a := range addrs {
		if net.ParseIP(a).To4() == nil {
			t.Fatalf("netlab: %q is not an IPv4 address", a)
		}
		ip(t, "addr", "add", a+"/32", "dev", "lo")
	}
	resolved := map[string]net.IP{}
	for n, a := range names {
		resolved[n] = net.ParseIP(a)
	}
	d, err := testsite.StartDNSFor(dnsAddr, resolved, 60)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver 127.0.0.53\noptions attempts:1 timeout:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(conf, "/etc/resolv.conf", "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("netlab: pointing /etc/resolv.conf at the lab's DNS: %v", err)
	}
	ca := NewCA(t)
	t.Setenv("SSL_CERT_FILE", ca.File)
	return &Lab{CA: ca, DNS: d}
}

// ip runs iproute2's ip with args.
func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("netlab: ip %s: %v: %s (apt-get install iproute2)", strings.Join(args, " "), err, out)
	}
}

// Listen listens on addr, an address of the lab's ("93.184.216.34:80").
func Listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatalf("netlab: listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Inside reports whether the calling test runs in its namespace already.
func Inside(t *testing.T) bool { return os.Getenv(insideEnv) == t.Name() }
