package plugin

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDRAMIGSeveralPlanChecked (issue 26, defect 4): a pod of several MIG
// devices and a one-MIG pod, one anti-affine to the other on the
// hostname, wait together on one H200 node with room for both: only one
// of them is planned (the other waits), whichever is planned first and
// whichever carries the anti-affinity: the pod of several devices goes
// through the plan's check against the pods planned in the same cycle
// like any other.
func TestDRAMIGSeveralPlanChecked(t *testing.T) {
	for _, tc := range []struct {
		name      string
		multiAnti bool
		multiAge  int64
	}{
		{"multi anti-affine, planned first", true, 1},
		{"multi anti-affine, planned second", true, 3},
		{"single anti-affine, multi planned first", false, 1},
		{"single anti-affine, multi planned second", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := h200MIG(t, "h200-1", 2)
			severalMIGs(f, "multi", 1, "3g.71gb", "1g.18gb")
			f.put(migClaim("one", "1g.18gb"))
			h, io := newDRAHost(t, f, node("h200-1", -1, nil))
			multi, one := draPodOf("p-multi", "multi"), draPodOf("p-one", "one")
			multi.CreationTimestamp = metav1.Unix(1e9+tc.multiAge, 0)
			one.CreationTimestamp = metav1.Unix(1e9+2, 0)
			multi.Labels, one.Labels = map[string]string{"app": "multi"}, map[string]string{"app": "one"}
			if tc.multiAnti {
				antiAffine(multi, "one", v1.LabelHostname)
			} else {
				antiAffine(one, "multi", v1.LabelHostname)
			}
			io.pods = []*v1.Pod{multi, one}
			h.cycle(context.Background())
			_, okA := h.assignmentOf(multi.UID)
			_, okB := h.assignmentOf(one.UID)
			if okA == okB || len(io.activated) != 1 {
				t.Fatalf("p-multi planned %v, p-one %v, activated %v: want one of them alone on h200-1; pending %v", okA, okB, io.activated, io.pending)
			}
		})
	}
}
