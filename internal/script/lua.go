package script

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A Lib is one package's Lua files: modules (functions other files call)
// and scripts (a body Redis runs). A file names the modules whose
// functions it calls on a line of its opening comment,
//
//	-- requires: queue tokens
//
// and a script is sent to Redis joined with what it requires, each module
// once, a module before the files that require it: a script loads only
// the Lua it uses, and its requires lines are the list of what is joined.
// A module of a library the Lib uses (another package's: politeness's
// token bucket, dedup's Bloom filter) is required by its name alone.
type Lib struct {
	name string
	fsys fs.FS
	uses []*Lib
}

// NewLib is the library of the .lua files at fsys's root, named name
// (the package's) in errors; uses are the libraries its files may
// require from.
func NewLib(name string, fsys fs.FS, uses ...*Lib) *Lib {
	l := &Lib{name: name, fsys: fsys, uses: uses}
	keptMu.Lock()
	defer keptMu.Unlock()
	libs = append(libs, l)
	return l
}

// Files are the names of the library's .lua files (without .lua).
func (l *Lib) Files() []string {
	names, _ := fs.Glob(l.fsys, "*.lua")
	for i, n := range names {
		names[i] = strings.TrimSuffix(n, ".lua")
	}
	return names
}

// Name is the library's name (its package's).
func (l *Lib) Name() string { return l.name }

// Libs are the libraries the program made, in the order made.
func Libs() []*Lib {
	keptMu.Lock()
	defer keptMu.Unlock()
	return slices.Clone(libs)
}

// Join is script name (its file's name without .lua) with every module it
// requires, directly or not, in front of it, a module before those that
// require it; of a module, only the definitions the script reaches (link).
func (l *Lib) Join(name string) (string, error) {
	var files []string
	done, open := map[string]bool{}, map[string]bool{}
	var add func(name, from string) error
	add = func(name, from string) error {
		if done[name] {
			return nil
		}
		if open[name] {
			return fmt.Errorf("script: %s/%s.lua requires %s, which requires it", l.name, from, name)
		}
		src, err := l.source(name)
		if err != nil {
			if from != "" {
				return fmt.Errorf("script: %s/%s.lua requires %s: %w", l.name, from, name, err)
			}
			return err
		}
		open[name] = true
		for _, r := range Requires(src) {
			if err := add(r, name); err != nil {
				return err
			}
		}
		open[name], done[name] = false, true
		files = append(files, src)
		return nil
	}
	if err := add(name, ""); err != nil {
		return "", err
	}
	return link(files), nil
}

// source is file name.lua of this library, else of the first library it
// uses that has it.
func (l *Lib) source(name string) (string, error) {
	b, err := fs.ReadFile(l.fsys, name+".lua")
	if err == nil {
		return string(b), nil
	}
	for _, u := range l.uses {
		if src, err := u.source(name); err == nil {
			return src, nil
		}
	}
	return "", fmt.Errorf("script: no %s.lua in %s or the libraries it uses", name, l.name)
}

// Source is Join's text for a script made at package initialisation: a
// requires line naming no module is a mistake in the program, which every
// test that loads the package reports, so it panics. The text is kept for
// Scripts.
func (l *Lib) Source(name string) string {
	src, err := l.Join(name)
	if err != nil {
		panic(err)
	}
	keep(l.name+"/"+name, src)
	return src
}

// Script is script name joined (Source), ready to run.
func (l *Lib) Script(name string) *redis.Script {
	return redis.NewScript(l.Source(name))
}

// New is a script whose whole text is src, kept for Scripts under name.
func New(name, src string) *redis.Script {
	keep(name, src)
	return redis.NewScript(src)
}

var (
	keptMu sync.Mutex
	kept   = map[string]string{}
	libs   []*Lib
)

func keep(name, src string) {
	keptMu.Lock()
	defer keptMu.Unlock()
	kept[name] = src
}

// Scripts is the text of every script the program made through this
// package, by name ("frontier/exchange"): what Redis receives.
func Scripts() map[string]string {
	keptMu.Lock()
	defer keptMu.Unlock()
	return maps.Clone(kept)
}

// Requires is what src's opening comment requires: the names on its
// "-- requires:" lines, in order.
func Requires(src string) []string {
	var names []string
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "--") {
			if line == "" {
				continue
			}
			break // the opening comment ended
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(line, "--")), "requires:"); ok {
			names = append(names, strings.Fields(strings.ReplaceAll(rest, ",", " "))...)
		}
	}
	return names
}
