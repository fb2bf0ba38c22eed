package plugin

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// TestNotOnKeepsOwnTermsAndTakesSeveralNodes: a pod kept off lent nodes
// (notOn, dra_lend.go) still matches only the nodes its own affinity
// allows, and is kept off every node named, not only when one is named
// (kube's node field selector takes one value per requirement).
func TestNotOnKeepsOwnTermsAndTakesSeveralNodes(t *testing.T) {
	node := func(name, pool string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}}}
	}
	p := &v1.Pod{Spec: v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "pool", Operator: v1.NodeSelectorOpIn, Values: []string{"gpu"}}},
		}}},
	}}}}
	notOn(p, []string{"a", "b"})
	req := nodeaffinity.GetRequiredNodeAffinity(p)
	for _, c := range []struct {
		n    *v1.Node
		want bool
	}{
		{node("a", "gpu"), false},
		{node("b", "gpu"), false},
		{node("c", "gpu"), true},
		{node("d", "cpu"), false},
	} {
		got, err := req.Match(c.n)
		if err != nil {
			t.Fatalf("node %s: %v", c.n.Name, err)
		}
		if got != c.want {
			t.Errorf("node %s (pool %s): matches %v, want %v", c.n.Name, c.n.Labels["pool"], got, c.want)
		}
	}
}
