package shape

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every name docs/tour.md cites in backquotes exists: a file or
// directory (by its path, or a script by its name), a Lua function, a Go
// function, method, type, field or constant (Type.Method by its receiver),
// or a name the code spells as a string (a key's or a counter's). Commands,
// keys with their crawl's name and URLs are not names and are left out.
func TestTheTourNamesWhatExists(t *testing.T) {
	root := filepath.Join("..", "..")
	tour, err := os.ReadFile(filepath.Join(root, "docs", "tour.md"))
	if err != nil {
		t.Fatal(err)
	}
	code := sources(t, root)
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(string(tour), -1) {
		name := m[1]
		if why := missing(root, code, name); why != "" {
			t.Errorf("docs/tour.md cites `%s`: %s", name, why)
		}
	}
	// A name followed by a file in parentheses is in that file.
	for _, m := range regexp.MustCompile("`([A-Za-z_][\\w.]*)`\\s+\\(`([\\w/]+\\.(go|lua))`").FindAllStringSubmatch(string(tour), -1) {
		parts := strings.Split(m[1], ".")
		last := parts[len(parts)-1]
		src, ok := code[m[2]]
		if !ok {
			continue // a file named by its base name alone: checked above
		}
		if !regexp.MustCompile(`(?m)^func (\(\w+ \*?\w+\) )?` + last + `[\[(]|^(local )?function ` + last + `\(|^type ` + last + `\b`).MatchString(src) {
			t.Errorf("docs/tour.md puts `%s` in %s, which does not declare it", m[1], m[2])
		}
	}
}

// sources is every Go and Lua file of the repository, by path.
func sources(t *testing.T, root string) map[string]string {
	files := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".lua") {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, p)
			files[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return files
}

var (
	notAName = regexp.MustCompile(`[\s:{}<>=]|^[-/]|^--|\.example|\.org`)
	fileName = regexp.MustCompile(`\.(go|lua|sh|md|yml)$`)
	luaName  = regexp.MustCompile(`^(fr|ex|hb|tb|ip|sc|bloom)_\w+$`)
	ident    = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$`)
)

// tourWords are the tour's own example's names: its crawl.
var tourWords = map[string]bool{"docs": true}

// missing says why name is not found ("" when it is, or is not a name).
func missing(root string, code map[string]string, name string) string {
	switch {
	case notAName.MatchString(name):
		return ""
	case strings.HasSuffix(name, "/"):
		if st, err := os.Stat(filepath.Join(root, name)); err != nil || !st.IsDir() {
			return "no such directory"
		}
		return ""
	case fileName.MatchString(name):
		if strings.Contains(name, "/") {
			if _, err := os.Stat(filepath.Join(root, name)); err != nil {
				return "no such file"
			}
			return ""
		}
		for p := range code {
			if filepath.Base(p) == name {
				return ""
			}
		}
		return "no file of that name"
	case luaName.MatchString(name):
		def := regexp.MustCompile(`(?m)^(local )?function ` + name + `\(`)
		for p, src := range code {
			if strings.HasSuffix(p, ".lua") && strings.Contains(src, name) && def.MatchString(src) {
				return ""
			}
		}
		return "no Lua function of that name"
	case !ident.MatchString(name), name == strings.ToUpper(name), tourWords[name]:
		return "" // not a name, a Redis command, the tour's own example
	}
	parts := strings.Split(name, ".")
	last := parts[len(parts)-1]
	decl := regexp.MustCompile(`(?m)^func ` + last + `[\[(]|^type ` + last + `\b|^\t` + last + `\s|^(var|const) ` + last + `\b|^\t` + last + `,|, ` + last + `\s+\w|^local (function )?` + last + `\b|\.` + last + ` = |['"]` + last + `['"]`)
	method := regexp.MustCompile(`(?m)^func \(\w+ \*?(\w+)\) ` + last + `\(`)
	for p, src := range code {
		// The regular expressions read a file only where the name is in it:
		// run over the whole repository for each name, they took minutes
		// under the race detector.
		if strings.HasSuffix(p, "_test.go") || !strings.Contains(src, last) {
			continue
		}
		for _, m := range method.FindAllStringSubmatch(src, -1) {
			// Type.Method by its receiver; a bare method, or one reached
			// through a field (Frontier.Render.TakeToken), by its name.
			if len(parts) != 2 || m[1] == parts[0] {
				return ""
			}
		}
		if decl.MatchString(src) {
			if len(parts) == 2 && isPackage(root, parts[0]) && filepath.Dir(p) != parts[0] {
				continue // pkg.Name: declared in that package
			}
			return ""
		}
	}
	return "declared nowhere in the code"
}

// isPackage reports whether dir is one of the repository's packages.
func isPackage(root, dir string) bool {
	st, err := os.Stat(filepath.Join(root, dir))
	return err == nil && st.IsDir()
}
