package sigv4_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/redcrawl/crawler/internal/sigv4"
)

// A store that requires the signature serves what minio-go (the
// uploader's and wacz's client) signs with its credentials: puts of a byte
// to 17 MB as the uploader sends them (one request each, its MD5 sent), a
// get and a list; it refuses the same requests anonymous, by another key,
// with a wrong secret, or signed two hours before its clock.
func TestOnlyRequestsSignedWithTheStoresCredentialsAreServed(t *testing.T) {
	be := s3mem.New()
	if err := be.CreateBucket("crawl"); err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	srv := httptest.NewServer(sigv4.Require("redcrawl", "demo-secret", func() time.Time { return clock }, gofakes3.New(be).Server()))
	defer srv.Close()
	client := func(key, secret string) *minio.Client {
		var creds *credentials.Credentials
		if key == "" {
			creds = credentials.NewStaticV4("", "", "") // anonymous
		} else {
			creds = credentials.NewStaticV4(key, secret, "")
		}
		c, err := minio.New(strings.TrimPrefix(srv.URL, "http://"), &minio.Options{Creds: creds, Region: "us-east-1"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	good := client("redcrawl", "demo-secret")
	for _, size := range []int{1, 70 << 10, 17 << 20} {
		body := bytes.Repeat([]byte("w"), size)
		if _, err := good.PutObject(ctx, "crawl", "f", bytes.NewReader(body), int64(size), minio.PutObjectOptions{SendContentMd5: true, DisableMultipart: true}); err != nil {
			t.Fatalf("a signed put of %d bytes: %v", size, err)
		}
		obj, err := good.GetObject(ctx, "crawl", "f", minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		if err != nil || len(got) != size {
			t.Fatalf("a signed get of %d bytes: %d, %v", size, len(got), err)
		}
	}
	for o := range good.ListObjects(ctx, "crawl", minio.ListObjectsOptions{}) {
		if o.Err != nil {
			t.Fatalf("a signed list: %v", o.Err)
		}
	}
	for name, c := range map[string]*minio.Client{"anonymous": client("", ""), "another key": client("someone", "demo-secret"),
		"a wrong secret": client("redcrawl", "guess")} {
		_, err := c.PutObject(ctx, "crawl", "x", strings.NewReader("x"), 1, minio.PutObjectOptions{})
		if minio.ToErrorResponse(err).Code != "AccessDenied" {
			t.Errorf("%s: put: %v; want AccessDenied", name, err)
		}
		if _, err := c.StatObject(ctx, "crawl", "f", minio.StatObjectOptions{}); err == nil {
			t.Errorf("%s: stat: served", name)
		}
		if err := c.RemoveObject(ctx, "crawl", "f", minio.RemoveObjectOptions{}); err == nil {
			if _, serr := good.StatObject(ctx, "crawl", "f", minio.StatObjectOptions{}); serr != nil {
				t.Errorf("%s: delete: the object is gone", name)
			}
		}
	}
	clock = time.Now().Add(2 * time.Hour) // the store's clock two hours on: the client's signature is stale
	if _, err := good.StatObject(ctx, "crawl", "f", minio.StatObjectOptions{}); err == nil {
		t.Error("a request signed two hours before the store's clock was served")
	}
	req := httptest.NewRequest("GET", "/crawl/f", nil)
	if err := sigv4.Check(req, "redcrawl", "demo-secret", time.Now()); !errors.Is(err, sigv4.ErrDenied) {
		t.Errorf("Check of an unsigned request: %v", err)
	}
}
