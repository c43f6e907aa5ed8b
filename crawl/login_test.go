package crawl_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/membersite"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/session"
)

const loginSecret = "Zq-7-secret-of-the-form"

// loginCrawl seeds crawl name at site's first seeds member pages, with its
// login (the form's password password), and runs two workers of 4 loops
// at --rate inf, each archiving into a WARC directory of its own, to the
// crawl's end, within limit. It returns the workers' logs and WARC
// directories.
func loginCrawl(t *testing.T, s *redistest.Server, name string, site *membersite.Site, seeds int, password string, limit time.Duration) (string, []string) {
	t.Helper()
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	set := settings.Default()
	set.Rate, set.AllowPrivate = math.Inf(1), true
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var urls []*url.URL
	for n := range seeds {
		u, _ := url.Parse(fmt.Sprintf("%s/members/%d", srv.URL, n))
		urls = append(urls, u)
	}
	if _, err := admin.Seed(ctx, s.Client, name, set, urls); err != nil {
		t.Fatal(err)
	}
	cfg := session.Config{URL: srv.URL + "/login", Form: "user=alice&password=" + url.QueryEscape(password), LoggedOut: "/login"}
	if err := session.Save(ctx, s.Client, keyspace.LoginKey(name), cfg); err != nil {
		t.Fatal(err)
	}
	var logs syncBuf
	var opts []crawl.Options
	var dirs []string
	for _, id := range []string{"w1", "w2"} {
		o := fastOptions(id)
		o.Log = slog.New(slog.NewTextHandler(&logs, nil))
		dirs = append(dirs, t.TempDir())
		o.WARC = &archive.Config{Dir: dirs[len(dirs)-1]}
		opts = append(opts, o)
	}
	runWorkers(t, ctx, s, name, opts...)
	return logs.String(), dirs
}

// The acceptance of a crawl behind a login: 200 member pages of a site
// whose sessions end after 50 requests, two workers of 4 loops at --rate
// inf: every member page is recorded ok, archived with its own content
// (no response of the login page archived, no link taken from it), and
// the site saw at most 200/50 + 3 logins. On both Redis kinds.
func TestACrawlBehindALoginGetsEveryMemberPageWithItsOwnContent(t *testing.T) {
	wholeCrawl(t)
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		site := membersite.New("alice", loginSecret, 200, 50)
		logs, dirs := loginCrawl(t, s, "members", site, 1, loginSecret, 2*time.Minute)
		recs := exportedByURL(t, context.Background(), s.Client, "members")
		base := ""
		for u := range recs {
			if i := strings.Index(u, "/members/"); i > 0 {
				base = u[:i]
			}
		}
		for n := range 200 {
			rec, ok := recs[fmt.Sprintf("%s/members/%d", base, n)]
			if !ok || rec.Outcome != crawl.OutcomeOK || rec.Status != 200 {
				t.Errorf("member page %d: record %+v (found %v); want ok, 200", n, rec, ok)
			}
		}
		for u, rec := range recs {
			if strings.Contains(u, "/login") && (u != base+"/login" || rec.Outcome != crawl.OutcomeSkipped) {
				t.Errorf("%s recorded %s: the login's pages are not crawled, and no redirect to them is followed", u, rec.Outcome)
			}
		}
		archived := 0
		for _, dir := range dirs {
			eachWARCRecord(t, dir, func(r gowarc.Record) {
				if r.WarcRecord.Type() != gowarc.Response {
					return
				}
				target := r.WarcRecord.WarcHeader().Get(gowarc.WarcTargetURI)
				var n int
				if _, err := fmt.Sscanf(target[strings.LastIndex(target, "/")+1:], "%d", &n); err != nil || !strings.Contains(target, "/members/") {
					t.Errorf("a response of %s archived", target)
					return
				}
				body := blockText(t, r)
				if !strings.Contains(body, membersite.Content(n)) || strings.Contains(body, membersite.LoginPage) {
					t.Errorf("%s archived without its own content: %.200q", target, body)
				}
				archived++
			})
		}
		if archived < 200 {
			t.Errorf("%d member pages archived; want 200", archived)
		}
		if most := 200/50 + 3; site.Posts() > most {
			t.Errorf("%d logins; at most %d", site.Posts(), most)
		}
		t.Logf("%d logins, %d member requests answered as logged out", site.Posts(), site.Refused())
		if strings.Contains(logs, loginSecret) {
			t.Errorf("the form's password is in the workers' logs")
		}
	})
}

