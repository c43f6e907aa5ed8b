package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// UseTLSFiles applies --redis-ca (the CAs trusted for the server's
// certificate instead of the system's) and --redis-cert/--redis-key (a
// client certificate) to a rediss:// URL. Errors name the flag and the
// file, never what is in it.
func (u *URL) UseTLSFiles(ca, cert, key string) error {
	if ca == "" && cert == "" && key == "" {
		return nil
	}
	if !u.tls {
		return fmt.Errorf("--redis-ca, --redis-cert and --redis-key are for a TLS connection: use rediss:// in --redis (now %s)", u.shown)
	}
	if (cert == "") != (key == "") {
		return errors.New("--redis-cert and --redis-key go together: a client certificate and its private key")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if u.opt.TLSConfig != nil {
		cfg = u.opt.TLSConfig.Clone()
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return fmt.Errorf("--redis-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--redis-ca %s: no PEM certificate in it", ca)
		}
		cfg.RootCAs = pool
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return fmt.Errorf("--redis-cert %s with --redis-key %s: %v", cert, key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	u.opt.TLSConfig = cfg
	return nil
}

// wantsClientCert asks the server at addr, once, whether it refuses a
// client without a certificate. Under TLS 1.3 the client's handshake ends
// before the server has looked at the client's (empty) certificate, so
// the server's "certificate required" alert comes after it: a client
// that writes first (go-redis's HELLO) may meet a reset connection
// instead, and the error no longer says why. Reading without writing
// gets the alert itself.
func wantsClientCert(addr string, cfg *tls.Config) bool {
	if cfg == nil || len(cfg.Certificates) > 0 || cfg.GetClientCertificate != nil {
		return false // not TLS, or a certificate was given
	}
	// (An empty ServerName is taken from addr.)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return strings.Contains(err.Error(), "certificate required")
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	return err != nil && strings.Contains(err.Error(), "certificate required")
}
