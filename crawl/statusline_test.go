package crawl_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/redistest"
)

// What status says of a crawl that ended: a one-off crawl shows no revisit
// schedule (it keeps one for 'crawler recrawl', and says so only once
// recrawled), and one ended by its page budget says so beside the URLs it
// left queued, and how to go on.
func TestStatusSaysWhyACrawlEnded(t *testing.T) {
	s := redistest.Mini(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		name     string
		budget   int64
		say, not []string
	}{
		{"whole", 0, []string{": done\n"}, []string{"revisits", "next due", "budget"}},
		{"budget", 5, []string{"done: its page budget is spent (5 pages", "the 15 URLs still queued were not fetched", "crawler set --max-pages N"},
			[]string{"revisits", "next due"}},
	} {
		site := newPageSite(t, 0, nil)
		set := settings.Default()
		set.Rate, set.AllowPrivate, set.MaxPages = math.Inf(1), true, c.budget
		if _, err := admin.Seed(ctx, s.Client, c.name, set, site.seeds(20)); err != nil {
			t.Fatal(err)
		}
		runWorkers(t, ctx, s, c.name, fastOptions("w1"))
		st, err := status.Read(ctx, s.Client, c.name)
		if err != nil {
			t.Fatal(err)
		}
		out := st.String()
		for _, want := range c.say {
			if !strings.Contains(out, want) {
				t.Errorf("%s: status lacks %q:\n%s", c.name, want, out)
			}
		}
		for _, not := range c.not {
			if strings.Contains(out, not) {
				t.Errorf("%s: status says %q:\n%s", c.name, not, out)
			}
		}
	}
}