// blockText is a WARC record's block, whole.
func blockText(t *testing.T, r gowarc.Record) string {
	t.Helper()
	rd, err := r.WarcRecord.Block().RawBytes()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A wrong password: the crawl ends, within a minute, with every URL of the
// site recorded as not fetched and why; the workers' logs say so in one
// line; the password is in no record, event, log line or Redis key but
// the login's own.
func TestACrawlWhoseLoginFailsEndsWithEveryURLRecordedAndWhy(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		site := membersite.New("alice", "the-right-one", 50, 0)
		logs, _ := loginCrawl(t, s, "wrong", site, 20, loginSecret, time.Minute)
		ctx := context.Background()
		recs := exportedByURL(t, ctx, s.Client, "wrong")
		for u, rec := range recs {
			if rec.Outcome != crawl.OutcomeSkipped || !strings.Contains(rec.Error, "login failed") {
				t.Errorf("%s: %s, %q; want skipped, the login's failure said", u, rec.Outcome, rec.Error)
			}
		}
		if len(recs) != 20 {
			t.Errorf("%d records; want the 20 seeds'", len(recs))
		}
		if n := strings.Count(logs, "login failed"); n != 1 {
			t.Errorf("%d log lines say the login failed; want 1:\n%s", n, logs)
		}
		if site.Posts() != 1 {
			t.Errorf("%d logins; want 1", site.Posts())
		}
		if strings.Contains(logs, loginSecret) {
			t.Error("the password is in the workers' logs")
		}
		st, err := status.Read(ctx, s.Client, "wrong")
		if err != nil {
			t.Fatal(err)
		}
		if line := st.String(); !strings.Contains(line, "login       at ") || !strings.Contains(line, "failed, the login ended at the logged-out page") || strings.Contains(line, loginSecret) {
			t.Errorf("status says of the login:\n%s\nwant it failed and why, and no password", line)
		}
		evs, err := events.New(s.Client, keyspace.Tag("wrong", 0)+"events").Read(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if strings.Contains(e.Text, loginSecret) {
				t.Errorf("event %q shows the password", e.Text)
			}
		}
		for _, key := range s.Client.Keys(ctx, "*").Val() {
			if key == keyspace.LoginKey("wrong") {
				continue
			}
			if strings.Contains(valuesOf(ctx, s, key), loginSecret) || strings.Contains(key, loginSecret) {
				t.Errorf("key %q holds the password", key)
			}
		}
	})
}

// valuesOf is what key holds, as text, whatever its type.
func valuesOf(ctx context.Context, s *redistest.Server, key string) string {
	c := s.Client
	switch c.Type(ctx, key).Val() {
	case "string":
		return c.Get(ctx, key).Val()
	case "hash":
		return fmt.Sprint(c.HGetAll(ctx, key).Val())
	case "list":
		return fmt.Sprint(c.LRange(ctx, key, 0, -1).Val())
	case "set":
		return fmt.Sprint(c.SMembers(ctx, key).Val())
	case "zset":
		return fmt.Sprint(c.ZRange(ctx, key, 0, -1).Val())
	case "stream":
		return fmt.Sprint(c.XRange(ctx, key, "-", "+").Val())
	}
	return ""
}

// A render worker's pages go with the session too: the page itself, and
// the requests its script makes in the browser (answered through the
// worker's fetcher), here the member API that builds each page's content
// and links. Every member page is rendered, ok, and found by the links
// its script made.
func TestARenderWorkersPagesAndTheirScriptsGoWithTheSession(t *testing.T) {
	wholeCrawl(t)
	needChromium(t)
	s := redistest.Real(t)
	site := membersite.New("alice", loginSecret, 20, 0)
	site.Scripted = true
	srv := httptest.NewServer(site)
	defer srv.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate, set.Render = 1000, true, settings.RenderAlways
	first, _ := url.Parse(srv.URL + "/members/0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := admin.Seed(ctx, s.Client, "rendered", set, []*url.URL{first}); err != nil {
		t.Fatal(err)
	}
	cfg := session.Config{URL: srv.URL + "/login", Form: "user=alice&password=" + loginSecret, LoggedOut: "/login"}
	if err := session.Save(ctx, s.Client, keyspace.LoginKey("rendered"), cfg); err != nil {
		t.Fatal(err)
	}
	o := fastOptions("r1")
	o.Render = &crawl.RenderOptions{Tabs: 2, PageTimeout: 10 * time.Second}
	runWorkers(t, ctx, s, "rendered", o)
	recs := exportedByURL(t, ctx, s.Client, "rendered")
	for n := range 20 {
		rec := recs[fmt.Sprintf("%s/members/%d", srv.URL, n)]
		if rec.Outcome != crawl.OutcomeOK || rec.Render == nil {
			t.Errorf("member page %d: %s, rendered %v, %q; want ok and rendered", n, rec.Outcome, rec.Render != nil, rec.Error)
		}
	}
	if site.API() < 20 || site.Posts() != 1 {
		t.Errorf("%d API requests answered with the session, %d logins; want one a page, one login", site.API(), site.Posts())
	}
}
