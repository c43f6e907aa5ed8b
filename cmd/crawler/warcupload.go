package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/upload"
	"github.com/urfave/cli/v2"
)

// work --warc-upload: the worker process's WARC files, once closed, go to
// object storage (package upload), one uploader for the process (its plain
// and render workers write into one folder).

func warcUploadFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "warc-upload", Usage: "with --warc-dir: upload each WARC file, once closed, to s3://BUCKET/PREFIX " +
			"(credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), verify it and only then remove it here; " +
			"a failed upload is retried and never loses the file, and files a past run left are uploaded first"},
		&cli.StringFlag{Name: "s3-endpoint", Usage: "the object store's `URL`, for an S3-compatible one (default: AWS_ENDPOINT_URL_S3, " +
			"AWS_ENDPOINT_URL, or https://s3.amazonaws.com)"},
		&cli.StringFlag{Name: "s3-region", Usage: "the bucket's region (default: AWS_REGION)"},
		&cli.DurationFlag{Name: "warc-upload-wait", Value: 2 * time.Minute, Usage: "at the end, how long to wait for the last uploads; " +
			"files not uploaded by then are left in --warc-dir, and the worker says which and exits non-zero"},
	}
}

// checkUploadFlags refuses --warc-upload without --warc-dir, or with a
// target or endpoint that is not one.
func checkUploadFlags(c *cli.Context) error {
	t := c.String("warc-upload")
	if t == "" {
		if c.IsSet("s3-endpoint") || c.IsSet("s3-region") {
			return errors.New("--s3-endpoint and --s3-region are for --warc-upload")
		}
		return nil
	}
	if c.String("warc-dir") == "" {
		return errors.New("--warc-upload needs --warc-dir: the files are written there first, then uploaded")
	}
	if _, err := upload.New(upload.Config{Target: t, Endpoint: c.String("s3-endpoint")}); err != nil {
		return fmt.Errorf("--warc-upload: %v", strings.TrimPrefix(err.Error(), "upload: "))
	}
	return nil
}

// startUploads starts the process's uploader when --warc-upload asks for
// one: the files a past run left in the folder first, then each file as
// the worker closes it. finish waits for the last uploads (at most
// --warc-upload-wait) and returns an error naming the files left.
func startUploads(ctx context.Context, c *cli.Context, o *crawl.Options, log *slog.Logger) (finish func() error, err error) {
	t := c.String("warc-upload")
	if t == "" || o.WARC == nil {
		return func() error { return nil }, nil
	}
	up, err := upload.New(upload.Config{Target: t, Endpoint: c.String("s3-endpoint"), Region: c.String("s3-region"), Log: log})
	if err != nil {
		return nil, err
	}
	left, _ := filepath.Glob(filepath.Join(o.WARC.Dir, "*.warc.gz"))
	sort.Strings(left)
	for _, f := range left {
		up.Add(f)
	}
	if len(left) > 0 {
		log.Info("uploading the WARC files a past run left", "files", len(left), "to", up.Where(""))
	}
	o.WARC.Closed = up.Add
	uctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go up.Run(uctx)
	return func() error {
		defer cancel()
		wctx, stop := context.WithTimeout(uctx, c.Duration("warc-upload-wait"))
		defer stop()
		left := up.Finish(wctx)
		if len(left) == 0 {
			log.Info("every WARC file uploaded", "files", up.Uploaded(), "to", up.Where(""))
			return nil
		}
		names := make([]string, len(left))
		for i, f := range left {
			names[i] = filepath.Base(f)
		}
		return fmt.Errorf("%d WARC files not uploaded to %s within --warc-upload-wait %v, left in %s (the next 'work --warc-upload' there uploads them): %s",
			len(left), up.Where(""), c.Duration("warc-upload-wait"), o.WARC.Dir, strings.Join(names, ", "))
	}, nil
}
