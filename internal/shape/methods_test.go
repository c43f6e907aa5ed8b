package shape

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
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
	imp := importer.ForCompiler(fset, "source", nil)
	dirs := map[string]bool{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			dirs[filepath.Dir(p)] = true
		}
		if err == nil && d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		return nil
	})
	for dir := range dirs {
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			var files []*ast.File
			for _, f := range pkg.Files {
				files = append(files, f)
			}
			conf := types.Config{Importer: imp.(types.ImporterFrom), Error: func(error) {}}
			tp, _ := conf.Check(dir, fset, files, nil)
			if tp == nil {
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
