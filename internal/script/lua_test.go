package script_test

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/redcrawl/crawler/internal/script"
)

// A script is joined with what it requires, directly or not, each module
// once and before the files that require it; a module is found in a used
// library; a cycle or a missing module is an error naming the file.
func TestAScriptIsJoinedWithWhatItRequires(t *testing.T) {
	other := script.NewLib("other", fstest.MapFS{
		"bucket.lua": {Data: []byte("-- bucket\n\nlocal function take() end\n")},
	})
	lib := script.NewLib("pkg", fstest.MapFS{
		"keys.lua":  {Data: []byte("-- keys\n\nlocal function key() end\n")},
		"queue.lua": {Data: []byte("-- requires: keys\n-- queue\n\nlocal function pop() key() end\n")},
		"pop.lua":   {Data: []byte("-- pop: the script\n--\n-- requires: queue, bucket\n-- requires: keys\n\npop() take()\n")},
		"loop.lua":  {Data: []byte("-- requires: loop2\n")},
		"loop2.lua": {Data: []byte("-- requires: loop\n")},
		"lost.lua":  {Data: []byte("-- requires: nowhere\n")},
	}, other)
	src, err := lib.Join("pop")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(line, "-- ") && !strings.HasPrefix(line, "-- requires") && line != "-- " {
			order = append(order, strings.Fields(line)[1])
		}
	}
	if want := []string{"keys", "queue", "bucket", "pop:"}; !slices.Equal(order, want) {
		t.Fatalf("joined in the order %v; want %v\n%s", order, want, src)
	}
	if u := script.Undefined(src); len(u) != 0 {
		t.Fatalf("undefined in the joined script: %v", u)
	}
	if _, err := lib.Join("loop"); err == nil || !strings.Contains(err.Error(), "requires loop") {
		t.Fatalf("a cycle: %v; want an error naming it", err)
	}
	if _, err := lib.Join("lost"); err == nil || !strings.Contains(err.Error(), "pkg/lost.lua requires nowhere") {
		t.Fatalf("a missing module: %v; want an error naming the file", err)
	}
}

// Undefined finds a call of a function declared nowhere before it, and
// nothing else: locals, parameters, loop variables, methods, fields, Redis's
// Lua, and names in comments and strings are not calls of a missing one.
func TestUndefinedFindsTheCallsOfMissingFunctions(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []string
	}{
		{"local function a() b() end\nlocal function b() end", []string{"b"}},
		{"local function b() end\nlocal function a() b() end", nil},
		{"local f, g = 1, function() end\ng(f)", nil},
		{"local function run(guard) guard(1) end", nil},
		{"for i, fn in ipairs(t) do fn(i) end", nil},
		{"local t = {}\nt.x(1) t:y(2) string.format('%d', 1) redis.call('GET', KEYS[1]) tonumber('1')", nil},
		{"-- missing(1)\nlocal s = 'missing(2)' .. \"gone(3)\" .. [[nothere(4)]]\n--[[ absent(5) ]]", nil},
		{"if x then return (y) end\nlocal v = tb_take(1) + tb_take(2)", []string{"tb_take"}},
		{"function global_one() end\nglobal_one()", nil},
	} {
		if got := script.Undefined(c.src); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v; want %v", c.src, got, c.want)
		}
	}
}

// A script is sent with the definitions it reaches, and no other: a
// module's function that nothing the script runs calls is left out with
// its comment, one reached only through another is kept, a constant read
// is kept, a module's statement that defines nothing is kept with what it
// names, and a module of which nothing is reached is left out whole. Of
// a module Redis receives the code and the first line of its opening
// comment, not the comments of its definitions nor its blank lines (a
// definition holding a long comment goes whole); the script's own file
// goes whole.
func TestAScriptCarriesOnlyWhatItReaches(t *testing.T) {
	lib := script.NewLib("linked", fstest.MapFS{
		"mod.lua": {Data: []byte("-- mod: a module\n\n" +
			"local M_LIMIT = 3 -- read by used\n" +
			"local M_SPARE = 4\n" +
			"-- helper is called by used\n" +
			"local function helper(x)\n  --[[ a long comment,\n  return 0\n  ]]\n  return x\nend\n" +
			"-- used is called by the script\n" +
			"local function used(x)\n  return helper(x) + M_LIMIT\nend\n" +
			"-- unused: nothing calls it\n" +
			"local function unused()\n  return M_SPARE\nend\n" +
			"local registry = {}\n" +
			"registry.kind = kind()\n")},
		"kinds.lua": {Data: []byte("-- kinds\nlocal function kind() return 1 end\nlocal function other() return 2 end\n")},
		"idle.lua":  {Data: []byte("-- idle: required, never reached\nlocal function idle() end\n")},
		"run.lua":   {Data: []byte("-- requires: kinds idle mod\n-- run: the script\n\n-- its own comment\nreturn used(1)\n")},
	})
	src, err := lib.Join("run")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-- mod: a module", "local M_LIMIT = 3 -- read by used", "local function used",
		"local function helper(x)\n  --[[ a long comment,\n  return 0\n  ]]\n  return x\nend", // whole: its long comment's lines are not code
		"local registry", "registry.kind = kind()", "local function kind", "-- run: the script\n\n-- its own comment\nreturn used(1)"} {
		if !strings.Contains(src, want) {
			t.Errorf("the joined script lacks %q:\n%s", want, src)
		}
	}
	for _, gone := range []string{"M_SPARE", "unused", "nothing calls it", "other", "-- idle", "local function idle",
		"-- used is called", "\n\n-- mod"} {
		if strings.Contains(src, gone) {
			t.Errorf("the joined script carries %q, which it never reaches:\n%s", gone, src)
		}
	}
	if u := script.Undefined(src); len(u) != 0 {
		t.Fatalf("undefined in the joined script: %v\n%s", u, src)
	}
}
