package queue

import (
	"reflect"
	"testing"
)

// TestConfigClone: a clone equals its original and shares nothing with
// it: changing every slice and pointer of the clone leaves it as it was.
func TestConfigClone(t *testing.T) {
	orig := Config{
		Root: Node{Children: []Node{
			{Name: "a", Quotas: []Quota{{Resource: "gpu", Nominal: 8, BorrowingLimit: Limit(1), LendingLimit: Limit(2), Max: Limit(16)}}},
			{Name: "b", Children: []Node{{Name: "c", Weight: 2}}},
		}},
		PriorityClasses: []PriorityClass{{Name: "hi", Value: 10}},
	}
	want := Config{
		Root: Node{Children: []Node{
			{Name: "a", Quotas: []Quota{{Resource: "gpu", Nominal: 8, BorrowingLimit: Limit(1), LendingLimit: Limit(2), Max: Limit(16)}}},
			{Name: "b", Children: []Node{{Name: "c", Weight: 2}}},
		}},
		PriorityClasses: []PriorityClass{{Name: "hi", Value: 10}},
	}
	c := orig.Clone()
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("clone %+v, original %+v", c, orig)
	}
	q := &c.Root.Children[0].Quotas[0]
	*q.BorrowingLimit, *q.LendingLimit, *q.Max, q.Nominal = 0, 0, 0, 0
	c.Root.Children[1].Children[0].Name = "x"
	c.PriorityClasses[0].Value = 0
	if !reflect.DeepEqual(orig, want) {
		t.Fatalf("changing the clone changed the original: %+v", orig)
	}
}
