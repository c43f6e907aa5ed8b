package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// useTLSFiles applies --redis-ca (the CAs trusted for the server's
// certificate instead of the system's) and --redis-cert/--redis-key (a
// client certificate) to a rediss:// URL. Errors name the flag and the
// file, never what is in it.
func (u *redisURL) useTLSFiles(ca, cert, key string) error {
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
