// Package sigv4 checks that a request to an S3-compatible store was signed
// with AWS Signature Version 4 by the holder of a secret: the test store's
// (crawler teststore) way of refusing anonymous requests when it listens
// beyond loopback. It checks the Authorization header's signature over the
// headers it names (the seed signature of a chunked upload included),
// within 15 minutes of the request's date; presigned URLs are refused.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// ErrDenied: the request is not signed, or not by these credentials.
var ErrDenied = errors.New("sigv4: request not signed with the store's credentials")

// Skew is how far a request's date may be from the store's clock.
const Skew = 15 * time.Minute

const algorithm = "AWS4-HMAC-SHA256"

// Check reports whether r was signed by accessKey with secretKey at a date
// within Skew of now; its error wraps ErrDenied and says what was wrong.
func Check(r *http.Request, accessKey, secretKey string, now time.Time) error {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return fmt.Errorf("%w: no Authorization header (a presigned URL or an anonymous request)", ErrDenied)
	}
	rest, ok := strings.CutPrefix(auth, algorithm+" ")
	if !ok {
		return fmt.Errorf("%w: not %s", ErrDenied, algorithm)
	}
	var credential, signedHeaders, signature string
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			credential = v
		case "SignedHeaders":
			signedHeaders = v
		case "Signature":
			signature = v
		}
	}
	scope := strings.SplitN(credential, "/", 2) // access key, date/region/service/aws4_request
	if len(scope) != 2 || signature == "" || signedHeaders == "" {
		return fmt.Errorf("%w: a malformed Authorization header", ErrDenied)
	}
	if !subtleEq(scope[0], accessKey) {
		return fmt.Errorf("%w: unknown access key %q", ErrDenied, scope[0])
	}
	parts := strings.Split(scope[1], "/")
	if len(parts) != 4 || parts[3] != "aws4_request" {
		return fmt.Errorf("%w: a malformed credential scope %q", ErrDenied, scope[1])
	}
	amzDate := r.Header.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || !strings.HasPrefix(amzDate, parts[0]) {
		return fmt.Errorf("%w: X-Amz-Date %q missing, malformed or not the scope's day", ErrDenied, amzDate)
	}
	if d := now.Sub(at); d > Skew || d < -Skew {
		return fmt.Errorf("%w: signed at %s, %v from the store's clock", ErrDenied, amzDate, d.Round(time.Second))
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return fmt.Errorf("%w: no X-Amz-Content-Sha256 header", ErrDenied)
	}
	canonical := strings.Join([]string{r.Method, canonicalPath(r.URL), canonicalQuery(r.URL.Query()),
		canonicalHeaders(r, strings.Split(signedHeaders, ";")), signedHeaders, payload}, "\n")
	sum := sha256.Sum256([]byte(canonical))
	toSign := strings.Join([]string{algorithm, amzDate, scope[1], hex.EncodeToString(sum[:])}, "\n")
	key := []byte("AWS4" + secretKey)
	for _, p := range parts {
		key = mac(key, p)
	}
	if !hmac.Equal([]byte(hex.EncodeToString(mac(key, toSign))), []byte(signature)) {
		return fmt.Errorf("%w: the signature does not match", ErrDenied)
	}
	return nil
}

func mac(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

func subtleEq(a, b string) bool { return hmac.Equal([]byte(a), []byte(b)) }

// canonicalPath is the path as sent, encoded once (S3 does not encode it
// twice).
func canonicalPath(u *url.URL) string {
	if p := u.EscapedPath(); p != "" {
		return p
	}
	return "/"
}

// canonicalQuery sorts the parameters, each name and value encoded.
func canonicalQuery(q url.Values) string {
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, encode(k)+"="+encode(v))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// encode is RFC 3986 encoding: every byte but the unreserved ones.
func encode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// canonicalHeaders are the signed headers, "name:value\n" each, their
// values' runs of spaces made one; host is the request's Host.
func canonicalHeaders(r *http.Request, names []string) string {
	var b strings.Builder
	for _, n := range names {
		var vals []string
		switch vals = r.Header.Values(n); {
		case n == "host":
			vals = []string{r.Host}
		case n == "content-length" && len(vals) == 0:
			vals = []string{fmt.Sprint(r.ContentLength)}
		}
		for i, v := range vals {
			vals[i] = strings.Join(strings.Fields(v), " ")
		}
		b.WriteString(n + ":" + strings.Join(vals, ",") + "\n")
	}
	return b.String()
}

// Require serves next only the requests signed by accessKey with
// secretKey; the others get S3's AccessDenied (403), saying why.
func Require(accessKey, secretKey string, now func() time.Time, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Check(r, accessKey, secretKey, now()); err != nil {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>%s</Message></Error>", xmlEscape(err.Error()))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
