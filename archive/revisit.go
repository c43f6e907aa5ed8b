package archive

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"time"

	"github.com/nlnwa/gowarc/v3"
)

// Revisit records (WARC 1.1, section 6.7): a refetch whose content the
// archive holds already is written as a revisit record instead of a whole
// response. It keeps the response's status line and headers, carries the
// payload's digest, and refers to the earlier response by its URI
// (WARC-Refers-To-Target-URI) and date (WARC-Refers-To-Date), so that a
// replay tool finds the content there. Its profile says why no payload
// is kept:
//   - ServerNotModified: the server answered 304 Not Modified to a
//     conditional request, and sent no payload;
//   - IdenticalPayloadDigest: the server sent the payload whole, and its
//     digest is that of a response archived before (of the same URL, or
//     of another one with the same content).

// The revisit profiles.
const (
	ServerNotModified      = gowarc.ProfileServerNotModifiedV1_1
	IdenticalPayloadDigest = gowarc.ProfileIdenticalPayloadDigestV1_1
)

// Revisit says what a revisit record refers to.
type Revisit struct {
	Profile string    // ServerNotModified or IdenticalPayloadDigest
	URI     string    // the archived response's WARC-Target-URI
	Date    time.Time // and its WARC-Date
}

// of turns the response record resp into a revisit record.
func (r *Revisit) of(resp gowarc.WarcRecord) (gowarc.WarcRecord, error) {
	if r.URI == "" || r.Date.IsZero() {
		return nil, errors.New("a revisit needs the URI and date of the response it refers to")
	}
	return resp.ToRevisitRecord(&gowarc.RevisitRef{Profile: r.Profile, TargetUri: r.URI,
		TargetDate: r.Date.UTC().Format(time.RFC3339Nano)})
}

// PayloadDigest is the WARC-Payload-Digest that Write gives the response
// record of a captured response (fetch.Raw.Response): the SHA-1, in
// base32, of the bytes after its header, as they crossed the wire. It lets
// a caller look a payload up (a crawl-wide index) before writing it.
func PayloadDigest(response []byte) string {
	body := response
	if i := bytes.Index(response, []byte("\r\n\r\n")); i >= 0 {
		body = response[i+4:]
	} else {
		body = nil
	}
	sum := sha1.Sum(body)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}
