package gpusched

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
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
// call its methods. TestConcernTypesWriteOnlyTheirOwn checks the same
// with types, for every field, the job's core fields included.
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
		eachWrite(f, func(x *ast.SelectorExpr, lhs ast.Expr) {
			if owner, ok := owners[x.Sel.Name]; ok && owner != name {
				t.Errorf("%s: writes through %s, which only %s may write", fset.Position(lhs.Pos()), x.Sel.Name, owner)
			}
		})
	}
}

// coreWriters lists, for the Scheduler's own fields and the job's core
// fields (those that are no concern's part), the files that may write
// them: New (scheduler.go), the clock (clock.go), live changes (live.go:
// the cluster and the queue tree), the job transitions (events.go: take,
// start, release, back, end, rejected), the job table (jobs.go: indexes,
// the submission sequence, a queue move, a class), the restores
// (restore.go), resize (elastic.go) and the cycle's reasons (cycle.go).
var coreWriters = map[string][]string{
	"Scheduler.cfg": {"live.go"}, "Scheduler.c": {"live.go"}, "Scheduler.tree": {"live.go"},
	"Scheduler.ledger": {"live.go"}, "Scheduler.placer": nil, "Scheduler.tracker": {"scheduler.go"},
	"Scheduler.now": {"clock.go"}, "Scheduler.testBeforeCycle": nil,
	"job.reason": {"cycle.go"}, "job.reasonCycle": {"cycle.go"},
	"job.state":       {"events.go", "restore.go"},
	"job.entry":       {"events.go", "jobs.go", "restore.go"},
	"job.spec":        {"events.go", "jobs.go"},
	"job.req":         {"jobs.go"},
	"job.leaf":        {"jobs.go"},
	"job.shape":       {"events.go"},
	"job.demand":      {"events.go"},
	"job.placement":   {"events.go", "elastic.go", "jobs.go"},
	"job.txn":         {"events.go", "elastic.go"},
	"job.charged":     {"events.go", "elastic.go"},
	"job.hosts":       {"events.go", "jobs.go"},
	"job.hostOne":     {"jobs.go"},
	"job.admitted":    {"events.go"},
	"job.started":     {"events.go"},
	"job.end":         {"events.go"},
	"job.endKnown":    {"events.go"},
	"job.preemptions": {"events.go", "restore.go"},
}

