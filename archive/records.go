package archive

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nlnwa/gowarc/v3"
)

// DuplicateProfile is the metadata record's content type that marks a
// response as a duplicate (MarkDuplicate).
const DuplicateProfile = "application/warc-fields"

// MarkDuplicate writes a metadata record that refers to the response at
// loc (WARC-Refers-To its record id) and says why it is not the crawl's
// copy of url: a worker that lost its lease before its exchange archived
// a fetch that the crawl then gave to another worker, who archives its
// own. A reader that keeps one response a URL skips those referred to by
// such a record ("redcrawl-duplicate: yes").
func (w *Writer) MarkDuplicate(loc Location, url, why string) error {
	if loc.RecordID == "" {
		return errors.New("archive: no record id to refer to")
	}
	_, err := w.write(func() ([]gowarc.WarcRecord, error) {
		rb := gowarc.NewRecordBuilder(gowarc.Metadata, recordOptions...)
		fmt.Fprintf(rb, "redcrawl-duplicate: yes\r\nreason: %s\r\n", strings.NewReplacer("\r", " ", "\n", " ").Replace(why))
		rb.AddWarcHeader(gowarc.WarcTargetURI, url)
		rb.AddWarcHeaderTime(gowarc.WarcDate, time.Now())
		rb.AddWarcHeader(gowarc.ContentType, DuplicateProfile)
		rb.AddWarcHeader(gowarc.WarcRefersTo, loc.RecordID)
		r, _, err := rb.Build()
		if err != nil {
			return nil, fmt.Errorf("archive: metadata record for %s: %w", url, err)
		}
		return []gowarc.WarcRecord{r}, nil
	})
	return err
}

// Conversion writes a conversion record of url: body (of contentType),
// what the response at loc became once converted — a page's DOM after a
// browser ran its scripts — referring to that response record
// (WARC-Refers-To). It returns where the record is.
func (w *Writer) Conversion(loc Location, url string, date time.Time, contentType string, body []byte) (Location, error) {
	if loc.RecordID == "" {
		return Location{}, errors.New("archive: no record id to refer to")
	}
	var id string
	res, err := w.write(func() ([]gowarc.WarcRecord, error) {
		rb := gowarc.NewRecordBuilder(gowarc.Conversion, recordOptions...)
		if _, err := rb.Write(body); err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
		rb.AddWarcHeader(gowarc.WarcTargetURI, url)
		rb.AddWarcHeaderTime(gowarc.WarcDate, date)
		rb.AddWarcHeader(gowarc.ContentType, contentType)
		rb.AddWarcHeader(gowarc.WarcRefersTo, loc.RecordID)
		r, _, err := rb.Build()
		if err != nil {
			return nil, fmt.Errorf("archive: conversion record for %s: %w", url, err)
		}
		id = r.WarcHeader().Get(gowarc.WarcRecordID)
		return []gowarc.WarcRecord{r}, nil
	})
	if err != nil {
		return Location{}, err
	}
	return Location{File: strings.TrimSuffix(filepath.Base(res[0].FileName), ".open"), Offset: res[0].FileOffset,
		RecordID: id}, nil
}
