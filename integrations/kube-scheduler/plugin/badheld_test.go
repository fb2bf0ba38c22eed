package plugin

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpusched/gpusched/queue"
)

// TestRunningGangTurnedInvalidKeepsItsGPUs: the pods of a running gang
// stop agreeing (one member's gang-size label is edited) while they run.
// The job keeps its GPUs until its pods end — no pod waiting is placed on
// its nodes, its bound pods are not marked pending, and they are told
// why (a Warning naming the field) — instead of the job being booked as
// gone ("pods vanished") while its containers still run on those GPUs.
func TestRunningGangTurnedInvalidKeepsItsGPUs(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	io.pods = []*v1.Pod{schedPod("g-0", 8, g), schedPod("g-1", 8, g)}
	step(h, io, 0)
	bindAll(t, h, io)
	step(h, io, time.Second)
	if st, _ := h.s.Job("default/gang/g"); st.State != queue.Running {
		t.Fatalf("gang %v, want running", st.State)
	}
	edited := io.pods[1].DeepCopy()
	edited.Labels[DefaultGangSizeKey] = "3"
	io.pods = append(replace(io.pods, edited), schedPod("w", 8, nil))
	clear(io.pending)
	nev := len(io.events)
	for range 3 {
		step(h, io, time.Second)
	}
	if a, ok := h.assignmentOf(types.UID("uid-w")); ok {
		t.Fatalf("w placed on %s while the gang's pods run there", a.node)
	}
	if st, ok := h.s.Job("default/gang/g"); !ok || !st.State.Holding() {
		t.Fatalf("gang with an edited member: %+v (known %v), want it still holding its GPUs", st, ok)
	}
	for _, m := range []string{"g-0", "g-1"} {
		if why, ok := io.pending[m]; ok {
			t.Errorf("running %s marked pending: %q", m, why)
		}
	}
	warned := false
	for _, e := range io.events[nev:] {
		if strings.Contains(e, "g-1") && strings.Contains(e, "disagree") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no event tells the gang's pods why: %v", io.events[nev:])
	}
	// Its pods end: the GPUs go to w.
	io.pods = without(io.pods, "g-0", "g-1")
	for range 2 {
		step(h, io, time.Second)
	}
	if _, ok := h.assignmentOf(types.UID("uid-w")); !ok {
		t.Errorf("w not placed once the gang's pods were gone: %q", io.pending["w"])
	}
}
