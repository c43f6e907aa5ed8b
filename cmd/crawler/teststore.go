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
			"across restarts); without, in memory. It checks no credentials and no TLS: for trying and\n" +
			"testing on a private network, never for keeping a crawl. Point a worker at it with\n" +
			"'crawler work --warc-dir D --warc-upload s3://BUCKET/PREFIX --s3-endpoint http://HOST:PORT'.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9000", Usage: "the `ADDRESS` to serve on"},
			&cli.StringFlag{Name: "dir", Usage: "keep the objects as files under `DIR` (default: in memory, lost when the store stops)"},
			&cli.StringFlag{Name: "bucket", Value: "crawl", Usage: "the buckets to make at start, comma-separated"},
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
	srv := &http.Server{Handler: gofakes3.New(be, gofakes3.WithAutoBucket(false)).Server(), ReadHeaderTimeout: 10 * time.Second}
	kept := "in memory"
	if d := c.String("dir"); d != "" {
		kept = "under " + d
	}
	fmt.Fprintf(c.App.ErrWriter, "crawler: test object store on http://%s, buckets %s, objects %s; Ctrl-C stops it\n",
		l.Addr(), strings.Join(made, ", "), kept)
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
