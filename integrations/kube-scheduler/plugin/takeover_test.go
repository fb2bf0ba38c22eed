package plugin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestHostRestoresAGangThatLostMembers (found by the e2e
// TestHALeaderKilled): a scheduler that starts (or takes over) while a
// gang runs with fewer live pods than its size (members ended, were
// deleted, or evicted by a leader that died) restores the survivors as
// running: their GPUs are given to no one. Before, such a gang was taken
// for one still being created and its bound pods held nothing.
func TestHostRestoresAGangThatLostMembers(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "4"}
	big := schedPod("big", 8, nil)
	io.pods = []*v1.Pod{boundPod("g-0", "n1", 2, "0,1", g), boundPod("g-1", "n1", 2, "2,3", g), big}
	h.cycle(ctx)
	if a, ok := h.assignmentOf(big.UID); ok {
		t.Fatalf("big planned on %s %v: g's two surviving members hold 4 of n1's GPUs", a.node, a.gpus)
	}
	if r := h.waitingReason(big.UID); !strings.Contains(r, "4 free GPUs") {
		t.Errorf("big waits with %q, want the 4 free GPUs", r)
	}
}

// TestHostResumesAPreemptionAfterATakeover (issue 26, defect 1; found by
// the e2e TestHALeaderKilled): the pods of a victim gang are marked with
// the job the room is for before any is evicted; a leader killed between
// two evictions leaves a gang that lost some members, marked, and the
// scheduler that takes over evicts the rest instead of keeping them on
// the GPUs the preemptor was planned on. A victim whose eviction is
// refused before any of its pods went is unmarked.
func TestHostResumesAPreemptionAfterATakeover(t *testing.T) {
	// Marking: a low-priority 2-pod gang fills n1; a high-priority 8-GPU
	// pod comes; both members are marked before the first eviction.
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	g := map[string]string{DefaultGangLabel: "v", DefaultGangSizeKey: "2"}
	io.pods = []*v1.Pod{boundPod("v-0", "n1", 4, "0,1,2,3", g), boundPod("v-1", "n1", 4, "4,5,6,7", g)}
	h.cycle(ctx)
	high := schedPod("high", 8, nil)
	prio := int32(1000)
	high.Spec.Priority = &prio
	io.pods = append(io.pods, high)
	io.clock = io.clock.Add(time.Minute)
	h.cycle(ctx)
	if len(io.evicted) != 2 {
		t.Fatalf("evicted %v, want the gang v", io.evicted)
	}
	for _, p := range io.pods[:2] {
		if p.Annotations[PreemptedForAnnotation] != "default/high" {
			t.Errorf("%s: %s=%q, want default/high", p.Name, PreemptedForAnnotation, p.Annotations[PreemptedForAnnotation])
		}
	}
	if i := slices.Index(io.ops, "annotate v-1"); i < 0 || i > 1 {
		t.Errorf("ops %v: want both members marked first", io.ops)
	}

	// Takeover: v-0 was evicted, v-1 still runs with the mark.
	h2, io2 := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	io2.pods = []*v1.Pod{io.pods[1], high}
	h2.cycle(ctx)
	if !slices.Equal(io2.evicted, []string{"v-1"}) {
		t.Fatalf("the new leader evicted %v, want v-1 (the rest of the victim)", io2.evicted)
	}
	io2.pods = []*v1.Pod{high}
	io2.clock = io2.clock.Add(time.Second)
	h2.cycle(ctx)
	if a, ok := h2.assignmentOf(high.UID); !ok || len(a.gpus) != 8 {
		t.Fatalf("high after the victim is gone: %+v %v, want n1's 8 GPUs", a, ok)
	}

	// Refused before any pod went: the marks go.
	h3, io3 := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	io3.pods = []*v1.Pod{boundPod("v-0", "n1", 4, "0,1,2,3", g), boundPod("v-1", "n1", 4, "4,5,6,7", g)}
	io3.refuse = map[string]error{"v-0": errors.New("Cannot evict pod as it would violate the pod's disruption budget.")}
	h3.cycle(ctx)
	io3.pods = append(io3.pods, high)
	io3.clock = io3.clock.Add(time.Minute)
	h3.cycle(ctx)
	for _, p := range io3.pods[:2] {
		if m := p.Annotations[PreemptedForAnnotation]; m != "" {
			t.Errorf("%s: %s=%q after its eviction was refused, want none", p.Name, PreemptedForAnnotation, m)
		}
	}
	if len(io3.evicted) != 0 || !strings.Contains(strings.Join(io3.events, "\n"), "eviction refused") {
		t.Errorf("evicted %v, events %v: want none evicted, the refusal reported", io3.evicted, io3.events)
	}
}
