package leader_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The tests start copies of this test binary as separate OS processes; the
// environment tells a copy which role to play instead of running tests.
func TestMain(m *testing.M) {
	switch os.Getenv("LEADER_TEST_ROLE") {
	case "":
		os.Exit(m.Run())
	case "incrementer":
		os.Exit(runIncrementer())
	case "candidate":
		os.Exit(runCandidate())
	default:
		fmt.Fprintln(os.Stderr, "unknown LEADER_TEST_ROLE")
		os.Exit(2)
	}
}

func envInt(name string) int {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		panic(name + ": " + err.Error())
	}
	return n
}

func helperClient() *redis.Client {
	opt, err := redis.ParseURL(os.Getenv("LEADER_TEST_REDIS"))
	if err != nil {
		panic(err)
	}
	return redis.NewClient(opt)
}

// startHelper starts a copy of the test binary in role, with its stdout piped.
func startHelper(t *testing.T, role string, env ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command(redistest.Self(t), "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"LEADER_TEST_ROLE=" + role}, env...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewReader(out)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
