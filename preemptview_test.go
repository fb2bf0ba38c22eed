package gpusched

import (
	"go/ast"
	"go/types"
	"reflect"
	"slices"
	"testing"
)

// preemptViewReads are PreemptView's methods, each a read (it delegates
// to a Scheduler reader of TestEveryMethodClassified's readers list). A
// method added to the view must be a read, and be added here.
var preemptViewReads = []string{"Cluster", "Holding", "Job", "Ledger", "NoPlans", "Now", "Progress", "Queues", "Tree"}

// TestPreemptViewReadOnly: what a Preemptor is given cannot change the
// Scheduler — PreemptView has exactly the listed read methods, each a
// Scheduler reader, and no exported field (so no way to the *Scheduler).
func TestPreemptViewReadOnly(t *testing.T) {
	vt := reflect.TypeFor[PreemptView]()
	var got []string
	for i := range vt.NumMethod() {
		got = append(got, vt.Method(i).Name)
	}
	if pt := reflect.TypeFor[*PreemptView](); pt.NumMethod() != vt.NumMethod() {
		t.Errorf("*PreemptView has %d methods, PreemptView %d: no pointer-receiver methods allowed", pt.NumMethod(), vt.NumMethod())
	}
	if !slices.Equal(got, preemptViewReads) {
		t.Errorf("PreemptView methods = %v, want exactly %v (read-only)", got, preemptViewReads)
	}
	for _, name := range got {
		if _, mut := mutators[name]; mut || !slices.Contains(readers, name) {
			t.Errorf("PreemptView.%s is not a Scheduler reader", name)
		}
		if m, ok := reflect.TypeFor[*Scheduler]().MethodByName(name); !ok || m.Type.NumIn()-1 != vt.Method(slices.Index(got, name)).Type.NumIn()-1 {
			t.Errorf("PreemptView.%s does not mirror Scheduler.%s", name, name)
		}
	}
	for i := range vt.NumField() {
		if f := vt.Field(i); f.IsExported() {
			t.Errorf("PreemptView has exported field %s", f.Name)
		}
	}
}

// TestPlanPreemptorSeesOnlyItsView: the built-in PlanPreemptor is written
// against what any Preemptor gets (STYLE.md, habit 25), and its no-plan
// memo is the noplan concern's. On the package's source, with types:
//   - PreemptView and PreemptCandidate hold no *Scheduler, job or
//     concern (a Preemptor cannot reach the Scheduler's internals);
//   - the PlanPreemptor's methods and NewPlanPreemptor name no Scheduler,
//     job or concern type, and no expression of theirs has one (no v.s,
//     s.cyc, s.jobs.byID[…], j.noPlan): they read through the view;
//   - only noplan.go reads or writes the job's noPlan part, or names
//     its type (its declaration in jobs.go aside).
func TestPlanPreemptorSeesOnlyItsView(t *testing.T) {
	fset, files, info, pkg := checkPackage(t)
	lookup := func(name string) *types.TypeName {
		tn, _ := pkg.Scope().Lookup(name).(*types.TypeName)
		if tn == nil {
			t.Fatalf("no type %s", name)
		}
		return tn
	}
	// The Scheduler, the job and every concern: the named struct types
	// of this package that are fields of either.
	internal := map[*types.TypeName]bool{}
	var memoField *types.Var
	for _, name := range []string{"Scheduler", "job"} {
		tn := lookup(name)
		internal[tn] = true
		st := tn.Type().Underlying().(*types.Struct)
		for i := range st.NumFields() {
			f := st.Field(i)
			if nt, ok := f.Type().(*types.Named); ok && nt.Obj().Pkg() == pkg {
				if _, isStruct := nt.Underlying().(*types.Struct); isStruct {
					internal[nt.Obj()] = true
				}
			}
			if name == "job" && f.Name() == "noPlan" {
				memoField = f
			}
		}
	}
	if memoField == nil {
		t.Fatal("job has no noPlan field")
	}
	// reaches reports the internal type that t is or holds, if any.
	var reaches func(t types.Type) *types.TypeName
	reaches = func(t types.Type) *types.TypeName {
		switch x := t.(type) {
		case *types.Pointer:
			return reaches(x.Elem())
		case *types.Slice:
			return reaches(x.Elem())
		case *types.Array:
			return reaches(x.Elem())
		case *types.Map:
			if tn := reaches(x.Key()); tn != nil {
				return tn
			}
			return reaches(x.Elem())
		case *types.Named:
			if internal[x.Obj()] {
				return x.Obj()
			}
		}
		return nil
	}
	for _, name := range []string{"PreemptView", "PreemptCandidate"} {
		st := lookup(name).Type().Underlying().(*types.Struct)
		for i := range st.NumFields() {
			if tn := reaches(st.Field(i).Type()); tn != nil {
				t.Errorf("%s.%s holds a %s: a Preemptor could reach the Scheduler's internals", name, st.Field(i).Name(), tn.Name())
			}
		}
	}
	pp := lookup("PlanPreemptor")
	ofPlanPreemptor := func(fd *ast.FuncDecl) bool {
		if fd.Recv == nil {
			return fd.Name.Name == "NewPlanPreemptor"
		}
		tv, ok := info.Types[fd.Recv.List[0].Type]
		if !ok {
			return false
		}
		rt := tv.Type
		if p, ok := rt.(*types.Pointer); ok {
			rt = p.Elem()
		}
		nt, ok := rt.(*types.Named)
		return ok && nt.Obj() == pp
	}
	memoType := lookup("noPlanMemo")
	for _, f := range files {
		file := fset.Position(f.Pos()).Filename
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || !ofPlanPreemptor(fd) {
				continue
			}
			reported := map[int]bool{} // one error per line
			ast.Inspect(fd, func(n ast.Node) bool {
				e, ok := n.(ast.Expr)
				if !ok {
					return true
				}
				var tn *types.TypeName
				if tv, ok := info.Types[e]; ok {
					tn = reaches(tv.Type)
				}
				if id, ok := e.(*ast.Ident); ok && tn == nil {
					if o, ok := info.Uses[id].(*types.TypeName); ok && internal[o] {
						tn = o
					}
				}
				if line := fset.Position(e.Pos()).Line; tn != nil && !reported[line] {
					reported[line] = true
					t.Errorf("%s: PlanPreemptor.%s reaches the Scheduler's internals (%s); read through PreemptView", fset.Position(e.Pos()), fd.Name.Name, tn.Name())
				}
				return true
			})
		}
		if file == "noplan.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if sel, ok := info.Selections[x]; ok && sel.Obj() == memoField {
					t.Errorf("%s: uses the job's noPlan part, which only noplan.go may", fset.Position(x.Sel.Pos()))
				}
			case *ast.Ident:
				if info.Uses[x] == memoType && file != "jobs.go" {
					t.Errorf("%s: names noPlanMemo, which only noplan.go may", fset.Position(x.Pos()))
				}
			}
			return true
		})
	}
}
