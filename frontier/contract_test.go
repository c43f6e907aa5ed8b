package frontier

import (
	flagpkg "flag"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var update = flagpkg.Bool("update", false, "write contract.lua anew from contract.go's declarations")

// contract.lua is what contract.go's declarations make (go generate
// writes it; this test with -update does): the scripts read keys and a
// finished page's numbers by the places Go sends them in, declared once.
func TestTheLuaContractIsCurrent(t *testing.T) {
	want := contractLua()
	if *update {
		if err := os.WriteFile("exchange/contract.lua", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("exchange/contract.lua")
	if err != nil || string(got) != want {
		t.Fatalf("contract.lua is not what contract.go declares (%v): run 'go generate ./frontier'", err)
	}
	for i, n := range doneNames {
		if n == "" {
			t.Errorf("doneArgs' field %d has no name in doneNames", i)
		}
	}
}

// The exchange's and the sweep's arguments travel as one JSON object by
// name (exchangeArgs, for exchange.lua, finish.lua, back.lua, handout.lua and take.lua; scheduleArgs):
// every field Go sends is read by the scripts' Lua (as A.name), and every
// A.name the Lua reads is a field Go sends (the sweep's epoch aside: the
// fence's ARGV[1]).
func TestTheScriptsArgumentsAreReadByTheNamesSent(t *testing.T) {
	for _, c := range []struct {
		scripts []string
		args    any
		own     string
	}{{[]string{"exchange", "finish", "back", "handout", "take"}, exchangeArgs{}, ""}, {[]string{"schedule", "schedule_end"}, scheduleArgs{}, "epoch"}} {
		sent := map[string]bool{}
		rt := reflect.TypeOf(c.args)
		for i := range rt.NumField() {
			if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				sent[name] = true
			}
		}
		read := map[string]bool{}
		for _, name := range c.scripts {
			src, err := lua.Join(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`\bA\.([a-z_]+)`).FindAllStringSubmatch(src, -1) {
				read[m[1]] = true
			}
		}
		for name := range read {
			if !sent[name] && name != c.own {
				t.Errorf("%v's Lua reads A.%s, which %T does not send", c.scripts, name, c.args)
			}
		}
		for name := range sent {
			if !read[name] {
				t.Errorf("%T sends %q, which %v's Lua never reads", c.args, name, c.scripts)
			}
		}
	}
}
