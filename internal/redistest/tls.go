package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TLS is a real redis-server that speaks TLS on TLSAddr (with
// certificates made for the test: a CA, a server certificate for
// 127.0.0.1 and a client certificate, all signed by the CA), and plain
// TCP on Addr for the test's own setup (Client).
type TLS struct {
	*Server
	TLSAddr            string
	CAFile             string // the CA that signed the server's and the client's certificates
	CertFile, KeyFile  string // a client certificate and its key
	OtherCA            string // a CA that signed nothing here: trusting it alone must fail
	ClientCertRequired bool
}

// RealTLS starts redis-server with a TLS port besides its plain one; with
// requireClientCert, a TLS client without a certificate the CA signed is
// refused (tls-auth-clients yes), else a certificate is optional.
func RealTLS(t testing.TB, requireClientCert bool) *TLS {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if Required() {
			t.Fatalf("%v; CRAWLER_REQUIRE_REDIS=1 makes this a failure", err)
		}
		t.Skipf("%v; skipping the TLS test", err)
	}
	dir := t.TempDir()
	ca, caKey := makeCA(t, dir, "ca", "RedCrawl test CA")
	makeCA(t, dir, "other-ca", "Another test CA")
	issue(t, dir, "server", ca, caKey, x509.ExtKeyUsageServerAuth)
	issue(t, dir, "client", ca, caKey, x509.ExtKeyUsageClientAuth)
	tlsPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	auth := "optional"
	if requireClientCert {
		auth = "yes"
	}
	s := startFree(t, bin, func(string) []string {
		return []string{"--tls-port", fmt.Sprint(tlsPort), "--tls-cert-file", filepath.Join(dir, "server.crt"),
			"--tls-key-file", filepath.Join(dir, "server.key"), "--tls-ca-cert-file", filepath.Join(dir, "ca.crt"),
			"--tls-auth-clients", auth}
	})
	return &TLS{Server: s, TLSAddr: fmt.Sprintf("127.0.0.1:%d", tlsPort), CAFile: filepath.Join(dir, "ca.crt"),
		CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key"),
		OtherCA: filepath.Join(dir, "other-ca.crt"), ClientCertRequired: requireClientCert}
}

func makeCA(t testing.TB, dir, name, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, name, der, key)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func issue(t testing.TB, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "redcrawl-" + name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, name, der, key)
}

func write(t testing.TB, dir, name string, der []byte, key *ecdsa.PrivateKey) {
	t.Helper()
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}
