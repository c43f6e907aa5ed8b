// Package leader elects one leader among many processes through a renewable
// Redis lock with fencing tokens.
//
// # The lock
//
// A lock is one Redis string, taken with SET NX PX inside acquire.lua. Its
// value is "<epoch>:<token>:<id>": the token is 128 random bits, so only the
// holder can match the value; refresh.lua and release.lua act only when the
// key still holds exactly that value (a client-side GET-compare-DEL could
// delete the next holder's lock between its calls).
//
// # Fencing
//
// Each successful acquire increments a counter at EpochKey(key) in the same
// script, and the new value is the holder's epoch, its fencing token. A
// leader that is paused (GC, SIGSTOP, a slow network) past its TTL cannot
// know it was replaced, so a lock alone cannot stop its late writes. The
// storage must: every script the leader runs to change shared state is a
// fence.Script (package fence), whose prelude refuses the write unless the
// caller's epoch is the newest minted. The counter is one key per lock, so it never grows in
// number; it is deleted with the crawl.
//
// # Election
//
// Elector.Campaign retries the acquire every RetryInterval until it wins, and
// returns a Leadership. A background loop renews every RenewInterval (TTL/3
// by default). The leader stops acting on its own, by cancelling the
// Leadership's Context, at the earliest of:
//
//   - a renewal finds the lock no longer ours (expired, or taken);
//   - the local deadline passes: the time the last successful renewal was
//     sent + TTL − SafetyMargin. The renewal was sent before Redis extended
//     the key, so the key lives at least until sent+TTL by Redis's clock; the
//     margin covers clock-rate drift. This fires even while a renewal hangs,
//     which is what makes "Redis unreachable" safe;
//   - Resign, which stops renewals before it releases the lock.
//
// Validity is never computed from the local clock alone in the other
// direction: a leadership is only extended by a server "yes". The local
// clock is Config.Clock, so tests run an election step by step on a fake
// one while Redis keeps real time.
//
// # Failure behaviour
//
// A leader killed with SIGKILL stops renewing; its lock expires after at most
// TTL, and a follower takes it at its next retry, with epoch+1. A leader
// that hangs is fenced off by the new epoch. When Redis is unreachable,
// Campaign returns the connection error and a sitting leader steps down at
// its local deadline.
//
// # Keys
//
//	<key>         the lock (string, PX TTL)
//	<key>:epoch   the fencing counter (string integer, no TTL)
//
// Give the key a hash tag ("crawl:{name}:leader") and the epoch key shares its
// Redis Cluster slot, as do other keys of the same crawl a fenced script writes.
package leader
