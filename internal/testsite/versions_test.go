package testsite

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// get asks for u with the given request headers, and returns the status,
// the response's headers and its body.
func get(t *testing.T, u string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// A versioned page carries its validators and answers a conditional
// request 304 while it is as the crawler saw it; Change moves a fraction
// of the pages on, which then answer 200 with their new version, and
// /_truth?versions says which version of each page is current.
func TestVersionedPagesAnswerConditionalRequests(t *testing.T) {
	s, err := Start(Config{Hosts: 2, Pages: 200, Versioned: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type seen struct {
		etag, modified string
	}
	first := map[string]seen{}
	for h := range s.Hosts() {
		for n := 0; n < 200; n++ {
			u := fmt.Sprintf("http://%s/p/%d.html", s.Hosts()[h], n)
			code, hdr, body := get(t, u)
			if code != 200 || hdr.Get("ETag") == "" || hdr.Get("Last-Modified") == "" || !strings.Contains(body, "<p>version 0</p>") {
				t.Fatalf("%s: %d %v %q; want version 0 with its validators", u, code, hdr, body)
			}
			first[u] = seen{hdr.Get("ETag"), hdr.Get("Last-Modified")}
		}
	}
	u0 := fmt.Sprintf("http://%s/p/0.html", s.Hosts()[0])
	for _, h := range [][]string{{"If-None-Match", first[u0].etag}, {"If-None-Match", `"x", W/` + first[u0].etag},
		{"If-Modified-Since", first[u0].modified}} {
		if code, _, body := get(t, u0, h...); code != http.StatusNotModified || body != "" {
			t.Errorf("%s with %v: %d %q; want 304 and no body", u0, h, code, body)
		}
	}
	if code, _, _ := get(t, u0, "If-None-Match", `"other"`, "If-Modified-Since", first[u0].modified); code != 200 {
		t.Errorf("an ETag that does not match: %d; want 200 (If-None-Match decides, not the date)", code)
	}
	changed := s.Change(0.1)
	if n := len(changed); n < 400*5/100 || n > 400*15/100 {
		t.Fatalf("%d of 400 pages changed; want about 10 %%", n)
	}
	isChanged := map[string]bool{}
	for _, u := range changed {
		isChanged[u] = true
	}
	var versions map[string]Version
	_, _, body := get(t, "http://"+s.Hosts()[0]+"/_truth?versions")
	if err := json.Unmarshal([]byte(body), &versions); err != nil || len(versions) != 400 {
		t.Fatalf("/_truth?versions: %d versions, %v", len(versions), err)
	}
	bytesBefore, notModBefore := s.Stats().Bytes, s.Stats().NotModified
	for u, was := range first {
		code, hdr, body := get(t, u, "If-None-Match", was.etag)
		byDate, _, _ := get(t, u, "If-Modified-Since", was.modified)
		want := 0
		if isChanged[u] {
			want = 1
		}
		if versions[u].Version != want {
			t.Errorf("%s: /_truth?versions says version %d; want %d", u, versions[u].Version, want)
		}
		switch {
		case !isChanged[u] && (code != http.StatusNotModified || byDate != http.StatusNotModified):
			t.Errorf("%s, unchanged: %d by ETag, %d by date; want 304", u, code, byDate)
		case isChanged[u] && (code != 200 || byDate != 200 || hdr.Get("ETag") == was.etag || !strings.Contains(body, "<p>version 1</p>")):
			t.Errorf("%s, changed: %d by ETag (%s), %d by date, %q; want 200 and version 1", u, code, hdr.Get("ETag"), byDate, body)
		case isChanged[u] && hdr.Get("ETag") != versions[u].ETag:
			t.Errorf("%s: ETag %s; /_truth?versions says %s", u, hdr.Get("ETag"), versions[u].ETag)
		}
	}
	st := s.Stats()
	if got, want := st.NotModified-notModBefore, 2*(400-len(changed)); got != want {
		t.Errorf("%d 304s counted; want %d", got, want)
	}
	if st.Bytes <= bytesBefore {
		t.Errorf("the changed pages' bodies were not counted (%d bytes, %d before)", st.Bytes, bytesBefore)
	}
	if truth := s.Truth(); len(truth) == 0 || !strings.Contains(strings.Join(truth, " "), u0) {
		t.Errorf("the truth lost its pages: %d URLs", len(truth))
	}
}

// With ChangeEvery, hot pages (N%10 == 0) change every period, warm ones
// (N%10 == 1) every fourth, the others never; a page's Last-Modified is
// when it took its version.
func TestPagesChangeByThemselvesAtTheirRates(t *testing.T) {
	s, err := Start(Config{Hosts: 1, Pages: 20, ChangeEvery: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := s.started.Add(9*time.Minute + time.Second) // nine periods on
	for n, want := range map[int]int{0: 9, 10: 9, 1: 2, 11: 2, 2: 0, 5: 0, 19: 0} {
		v := s.version(0, n, at)
		if v.Version != want {
			t.Errorf("page %d nine periods on: version %d; want %d", n, v.Version, want)
		}
		if wantMod := s.started.Add(time.Duration(want*changeClass(n)) * time.Minute); !v.Modified.Equal(wantMod) {
			t.Errorf("page %d: modified %v; want %v", n, v.Modified, wantMod)
		}
	}
	if code, hdr, _ := get(t, fmt.Sprintf("http://%s/p/3.html", s.Hosts()[0])); code != 200 || hdr.Get("ETag") != `"3-v0"` {
		t.Errorf("ChangeEvery alone versions the pages: %d, ETag %q", code, hdr.Get("ETag"))
	}
}

// POST /_change?fraction=F is Change(F) from outside the process (for a
// site run as `crawler testsite --versioned`); anything else is refused.
func TestChangeOverHTTP(t *testing.T) {
	s, err := Start(Config{Hosts: 1, Pages: 100, Versioned: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := "http://" + s.Hosts()[0]
	resp, err := http.Post(base+"/_change?fraction=0.5", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	err = json.NewDecoder(resp.Body).Decode(&changed)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(changed) < 25 || len(changed) > 75 {
		t.Fatalf("POST /_change?fraction=0.5: %d, %d URLs, %v", resp.StatusCode, len(changed), err)
	}
	if v := s.Versions()[changed[0]]; v.Version != 1 {
		t.Errorf("%s: version %d after the change; want 1", changed[0], v.Version)
	}
	for _, bad := range []string{"fraction=2", "fraction=x", ""} {
		resp, err := http.Post(base+"/_change?"+bad, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST /_change?%s: %d; want 400", bad, resp.StatusCode)
		}
	}
	if code, _, _ := get(t, base+"/_change?fraction=0.1"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /_change: %d; want 405", code)
	}
	plain, err := Start(Config{Hosts: 1, Pages: 10, ListenBase: "127.0.0.30"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	resp, err = http.Post("http://"+plain.Hosts()[0]+"/_change?fraction=0.1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("POST /_change on a site not versioned: %d; want 409", resp.StatusCode)
	}
	if code, hdr, body := get(t, "http://"+plain.Hosts()[0]+"/p/1.html"); code != 200 || hdr.Get("ETag") != "" || strings.Contains(body, "version") {
		t.Errorf("a site not versioned serves validators or versions: %v %q", hdr, body)
	}
}
