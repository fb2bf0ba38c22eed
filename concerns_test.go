package gpusched

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// owners maps each concern's field of Scheduler, and each concern's part
// of job, to the file of the concern that alone may write through it
// (ARCHITECTURE.md, "Inside the Scheduler").
var owners = map[string]string{
	"jobs": "jobs.go", "adm": "admission.go", "fit": "failcache.go", "res": "reserve.go",
	"noms": "nominations.go", "victims": "victims.go", "rec": "recovery.go", "cyc": "cycle.go",
	"elastic": "elastic.go", "el": "elastic.go",
	"cons":    "consolidate.go",
	"refused": "refusals.go",
	"around":  "backfill_around.go", "deep": "reserve_depth.go",
	"live": "live.go", "dfg": "defrag.go", "admits": "admittimeout.go",
	// parts of job
	"vic": "victims.go", "nom": "nominations.go", "models": "admission.go", "ref": "refusals.go",
	"noPlan": "noplan.go",
}

// TestConcernsWriteOnlyTheirOwn checks, on the package's source, that an
// assignment or ++/-- through a concern's field (s.res.holds = …,
// j.vic.listed = …) appears only in that concern's file: the other files
// call its methods.
func TestConcernsWriteOnlyTheirOwn(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		check := func(lhs ast.Expr) {
			for e := lhs; ; {
				switch x := e.(type) {
				case *ast.SelectorExpr:
					if owner, ok := owners[x.Sel.Name]; ok && owner != name {
						t.Errorf("%s: writes through %s, which only %s may write", fset.Position(lhs.Pos()), x.Sel.Name, owner)
					}
					e = x.X
					continue
				case *ast.IndexExpr:
					e = x.X
					continue
				case *ast.StarExpr:
					e = x.X
					continue
				case *ast.ParenExpr:
					e = x.X
					continue
				}
				return
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.AssignStmt:
				for _, l := range s.Lhs {
					check(l)
				}
			case *ast.IncDecStmt:
				check(s.X)
			}
			return true
		})
	}
}
