package shape

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxMethods is the most exported methods a type may have, its embedded
// types' included: past it, a type holds several concerns a caller must
// tell apart by name.
const maxMethods = 30

// No type of the repository has more than maxMethods exported methods.
func TestTypesStaySmall(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the repository from source: skipped with -short")
	}
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", exportData(t, root))
	dirs := map[string]bool{}
	repoFiles(t, root, func(_, p string) {
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			dirs[filepath.Dir(p)] = true
		}
	})
	for dir := range dirs {
		built := func(fi fs.FileInfo) bool { // what this platform builds, tests left out
			ok, err := build.Default.MatchFile(dir, fi.Name())
			return err == nil && ok && !strings.HasSuffix(fi.Name(), "_test.go")
		}
		pkgs, err := parser.ParseDir(fset, dir, built, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			var files []*ast.File
			for _, f := range pkg.Files {
				files = append(files, f)
			}
			conf := types.Config{Importer: imp.(types.ImporterFrom)}
			tp, err := conf.Check(dir, fset, files, nil)
			if err != nil {
				t.Errorf("type-checking %s: %v", dir, err)
				continue
			}
			for _, name := range tp.Scope().Names() {
				tn, ok := tp.Scope().Lookup(name).(*types.TypeName)
				if !ok {
					continue
				}
				ms := types.NewMethodSet(types.NewPointer(tn.Type()))
				n := 0
				for i := range ms.Len() {
					if ms.At(i).Obj().Exported() {
						n++
					}
				}
				if n > maxMethods {
					rel, _ := filepath.Rel(root, dir)
					t.Errorf("%s.%s has %d exported methods (at most %d)", filepath.ToSlash(rel), name, n, maxMethods)
				}
			}
		}
	}
}

// exportData opens the compiled export data of each package the
// repository imports, as the go command lists it: type-checking the
// imports from source instead (the standard library's included) took
// minutes under the race detector.
func exportData(t *testing.T, root string) func(path string) (io.ReadCloser, error) {
	cmd := exec.Command("go", "list", "-deps", "-export", "-f", "{{.ImportPath}}\t{{.Export}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	files := map[string]string{}
	for _, line := range bytes.Split(out, []byte("\n")) {
		if path, file, ok := bytes.Cut(line, []byte("\t")); ok && len(file) > 0 {
			files[string(path)] = string(file)
		}
	}
	return func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}
}
