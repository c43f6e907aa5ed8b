// Package upload moves a worker's closed WARC files into object storage
// (S3 or any S3-compatible store), so that a crawl of many machines
// leaves its archive in one place rather than on fifty disks.
//
// A file is uploaded once closed (archive's rotation, or the worker's
// stop), in one PUT with its MD5 (Content-MD5: the store refuses a body
// that arrived otherwise), then verified by reading the object back's
// size and ETag (the MD5 of a single-part upload), and only then removed
// locally. A failed upload is retried with back-off and never loses the
// file: it stays on disk until an upload of it is verified, and a worker
// that stops with files not yet uploaded says which.
package upload

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config says where files go: Target is s3://BUCKET/PREFIX; Endpoint is
// the store's URL (https://s3.amazonaws.com when ""; http:// for a store
// without TLS); Region, AccessKey and SecretKey as the store wants them
// (the AWS_* environment variables when "").
type Config struct {
	Target                       string
	Endpoint                     string
	Region, AccessKey, SecretKey string
	Log                          *slog.Logger
	// Retry is the first wait after a failed upload (1 s when 0); each
	// failure doubles it, up to a minute.
	Retry time.Duration
}

// Uploader uploads closed files, one at a time, in the order they closed.
type Uploader struct {
	client         *minio.Client
	bucket, prefix string
	log            *slog.Logger
	retry          time.Duration

	mu      sync.Mutex
	pending []string // closed files not yet uploaded, oldest first
	wake    chan struct{}
	done    chan struct{}
	stop    chan struct{}
	// uploaded counts the files uploaded, verified and removed; failed,
	// the attempts that failed.
	uploaded, failed int
}

// ParseTarget reads s3://BUCKET/PREFIX.
func ParseTarget(target string) (bucket, prefix string, err error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return "", "", fmt.Errorf("upload: %q: want s3://BUCKET/PREFIX", target)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	return u.Host, prefix, nil
}

// New connects to the store (no call is made until the first upload).
func New(cfg Config) (*Uploader, error) {
	bucket, prefix, err := ParseTarget(cfg.Target)
	if err != nil {
		return nil, err
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = cmpOr(os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"), "https://s3.amazonaws.com")
	}
	eu, err := url.Parse(endpoint)
	if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
		return nil, fmt.Errorf("upload: endpoint %q: want http(s)://HOST[:PORT]", endpoint)
	}
	creds := credentials.NewEnvAWS()
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	}
	region := cmpOr(cfg.Region, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"))
	// One try a call (MaxRetries 1): the uploader retries with its own
	// back-off, and says so each time, rather than a call hiding ten.
	client, err := minio.New(eu.Host, &minio.Options{Creds: creds, Secure: eu.Scheme == "https", Region: region, MaxRetries: 1})
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	retry := cfg.Retry
	if retry <= 0 {
		retry = time.Second
	}
	return &Uploader{client: client, bucket: bucket, prefix: prefix, log: log, retry: retry,
		wake: make(chan struct{}, 1), done: make(chan struct{}), stop: make(chan struct{})}, nil
}

// Where names a file's object.
func (u *Uploader) Where(file string) string {
	return "s3://" + u.bucket + "/" + u.prefix + filepath.Base(file)
}

// Add queues a closed file for upload.
func (u *Uploader) Add(file string) {
	u.mu.Lock()
	u.pending = append(u.pending, file)
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// Pending are the files not yet uploaded.
func (u *Uploader) Pending() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.pending...)
}

// Uploaded is how many files were uploaded, verified and removed.
func (u *Uploader) Uploaded() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.uploaded
}

// Failures is how many upload attempts failed (each retried).
func (u *Uploader) Failures() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.failed
}

