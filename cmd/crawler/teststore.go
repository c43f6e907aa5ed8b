package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/redcrawl/crawler/internal/sigv4"
	"github.com/spf13/afero"
	"github.com/urfave/cli/v2"
)

// teststore: an S3-compatible object store in this process (gofakes3), so
// that 'work --warc-upload' and 'wacz s3://…' can be tried, and the compose
// demo run, with no cloud account and no image of another store.

func teststoreCommand() *cli.Command {
	return &cli.Command{
		Name:  "teststore",
		Usage: "serve an S3-compatible object store, for trying --warc-upload and 'wacz s3://…' without a cloud account",
		Description: "An in-process store (gofakes3) on --listen, path-style (http://HOST:PORT/BUCKET/KEY), with the\n" +
			"--bucket buckets made at start. With --dir its objects are files under DIR/buckets (and kept\n" +
			"across restarts); without, in memory. With --access-key and --secret-key (or AWS_ACCESS_KEY_ID\n" +
			"and AWS_SECRET_ACCESS_KEY) every request must be signed with them, and it may listen beyond\n" +
			"loopback; without, it listens on loopback only and serves anyone who reaches it. No TLS: for\n" +
			"trying and testing, never for keeping a crawl. Point a worker at it with\n" +
			"'crawler work --warc-dir D --warc-upload s3://BUCKET/PREFIX --s3-endpoint http://HOST:PORT'.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9000", Usage: "the `ADDRESS` to serve on"},
			&cli.StringFlag{Name: "dir", Usage: "keep the objects as files under `DIR` (default: in memory, lost when the store stops)"},
			&cli.StringFlag{Name: "bucket", Value: "crawl", Usage: "the buckets to make at start, comma-separated"},
			&cli.StringFlag{Name: "access-key", EnvVars: []string{"AWS_ACCESS_KEY_ID"}, Usage: "with --secret-key, the `KEY` every request " +
				"must be signed with (AWS Signature V4); needed to listen beyond loopback. Without them, on loopback, any request is served"},
			&cli.StringFlag{Name: "secret-key", EnvVars: []string{"AWS_SECRET_ACCESS_KEY"}, Usage: "the `SECRET` of --access-key"},
		},
		Action: runTeststore,
	}
}

func runTeststore(c *cli.Context) error {
	if c.NArg() > 0 {
		return usage(fmt.Errorf("teststore takes no arguments (got %q): the buckets are --bucket", c.Args().First()))
	}
	var buckets []string
	for _, b := range strings.Split(c.String("bucket"), ",") {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		if err := gofakes3.ValidateBucketName(b); err != nil {
			return usage(fmt.Errorf("--bucket %q: %v", b, err))
		}
		buckets = append(buckets, b)
	}
	if len(buckets) == 0 {
		return usage(errors.New("--bucket: name one bucket at least"))
	}
	key, secret := c.String("access-key"), c.String("secret-key")
	if (key == "") != (secret == "") {
		return usage(errors.New("--access-key and --secret-key go together: give both, or neither"))
	}
	if err := checkStoreListen(c.String("listen"), key != ""); err != nil {
		return usage(err)
	}
	be, err := storeBackend(c.String("dir"))
	if err != nil {
		return err
	}
	var made []string
	for _, b := range buckets {
		if ok, err := be.BucketExists(b); err != nil {
			return err
		} else if !ok {
			if err := be.CreateBucket(b); err != nil {
				return fmt.Errorf("making bucket %s: %v", b, err)
			}
		}
		made = append(made, b)
	}
	l, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return fmt.Errorf("--listen: %v", err)
	}
	var h http.Handler = gofakes3.New(be, gofakes3.WithAutoBucket(false)).Server()
	signed := "anyone on this machine may read and write"
	if key != "" {
		h, signed = sigv4.Require(key, secret, time.Now, h), "requests signed with --access-key "+key+" only"
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	kept := "in memory"
	if d := c.String("dir"); d != "" {
		kept = "under " + d
	}
	fmt.Fprintf(c.App.ErrWriter, "crawler: test object store on http://%s, buckets %s, objects %s, %s; Ctrl-C stops it\n",
		l.Addr(), strings.Join(made, ", "), kept, signed)
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// storeBackend keeps the objects as files under dir, or in memory.
func storeBackend(dir string) (gofakes3.Backend, error) {
	if dir == "" {
		return s3mem.New(), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--dir: %v", err)
	}
	be, err := s3afero.MultiBucket(afero.NewBasePathFs(afero.NewOsFs(), dir))
	if err != nil {
		return nil, fmt.Errorf("--dir %s: %v", dir, err)
	}
	return be, nil
}

// checkStoreListen refuses an address beyond loopback for a store that
// checks no credentials: anyone who reaches it could read, write and delete.
func checkStoreListen(addr string, signed bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: want host:port (e.g. 127.0.0.1:9000)", addr)
	}
	if ip := net.ParseIP(host); signed || host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %s reaches beyond this machine, and the store would take anyone's requests: give --access-key and "+
		"--secret-key (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), which every request must then be signed with, or listen on 127.0.0.1", addr)
}
