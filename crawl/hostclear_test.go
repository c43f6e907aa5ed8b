package crawl_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
)

// crawler host H --clear while two workers crawl H at 5/s lifts its pause
// at once for every worker: after --pause 60s, and after --block, the
// host's next request comes within 2 s of the command's return (a URL
// queued again after the block, as new links would be).
func TestAPauseOrABlockClearedWhileWorkersRunLiftsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("a crawl paused and cleared twice: skipped with -short")
	}
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		arrived := make(chan struct{}, 1000)
		site := newPageSite(t, 0, func(int64) { arrived <- struct{}{} })
		set := settings.Default()
		set.Rate, set.Burst, set.AllowPrivate = 5, 1, true
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.FollowWallClock(t)
		// Another host's URLs keep the crawl going while the first is
		// blocked (its queue ended), until the test has seen what it awaits.
		other := newPageSite(t, 0, nil)
		if _, err := admin.Seed(ctx, s.Client, "clear", set, append(site.seeds(300), other.seeds(150)...)); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			runWorkers(t, ctx, s, "clear", fastOptions("w1"), fastOptions("w2"))
		}()
		host := strings.TrimPrefix(site.URL, "http://")
		await := func(what string, within time.Duration) {
			t.Helper()
			select {
			case <-arrived:
			case <-time.After(within):
				t.Fatalf("%s: no request reached the host within %v", what, within)
			}
		}
		drain := func() {
			for {
				select {
				case <-arrived:
				default:
					return
				}
			}
		}
		change := func(ch admin.HostChange) time.Time {
			t.Helper()
			ch.By = "alice"
			if _, err := admin.ChangeHost(ctx, s.Client, "clear", host, ch); err != nil {
				t.Fatalf("ChangeHost(%+v): %v", ch, err)
			}
			return time.Now()
		}
		await("the crawl's start", 30*time.Second)
		change(admin.HostChange{Pause: time.Minute})
		drain() // a fetch under way when the pause came
		cleared := change(admin.HostChange{Clear: true})
		drain()
		await("after --pause 60s then --clear", 2*time.Second+time.Until(cleared))

		change(admin.HostChange{Block: true, Wait: 10 * time.Second})
		cleared = change(admin.HostChange{Clear: true})
		drain()
		more := site.seeds(310)[300:]
		if _, err := admin.Seed(ctx, s.Client, "clear", set, more); err != nil {
			t.Fatal(err)
		}
		await("after --block then --clear", 2*time.Second+time.Until(cleared))
		// The rest ends with records, and so does the other host's: the
		// crawl is over.
		change(admin.HostChange{Block: true, Wait: 10 * time.Second})
		if _, err := admin.ChangeHost(ctx, s.Client, "clear", strings.TrimPrefix(other.URL, "http://"), admin.HostChange{Block: true, By: "test", Wait: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}
