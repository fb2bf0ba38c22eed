package gpusched

import (
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
