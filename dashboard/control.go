package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redis/go-redis/v9"
)

// The dashboard's controls (Config.Control, which needs a token): pause
// and resume the crawl, pause or block one host, each the same step as
// the command line's (admin.Pause, admin.Resume, admin.ChangeHost) and an
// event naming "the dashboard" and the caller's address. A control is a
// POST whose token travels in the Authorization header, from the page's
// own origin: a page of another site can neither send that header
// without a CORS preflight, which the dashboard never answers, nor pass
// the origin check (CSRF). A GET changes nothing, controls or not.

// controlPause is how long the page's "pause host" pauses it.
const controlPause = 10 * time.Minute

// controlBody is a control's request: for /api/control/host, the host
// and "pause" or "block".
type controlBody struct {
	Host   string `json:"host"`
	Action string `json:"action"`
}

// controls adds the control endpoints to mux.
func controls(mux *http.ServeMux, c redis.UniversalClient, cfg Config) {
	do := func(w http.ResponseWriter, r *http.Request, act func(ctx context.Context, by string, b controlBody) (string, error)) {
		if err := controlAllowed(r, cfg.Token); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		var b controlBody
		if r.ContentLength != 0 {
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&b); err != nil {
				http.Error(w, "a control's body is JSON: {\"host\": \"example.org\", \"action\": \"pause\"|\"block\"|\"clear\"}", http.StatusBadRequest)
				return
			}
		}
		by := "the dashboard (" + remoteHost(r) + ")"
		said, err := act(r.Context(), by, b)
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, admin.ErrHost) || errors.Is(err, errAction) {
				status = http.StatusBadRequest
			}
			http.Error(w, err.Error(), status)
			return
		}
		cfg.Log.Info("dashboard control", "by", by, "did", said)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"did": said})
	}
	mux.HandleFunc("POST /api/control/pause", func(w http.ResponseWriter, r *http.Request) {
		do(w, r, func(ctx context.Context, by string, _ controlBody) (string, error) {
			changed, err := admin.Pause(ctx, c, cfg.Crawl, by)
			return heldSaid("paused", changed), err
		})
	})
	mux.HandleFunc("POST /api/control/resume", func(w http.ResponseWriter, r *http.Request) {
		do(w, r, func(ctx context.Context, by string, _ controlBody) (string, error) {
			changed, err := admin.Resume(ctx, c, cfg.Crawl, by)
			return heldSaid("resumed", changed), err
		})
	})
	mux.HandleFunc("POST /api/control/host", func(w http.ResponseWriter, r *http.Request) {
		do(w, r, func(ctx context.Context, by string, b controlBody) (string, error) {
			host, err := admin.NormalizeHost(b.Host)
			if err != nil {
				return "", err
			}
			ch := admin.HostChange{By: by}
			switch b.Action {
			case "pause":
				ch.Pause = controlPause
			case "block":
				ch.Block = true
			case "clear":
				ch.Clear = true // its pause or block lifted, its own rate dropped
			default:
				return "", fmt.Errorf("%w %q: pause, block or clear", errAction, b.Action)
			}
			did, err := admin.ChangeHost(ctx, c, cfg.Crawl, host, ch)
			return strings.Join(did, "; "), err
		})
	})
}

// errAction: a host control names no action it knows.
var errAction = errors.New("no such action")

// heldSaid says what a pause or resume did.
func heldSaid(what string, changed bool) string {
	if changed {
		return "the crawl is " + what
	}
	return "the crawl was " + what + " already"
}

// controlAllowed: r carries the token in its Authorization header (not
// the query, which a link or a form of another page could carry) and
// comes from the dashboard's own origin, by its Origin header (or, where
// a browser sends none, by Sec-Fetch-Site).
func controlAllowed(r *http.Request, token string) error {
	h := r.Header.Get("Authorization")
	if token == "" || !strings.HasPrefix(h, "Bearer ") || !sameSecret(h[len("Bearer "):], token) {
		return errors.New("a control needs the dashboard's token in an Authorization: Bearer header")
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return fmt.Errorf("a control from another origin (%s) is refused", o)
		}
		return nil
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return fmt.Errorf("a control from another site (%s) is refused", s)
	}
	return nil
}

// remoteHost is the address a request came from, without its port.
func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}
