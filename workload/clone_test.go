package workload

import (
	"reflect"
	"testing"
	"time"
)

func TestJobCloneSharesNothing(t *testing.T) {
	j := Job{ID: "j", Queue: "q", Groups: []TaskGroup{{Count: 2, GPUs: 1, Models: []string{"H100"}}},
		Topology: []Constraint{{Level: "tor", Required: true}}, Grace: time.Minute}
	c := j.Clone()
	if !reflect.DeepEqual(c, j) {
		t.Fatalf("clone differs: %+v", c)
	}
	c.Groups[0].Count = 3
	c.Groups[0].Models[0] = "A100"
	c.Topology[0].Level = "host"
	c.Grace = time.Hour
	if j.Groups[0].Count != 2 || j.Groups[0].Models[0] != "H100" || j.Topology[0].Level != "tor" || j.Grace != time.Minute {
		t.Fatalf("changing the clone changed the original: %+v", j)
	}
}

// TestJobCloneDeep walks every field of Job by reflection, so that a
// slice, map or pointer field added later is caught if Clone shares it:
// every non-empty slice of the clone must have its own backing array, and
// Job must hold no maps or pointers Clone does not know about.
func TestJobCloneDeep(t *testing.T) {
	j := Job{ID: "j", Groups: []TaskGroup{{Name: "a", Count: 1, Models: []string{"x", "y"}}, {Name: "b", Count: 2, Models: []string{"z"}}},
		Topology: []Constraint{{Level: "host"}}}
	fill(t, reflect.ValueOf(&j).Elem(), "Job")
	c := j.Clone()
	if !reflect.DeepEqual(c, j) {
		t.Fatalf("clone differs:\n%+v\n%+v", c, j)
	}
	shared(t, reflect.ValueOf(j), reflect.ValueOf(c), "Job")
}

// fill makes every slice of v non-empty, so shared can see each one, and
// fails on kinds Clone would have to copy but does not know.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := 0; i < v.Len(); i++ {
			fill(t, v.Index(i), path+"[]")
		}
	case reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func:
		t.Errorf("%s: a %s field; Clone (and this test) must learn to copy it", path, v.Kind())
	}
}

// shared fails when a and b share the backing array of a slice.
func shared(t *testing.T, a, b reflect.Value, path string) {
	t.Helper()
	switch a.Kind() {
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			shared(t, a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)
		}
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the slice", path)
		}
		for i := 0; i < a.Len(); i++ {
			shared(t, a.Index(i), b.Index(i), path+"[]")
		}
	}
}
