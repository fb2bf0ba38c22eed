// Package doccheck holds a test that keeps the module's documentation
// complete: every package has a package comment, every exported identifier
// has a doc comment, and every importable package has a runnable Example.
package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// moduleRoot is the repository root, two levels up from this package.
const moduleRoot = "../.."

// pkgDirs returns the directories of the root module that hold Go files,
// skipping testdata, hidden directories and nested modules.
func pkgDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != moduleRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "integrations") {
			return filepath.SkipDir
		}
		if path != moduleRoot {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		matches, _ := filepath.Glob(filepath.Join(path, "*.go"))
		if len(matches) > 0 {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(dirs)
	return dirs
}

func TestDocComments(t *testing.T) {
	for _, dir := range pkgDirs(t) {
		fset := token.NewFileSet()
		files := parseFiles(t, fset, dir, false)
		hasPkgDoc := false
		for _, f := range files {
			if f.Doc != nil {
				hasPkgDoc = true
			}
			for _, miss := range undocumented(f) {
				t.Errorf("%s: exported %s has no doc comment", fset.Position(miss.pos), miss.name)
			}
		}
		if len(files) > 0 && !hasPkgDoc {
			t.Errorf("%s: package %s has no package comment", dir, files[0].Name.Name)
		}
	}
}

type missing struct {
	name string
	pos  token.Pos
}

func undocumented(f *ast.File) []missing {
	var out []missing
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv != nil && !exportedRecv(d.Recv) {
				continue
			}
			out = append(out, missing{"func " + d.Name.Name, d.Pos()})
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
						out = append(out, missing{"type " + s.Name.Name, s.Pos()})
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						// A documented group covers its members.
						if n.IsExported() && s.Doc == nil && d.Doc == nil && s.Comment == nil {
							out = append(out, missing{"value " + n.Name, n.Pos()})
						}
					}
				}
			}
		}
	}
	return out
}

func exportedRecv(fl *ast.FieldList) bool {
	if len(fl.List) == 0 {
		return false
	}
	t := fl.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

func TestExamples(t *testing.T) {
	for _, dir := range pkgDirs(t) {
		rel, _ := filepath.Rel(moduleRoot, dir)
		// Commands, examples, internal checks and the benchmark suite are
		// not packages users import.
		if strings.Contains(rel, "internal") || strings.HasPrefix(rel, "cmd") || strings.HasPrefix(rel, "examples") || rel == "benchmarks" {
			continue
		}
		found := false
		for _, f := range parseFiles(t, token.NewFileSet(), dir, true) {
			for _, decl := range f.Decls {
				if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Example") {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("package %s has no runnable Example", rel)
		}
	}
}

// parseFiles parses the test files (tests true) or the other Go files of
// dir, with comments.
func parseFiles(t *testing.T, fset *token.FileSet, dir string, tests bool) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") != tests {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}
