package wacz_test

import (
	"archive/zip"
	"bytes"
)

func zipReader(b []byte) (*zip.Reader, error) {
	return zip.NewReader(bytes.NewReader(b), int64(len(b)))
}
