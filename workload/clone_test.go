package workload

import (
	"reflect"
	"testing"
)

func TestJobCloneSharesNothing(t *testing.T) {
	j := Job{ID: "j", Queue: "q", Groups: []TaskGroup{{Count: 2, GPUs: 1, Models: []string{"H100"}}},
		Topology: []Constraint{{Level: "tor", Required: true}}}
	c := j.Clone()
	if !reflect.DeepEqual(c, j) {
		t.Fatalf("clone differs: %+v", c)
	}
	c.Groups[0].Count = 3
	c.Groups[0].Models[0] = "A100"
	c.Topology[0].Level = "host"
	if j.Groups[0].Count != 2 || j.Groups[0].Models[0] != "H100" || j.Topology[0].Level != "tor" {
		t.Fatalf("changing the clone changed the original: %+v", j)
	}
}
