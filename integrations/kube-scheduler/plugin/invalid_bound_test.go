package plugin

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestInvalidBoundPodNeverMarkedPending (issue 26, defect 4 and 3): a
// bound (running) pod whose job gpusched cannot take as it is (its GPU
// indices annotation names GPUs the node has not; a node gpusched does
// not know; labels a running gang cannot have) gets a Warning event
// naming the field, but never a PodScheduled=False condition: it is not
// unschedulable, it runs. A waiting pod with bad labels is still marked.
func TestInvalidBoundPodNeverMarkedPending(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
	}{
		{"indices", boundPod("b", "n1", 2, "0,9", nil)},
		{"unknown node", boundPod("b", "nx", 2, "0,1", nil)},
		{"labels", boundPod("b", "n1", 2, "0,1", map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "zero"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, io := newTestHost(t, gpuNode("n1", 8, h100, nil))
			w := schedPod("w", 2, map[string]string{DefaultGangLabel: "h", DefaultGangSizeKey: "zero"})
			io.pods = []*v1.Pod{tc.pod, w}
			for range 3 {
				step(h, io, 10*time.Second)
			}
			if n := io.patches["b"]; n != 0 {
				t.Errorf("bound pod b patched PodScheduled=False %d times (%q)", n, io.pending["b"])
			}
			if !slices.ContainsFunc(io.events, func(e string) bool { return strings.HasPrefix(e, "b "+ReasonInvalid+": ") }) {
				t.Errorf("no %s event for b: %v", ReasonInvalid, io.events)
			}
			if io.patches["w"] == 0 {
				t.Errorf("waiting pod w with bad labels not marked pending")
			}
		})
	}
}
