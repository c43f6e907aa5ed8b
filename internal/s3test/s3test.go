// Package s3test is an S3-compatible object store for tests, in the
// test's own process (gofakes3 and its memory backend), on a loopback
// port it keeps across a Stop and a Start, so that a test can take the
// store away and bring it back. It has one bucket, Bucket.
package s3test

import (
	"cmp"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Bucket is the store's bucket; Key and Secret the credentials it takes.
const (
	Bucket = "warcs"
	Key    = "key"
	Secret = "secret"
)

// Store is a running store.
type Store struct {
	t    testing.TB
	Addr string // host:port
	h    http.Handler
	srv  *http.Server
}

// Start starts a store, stopped at the test's end.
func Start(t testing.TB) *Store {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(Bucket); err != nil {
		t.Fatal(err)
	}
	s := &Store{t: t, h: gofakes3.New(be).Server()}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// URL is the store's endpoint.
func (s *Store) URL() string { return "http://" + s.Addr }

// Start serves again, on the same port.
func (s *Store) Start() {
	addr := cmp.Or(s.Addr, "127.0.0.1:0")
	var l net.Listener
	var err error
	for range 100 { // the port just closed may take a moment to be free again
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	s.Addr = l.Addr().String()
	s.srv = &http.Server{Handler: s.h}
	go s.srv.Serve(l)
}

// Stop takes the store away (its objects stay for the next Start).
func (s *Store) Stop() {
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
}

func (s *Store) client() *minio.Client {
	c, err := minio.New(s.Addr, &minio.Options{Creds: credentials.NewStaticV4(Key, Secret, "")})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// Keys are the objects under prefix.
func (s *Store) Keys(prefix string) []string {
	var out []string
	for o := range s.client().ListObjects(context.Background(), Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			s.t.Fatal(o.Err)
		}
		out = append(out, o.Key)
	}
	return out
}

// Object is one object's bytes.
func (s *Store) Object(key string) ([]byte, error) {
	o, err := s.client().GetObject(context.Background(), Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return io.ReadAll(o)
}
