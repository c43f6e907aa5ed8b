// Package shape holds a test of the repository's shape: the sizes its
// files and functions keep to, so that each can be read whole.
package shape

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The limits, and the files that still pass one, each named with the
// work that brings it under (none now; the list only shrinks: a file
// listed that keeps to its limits fails the test too, so that it leaves
// the list).
const (
	maxGoFile, maxGoFunc   = 400, 80
	maxLuaFile, maxLuaFunc = 300, 60
)

var over = map[string]string{}

// No non-test Go file over 400 lines nor function over 80; no Lua file
// over 300 lines nor function over 60: across the repository.
func TestFilesAndFunctionsStaySmall(t *testing.T) {
	root := filepath.Join("..", "..")
	passed := map[string]bool{}
	repoFiles(t, root, func(rel, p string) {
		var why []string
		switch {
		case strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go"):
			why = goShape(t, p)
		case strings.HasSuffix(p, ".lua"):
			why = luaShape(t, p)
		}
		if len(why) > 0 {
			passed[filepath.ToSlash(rel)] = true
			if _, ok := over[filepath.ToSlash(rel)]; !ok {
				t.Errorf("%s: %s", rel, strings.Join(why, "; "))
			}
		}
	})
	for f, work := range over {
		if !passed[f] {
			t.Errorf("%s keeps to its limits now: take it off the list (it waited for %s)", f, work)
		}
	}
}

// repoFiles calls fn with each file of the repository under root (its
// path from root, and its path), hidden folders and testdata left out.
func repoFiles(t *testing.T, root string, fn func(rel, p string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		fn(rel, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goShape is what of Go file p passes the limits.
func goShape(t *testing.T, p string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, nil, 0)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	var why []string
	if n := fset.File(f.Pos()).LineCount(); n > maxGoFile {
		why = append(why, fmt.Sprintf("%d lines (at most %d)", n, maxGoFile))
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxGoFunc {
				why = append(why, fmt.Sprintf("func %s is %d lines (at most %d)", fd.Name.Name, n, maxGoFunc))
			}
		}
	}
	return why
}

var luaFunc = regexp.MustCompile(`^(local )?function ([\w.:]+)`)

// luaShape is what of Lua file p passes the limits: its lines, and each
// function from its first line to the "end" that closes it at the line's
// start.
func luaShape(t *testing.T, p string) []string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var why []string
	if len(lines) > maxLuaFile {
		why = append(why, fmt.Sprintf("%d lines (at most %d)", len(lines), maxLuaFile))
	}
	start, name := -1, ""
	for i, l := range lines {
		if m := luaFunc.FindStringSubmatch(l); m != nil && !strings.HasSuffix(strings.TrimSpace(l), "end") {
			start, name = i, m[2]
		} else if start >= 0 && l == "end" {
			if n := i - start + 1; n > maxLuaFunc {
				why = append(why, fmt.Sprintf("function %s is %d lines (at most %d)", name, n, maxLuaFunc))
			}
			start = -1
		}
	}
	return why
}
