package keyspace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ScriptError is an ErrScript with what Redis said.
type ScriptError struct {
	Script string // which call: "exchange", "sweep"
	Reply  string // Redis's error reply
}

func (e *ScriptError) Error() string {
	return fmt.Sprintf("frontier: the %s script cannot run: %s", e.Script, e.Reply)
}
func (e *ScriptError) Unwrap() error { return ErrScript }

// ScriptErr is err as an ErrScript when it is one, else nil: a
// script's own refusal (an error reply beginning CORRUPT or NOPERM), or a
// script that failed running, on an error of its own or of a command it
// called (Redis 7 says where: "… script: SHA, on @user_script:LINE."; before
// 7: "Error running script"; miniredis: "<string>:LINE: …"; a key of the
// wrong kind: WRONGTYPE). A command's error that says Redis is busy or away
// for now keeps its own code (OOM, BUSY, READONLY, LOADING …) and is not
// one: those are tried again.
func ScriptErr(script string, err error) error {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return nil
	}
	msg := reply.Error()
	code, _, _ := strings.Cut(msg, " ")
	switch {
	case code == "CORRUPT" || code == "NOPERM" || code == "WRONGTYPE":
	case forNow[code]:
		return nil
	case strings.Contains(msg, "user_script:") || strings.Contains(msg, "Error running script") || strings.HasPrefix(msg, "<string>:"):
	default:
		return nil
	}
	return &ScriptError{Script: script, Reply: msg}
}

// forNow are the error codes of a Redis busy or away for now.
var forNow = map[string]bool{"OOM": true, "BUSY": true, "LOADING": true, "READONLY": true, "MASTERDOWN": true, "TRYAGAIN": true,
	"CLUSTERDOWN": true, "NOREPLICAS": true, "MISCONF": true, "NOSCRIPT": true, "MOVED": true, "ASK": true, "GONE": true}
