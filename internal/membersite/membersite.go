// Package membersite is a site behind a login, for the tests of a
// crawl's shared session (package session): a form at /login, member
// pages at /members/N that link to the next ones, and sessions that end
// after a set number of requests, as a site's sessions expire.
package membersite

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Site is the site's state. Make it with New; it is an http.Handler.
type Site struct {
	User, Password string
	Pages          int // member pages: /members/0 … /members/Pages-1
	// Expiry is how many member pages a session answers before it ends
	// (0: never): the next request with it is sent to /login.
	Expiry int
	// Unauthorized answers a logged-out request 401 instead of a redirect.
	Unauthorized bool
	// Refusing takes the form but no session it gives: every member
	// request is logged out.
	Refusing bool
	// Scripted makes a member page a script that asks /api/members/N
	// (with the session: the API is for members too) for its content and
	// links, as a page that needs a browser does.
	Scripted bool

	mu       sync.Mutex
	sessions map[string]int // session id -> member pages it answered
	posts    int
	served   map[int]int // member page -> times answered with its content
	api      int         // API requests answered with content
	refused  int         // member requests answered as logged out
}

// New is a site of pages member pages whose sessions end after expiry
// requests, for user and password.
func New(user, password string, pages, expiry int) *Site {
	return &Site{User: user, Password: password, Pages: pages, Expiry: expiry,
		sessions: map[string]int{}, served: map[int]int{}}
}

// Posts is how many logins were POSTed, right or wrong.
func (s *Site) Posts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts
}

// Served is how many times member page n was answered with its content.
func (s *Site) Served(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[n]
}

// API is how many API requests (Scripted) were answered with content.
func (s *Site) API() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.api
}

// Refused is how many member requests were answered as logged out.
func (s *Site) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Content is what member page n says: the text a test checks it got.
func Content(n int) string { return fmt.Sprintf("member page %d, for members only", n) }

// LoginPage is the text of the login form.
const LoginPage = "please log in"

func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/login" && r.Method == http.MethodPost:
		s.login(w, r)
	case r.URL.Path == "/login":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><body><p>%s</p><form method="post" action="/login"><input name="user"><input name="password" type="password"></form></body></html>`, LoginPage)
	case r.URL.Path == "/" || r.URL.Path == "/home":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body><a href="/members/0">members</a> <a href="/login">log in</a></body></html>`)
	case strings.HasPrefix(r.URL.Path, "/members/"), strings.HasPrefix(r.URL.Path, "/api/members/"):
		s.member(w, r)
	default:
		http.NotFound(w, r)
	}
}

// login checks the form: a session cookie and a redirect home for the
// right one, the form again for a wrong one.
func (s *Site) login(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.posts++
	s.mu.Unlock()
	if r.ParseForm() != nil || r.PostForm.Get("user") != s.User || r.PostForm.Get("password") != s.Password {
		http.Redirect(w, r, "/login?failed=1", http.StatusSeeOther)
		return
	}
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	s.mu.Lock()
	s.sessions[id] = 0
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "sid", Value: id, Path: "/", HttpOnly: true})
	http.Redirect(w, r, "/home", http.StatusSeeOther)
}

// member answers member page n to a live session, and counts the
// request against it; any other is logged out.
func (s *Site) member(w http.ResponseWriter, r *http.Request) {
	api := strings.HasPrefix(r.URL.Path, "/api/")
	n, err := strconv.Atoi(r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
	if err != nil || n < 0 || n >= s.Pages {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	ok := false
	if c, err := r.Cookie("sid"); err == nil {
		if used, live := s.sessions[c.Value]; live && !s.Refusing && (s.Expiry == 0 || used < s.Expiry) {
			s.sessions[c.Value], ok = used+1, true
			if api {
				s.api++
			} else {
				s.served[n]++
			}
		}
	}
	if !ok {
		s.refused++
	}
	s.mu.Unlock()
	if !ok {
		if s.Unauthorized {
			http.Error(w, LoginPage, http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, "/login?next="+r.URL.Path, http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	if s.Scripted && !api {
		fmt.Fprintf(w, `<html><body><div id="app"></div><script>fetch('/api/members/%d').then(r => r.text()).then(t => { document.getElementById('app').innerHTML = t })</script></body></html>`, n)
		return
	}
	if !api {
		fmt.Fprint(w, "<html><body>")
	}
	fmt.Fprintf(w, "<p>%s</p>", Content(n))
	for _, m := range []int{2*n + 1, 2*n + 2} {
		if m < s.Pages {
			fmt.Fprintf(w, `<a href="/members/%d">page %d</a> `, m, m)
		}
	}
	fmt.Fprint(w, `<a href="/login">log in</a>`)
	if !api {
		fmt.Fprint(w, "</body></html>")
	}
}
