package queue

import (
	"testing"

	"github.com/gpusched/gpusched/workload"
)

func TestGovernsAny(t *testing.T) {
	capacity := Capacity{Resources: workload.Resources{GPUMilli: 16000, CPUMilli: 64000, MemoryMiB: 1 << 20}}
	for _, tc := range []struct {
		name string
		root Node
		want bool
	}{
		{"no quota", Node{Children: []Node{{Name: "a"}, {Name: "b"}}}, false},
		{"a gpu quota", Node{Children: []Node{{Name: "a", Quotas: []Quota{{Resource: "gpu", Nominal: 8}}}, {Name: "b"}}}, true},
		{"a cpu quota on the root", Node{Quotas: []Quota{{Resource: "cpu", Nominal: 32}}, Children: []Node{{Name: "a"}}}, true},
	} {
		tr, err := Build(Config{Root: tc.root}, capacity)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := tr.GovernsAny(); got != tc.want {
			t.Errorf("%s: GovernsAny = %v, want %v", tc.name, got, tc.want)
		}
	}
}