// TestConcernTypesWriteOnlyTheirOwn is TestConcernsWriteOnlyTheirOwn with
// types, for every field: a field of a concern's type (the type of a
// field of Scheduler or of job declared in this package, such as
// reservations or jobVictim) is written only in the concern's files —
// the file that declares the type and those with methods of it (its
// _state.go) — however it is reached (through a pointer or an alias:
// m := &j.noPlan; m.ok = …), or on a local copy; the Scheduler's own fields and the job's
// core fields only in the files coreWriters names (composite literals,
// as New's, are not writes). A field of either struct that is neither a
// concern's part nor listed there fails, so a new field says who writes
// it.
func TestConcernTypesWriteOnlyTheirOwn(t *testing.T) {
	fset, files, info, pkg := checkPackage(t)
	concern := map[*types.TypeName][]string{} // a concern's type: its files
	core := map[*types.Var]string{}
	for _, name := range []string{"Scheduler", "job"} {
		tn, _ := pkg.Scope().Lookup(name).(*types.TypeName)
		if tn == nil {
			t.Fatalf("no type %s", name)
		}
		st := tn.Type().Underlying().(*types.Struct)
		for i := range st.NumFields() {
			f := st.Field(i)
			key := name + "." + f.Name()
			if _, ok := coreWriters[key]; ok {
				core[f] = key
				continue
			}
			if nt, ok := f.Type().(*types.Named); ok && nt.Obj().Pkg() == pkg {
				if _, isStruct := nt.Underlying().(*types.Struct); isStruct {
					concern[nt.Obj()] = []string{fset.Position(nt.Obj().Pos()).Filename}
					continue
				}
			}
			t.Errorf("%s: neither a concern's part nor in coreWriters: say which files write it", key)
		}
	}
	named := func(t types.Type) *types.TypeName {
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if nt, ok := t.(*types.Named); ok {
			return nt.Obj()
		}
		return nil
	}
	recvOf := func(fd *ast.FuncDecl) *types.TypeName {
		if fd.Recv == nil || len(fd.Recv.List) == 0 {
			return nil
		}
		if tv, ok := info.Types[fd.Recv.List[0].Type]; ok {
			return named(tv.Type)
		}
		return nil
	}
	for _, f := range files {
		file := fset.Position(f.Pos()).Filename
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				if tn := recvOf(fd); tn != nil && concern[tn] != nil && !slices.Contains(concern[tn], file) {
					concern[tn] = append(concern[tn], file)
				}
			}
		}
	}
	for _, f := range files {
		file := fset.Position(f.Pos()).Filename
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			eachWrite(fd.Body, func(x *ast.SelectorExpr, lhs ast.Expr) {
				sel, ok := info.Selections[x]
				if !ok || sel.Kind() != types.FieldVal {
					return
				}
				v := sel.Obj().(*types.Var)
				if key, ok := core[v]; ok && !slices.Contains(coreWriters[key], file) {
					t.Errorf("%s: writes %s, which only %v may write", fset.Position(x.Sel.Pos()), key, coreWriters[key])
				}
				// A local value of a concern's type is a copy (a value
				// built to hand to the concern's methods).
				var copyOf *types.TypeName
				if id, ok := chainRoot(lhs).(*ast.Ident); ok {
					if v, ok := info.Uses[id].(*types.Var); ok && v.Parent() != pkg.Scope() {
						if nt, ok := v.Type().(*types.Named); ok {
							copyOf = nt.Obj()
						}
					}
				}
				if tn := named(sel.Recv()); tn != nil && concern[tn] != nil && tn != copyOf && !slices.Contains(concern[tn], file) {
					t.Errorf("%s: writes %s.%s, which only %v may write", fset.Position(x.Sel.Pos()), tn.Name(), v.Name(), concern[tn])
				}
			})
		}
	}
}

// checkPackage parses the package's non-test files and type-checks them.
// Only this package's types matter: the imports are empty stand-ins
// (type errors about them are ignored), which keeps this fast.
func checkPackage(t *testing.T) (*token.FileSet, []*ast.File, *types.Info, *types.Package) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Uses: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, _ := conf.Check("github.com/gpusched/gpusched", fset, files, info)
	return fset, files, info, pkg
}

// emptyImporter imports every package as an empty one.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, path[strings.LastIndex(path, "/")+1:])
	p.MarkComplete()
	return p, nil
}

// eachWrite calls fn for every selector on the left of an assignment or
// ++/-- in n (s.res.holds = … gives .holds, then .res), with that left
// side.
func eachWrite(n ast.Node, fn func(sel *ast.SelectorExpr, lhs ast.Expr)) {
	check := func(lhs ast.Expr) {
		for e := lhs; e != nil; e = chainStep(e) {
			if x, ok := e.(*ast.SelectorExpr); ok {
				fn(x, lhs)
			}
		}
	}
	ast.Inspect(n, func(n ast.Node) bool {
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

// chainStep is the expression e selects, indexes or dereferences; nil
// at the chain's root.
func chainStep(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		return x.X
	case *ast.IndexExpr:
		return x.X
	case *ast.StarExpr:
		return x.X
	case *ast.ParenExpr:
		return x.X
	}
	return nil
}

// chainRoot is the root of a chain of selectors, indexes and
// dereferences.
func chainRoot(e ast.Expr) ast.Expr {
	for next := chainStep(e); next != nil; next = chainStep(e) {
		e = next
	}
	return e
}
