// Package session is a crawl's login, shared by every worker on every
// machine: one session whose cookies live in Redis, and a single-flight
// re-login under a fenced lock when the site logs the crawl out.
//
// The protocol. The crawl's login (Config: the form's URL, the form, and
// what a logged-out answer looks like) is kept in Redis at seed time
// (keyspace.LoginKey). The session is a hash (keyspace.SessionKey): its
// generation gen, its state (ok, or failed and why), and its cookies, as
// the Set-Cookie headers the login's exchange was answered with and the
// URL of each answer. Each worker replays them into a cookie jar of its
// own (net/http/cookiejar with the public suffix list), so the cookies go
// to the hosts a browser would send them to, and with every request.
//
// A worker reads gen before a request. An answer that says the session is
// gone (Shared.LoggedOut: a 401, or a redirect whose target matches the
// crawl's --logged-out pattern) makes it call Renew(gen): its URL goes
// back, unrecorded, to be fetched again. Renew returns once the session
// is newer than gen. The first caller to take the lock (leader.Obtain,
// keyspace.SessionLockKey) reads gen again under it (a worker that lost
// the race finds the session already renewed and logs in no more), POSTs
// the form, and writes the new session through swap.lua, a fenced script
// (package fence): it runs only for the lock's current epoch, and writes
// only where the session is still the generation the worker saw. The
// others wait for the generation to move, or for the lock to be free
// again (its holder died: its lock lapses, and one of them takes it).
// However many requests see the same session end, it is renewed once.
//
// A login that fails (the form refused with an error status, an answer
// that is still the logged-out page, no cookie set) writes the session as
// failed, with why. That is final for the crawl: every worker that meets
// the logged-out page again stops its host (a record for each of its
// URLs that says so) rather than logging in again and again.
//
// A crash. A worker killed while it holds the lock holds nobody up for
// longer than the lock's time (LockTTL); one killed mid-login has written
// nothing. A holder paused past its lock's time (a GC pause, a stopped
// process) is fenced off: its write carries an epoch older than the
// counter's, and is refused.
//
// The form is a secret. It is kept in Redis, where anyone who can read
// the crawl's keys can read it (a Redis ACL user of its own restricts
// that: docs/design.md), and nowhere else: Config.String leaves it out,
// and no record, event, log line, status or dashboard shows it. The
// session's cookies are secrets of the same kind, kept beside it.
package session
