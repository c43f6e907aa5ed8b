package script_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	_ "github.com/redcrawl/crawler/alternatives"
	_ "github.com/redcrawl/crawler/dedup"
	_ "github.com/redcrawl/crawler/fence"
	_ "github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/script"
	_ "github.com/redcrawl/crawler/leader"
	_ "github.com/redcrawl/crawler/politeness"
)

// Every script the crawler sends Redis, as it is sent (its modules
// joined): each function it calls is defined before the call, in what it
// requires. Its length is logged (go test -v), largest first.
func TestEveryScriptDefinesWhatItCalls(t *testing.T) {
	all := script.Scripts()
	if len(all) < 30 {
		t.Fatalf("%d scripts made through internal/script; want every script of the crawler (30 and more)", len(all))
	}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	lines := func(name string) int { return strings.Count(all[name], "\n") + 1 }
	sort.Slice(names, func(i, j int) bool {
		return lines(names[i]) > lines(names[j]) || lines(names[i]) == lines(names[j]) && names[i] < names[j]
	})
	for _, name := range names {
		t.Logf("%5d lines  %s", lines(name), name)
		if missing := script.Undefined(all[name]); len(missing) > 0 {
			t.Errorf("%s calls %v, defined nowhere before the call in what it requires", name, missing)
		}
	}
}

// Every Lua file of every library, a module as much as a script, joined
// with what it requires and nothing else, defines each function it calls:
// a file's requires line names all it uses, not only what its scripts
// happen to join before it.
func TestEveryLuaFileRequiresWhatItCalls(t *testing.T) {
	n := 0
	for _, lib := range script.Libs() {
		for _, name := range lib.Files() {
			src, err := lib.Join(name)
			if err != nil {
				t.Errorf("%s/%s.lua: %v", lib.Name(), name, err)
				continue
			}
			n++
			if missing := script.Undefined(src); len(missing) > 0 {
				t.Errorf("%s/%s.lua calls %v, which its requires lines do not bring", lib.Name(), name, missing)
			}
		}
	}
	if n < 40 {
		t.Fatalf("%d Lua files checked; want every file of every library (40 and more)", n)
	}
}

// Every script, as joined and linked, compiles in Redis's Lua: SCRIPT LOAD
// of each on a real redis-server and on miniredis, which compile without
// running. A link that cut a definition short, or kept a call of one it
// dropped at a place the census cannot see, is refused here.
func TestEveryScriptLoads(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		for name, src := range script.Scripts() {
			if err := s.Client.ScriptLoad(ctx, src).Err(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
}
