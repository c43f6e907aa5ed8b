package keyspace

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

var _ redis.Error = replyErr("")

// Which error replies stop a worker (a script that cannot run, whatever
// trying again does) and which are tried again (Redis busy or away).
func TestScriptErrorsAreToldFromRedisAwayForNow(t *testing.T) {
	for msg, fatal := range map[string]bool{
		`CORRUPT crawl:{p}:stats field queued holds "abc", not a whole number`:                                              true,
		"NOPERM this user may not run XADD on crawl:{p}:results":                                                            true,
		"ERR user_script:271: attempt to perform arithmetic on local 'sp' (a nil value) script: 145c, on @user_script:271.": true,
		"ERR hash value is not an integer script: 145c, on @user_script:380.":                                               true,
		"WRONGTYPE Operation against a key holding the wrong kind of value script: 145c, on @user_script:95.":               true,
		"ERR Error running script (call to f_145c): @user_script:271: attempt to compare nil with number":                   true,
		"<string>:271: attempt to perform arithmetic on a nil value":                                                        true,
		"OOM command not allowed when used memory > 'maxmemory'. script: 0927, on @user_script:95.":                         false,
		"BUSY Redis is busy running a script.":                                                                              false,
		"LOADING Redis is loading the dataset in memory":                                                                    false,
		"READONLY You can't write against a read only replica. script: 0927, on @user_script:95.":                           false,
		"GONE the crawl is gone from Redis":                                                                                 false,
		"ERR max number of clients reached":                                                                                 false,
	} {
		err := ScriptErr("exchange", replyErr(msg))
		if (err != nil) != fatal || fatal && !errors.Is(err, ErrScript) {
			t.Errorf("%q: %v; want fatal %v", msg, err, fatal)
		}
	}
	if ScriptErr("exchange", errors.New("dial tcp: connection refused")) != nil {
		t.Error("a connection error is not a script's")
	}
}