// Run uploads the queued files until Finish, retrying a failed one with
// back-off (it keeps its place: the files go in the order they closed).
func (u *Uploader) Run(ctx context.Context) {
	defer close(u.done)
	wait := u.retry
	for {
		u.mu.Lock()
		var file string
		if len(u.pending) > 0 {
			file = u.pending[0]
		}
		u.mu.Unlock()
		if file == "" {
			select {
			case <-u.wake:
				continue
			case <-u.stop:
				return
			case <-ctx.Done():
				return
			}
		}
		err := u.upload(ctx, file)
		if errors.Is(err, os.ErrNotExist) {
			// Gone from the folder: another worker sharing it uploaded it
			// (files a past run left are queued by every worker), or it
			// was moved away by hand. Nothing of it to lose here.
			u.log.Info("a queued WARC file is no longer there: another worker uploaded it, or it was moved", "file", file)
			u.mu.Lock()
			u.pending = u.pending[1:]
			u.mu.Unlock()
			continue
		}
		if err != nil {
			u.mu.Lock()
			u.failed++
			u.mu.Unlock()
			u.log.Warn("uploading a WARC file failed; it stays on disk and is tried again", "file", file, "to", u.Where(file), "in", wait, "err", err)
			select {
			case <-time.After(wait/2 + rand.N(wait)):
			case <-u.stop:
				return
			case <-ctx.Done():
				return
			}
			wait = min(2*wait, time.Minute)
			continue
		}
		wait = u.retry
		u.mu.Lock()
		u.pending = u.pending[1:]
		u.uploaded++
		u.mu.Unlock()
	}
}

// Finish waits for the queued files to be uploaded, until ctx ends, and
// stops Run; it returns the files left on disk, not uploaded.
func (u *Uploader) Finish(ctx context.Context) []string {
	for len(u.Pending()) > 0 {
		select {
		case <-ctx.Done():
			close(u.stop)
			<-u.done
			return u.Pending()
		case <-time.After(50 * time.Millisecond):
		}
	}
	close(u.stop)
	<-u.done
	return u.Pending()
}

// upload puts one file, verifies the object and removes the file.
func (u *Uploader) upload(ctx context.Context, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h := md5.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	key := path.Join(strings.TrimSuffix(u.prefix, "/"), filepath.Base(file))
	ctx, cancel := context.WithTimeout(ctx, uploadTimeout(size))
	defer cancel()
	if _, err := u.client.PutObject(ctx, u.bucket, key, f, size, minio.PutObjectOptions{ContentType: "application/warc",
		SendContentMd5: true, DisableMultipart: true}); err != nil {
		return err
	}
	st, err := u.client.StatObject(ctx, u.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return fmt.Errorf("reading the uploaded object back: %w", err)
	}
	if st.Size != size || !strings.EqualFold(strings.Trim(st.ETag, `"`), sum) {
		return fmt.Errorf("the object holds %d bytes, ETag %s; the file has %d, MD5 %s", st.Size, st.ETag, size, sum)
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("uploaded and verified, but not removed: %w", err)
	}
	u.log.Info("WARC file uploaded, verified and removed", "file", filepath.Base(file), "to", u.Where(file), "bytes", size)
	return nil
}

// uploadTimeout gives an upload a minute and a minute a 100 MB.
func uploadTimeout(size int64) time.Duration {
	return time.Minute + time.Duration(size/(100<<20))*time.Minute
}

func cmpOr(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// Objects are the WARC files (*.warc.gz, *.warc) under the target's
// prefix, by key, in order.
func (u *Uploader) Objects(ctx context.Context) ([]string, error) {
	var keys []string
	for o := range u.client.ListObjects(ctx, u.bucket, minio.ListObjectsOptions{Prefix: u.prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("upload: listing s3://%s/%s: %w", u.bucket, u.prefix, o.Err)
		}
		if strings.HasSuffix(o.Key, ".warc.gz") || strings.HasSuffix(o.Key, ".warc") {
			keys = append(keys, o.Key)
		}
	}
	return keys, nil
}

// Open reads one object.
func (u *Uploader) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	o, err := u.client.GetObject(ctx, u.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("upload: s3://%s/%s: %w", u.bucket, key, err)
	}
	return o, nil
}
