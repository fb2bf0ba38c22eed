package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFormingGangIsNotNotedUntilItStopsGrowing: members of a gang whose
// pods are still being created get no event and no PodScheduled patch;
// once no member arrived for formingGrace, the gang is reported as
// incomplete; and a gang completed while forming binds without any note.
func TestFormingGangIsNotNotedUntilItStopsGrowing(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	member := func(name, gang string, size string) *v1.Pod {
		p := schedPod(name, 4, map[string]string{DefaultGangLabel: gang, DefaultGangSizeKey: size})
		p.CreationTimestamp = metav1.NewTime(io.clock)
		return p
	}
	io.pods = []*v1.Pod{member("a-0", "a", "3"), member("b-0", "b", "2")}
	h.cycle(ctx)
	io.clock = io.clock.Add(time.Second)
	io.pods = append(io.pods, member("b-1", "b", "2"), member("a-1", "a", "3"))
	h.cycle(ctx)
	if len(io.pending) != 0 || len(io.events) != 0 {
		t.Fatalf("gangs being created: pending %v, events %v; want none", io.pending, io.events)
	}
	if strings.Join(io.activated, ",") != "b-0,b-1" {
		t.Fatalf("activated %v, want gang b", io.activated)
	}
	io.clock = io.clock.Add(formingGrace)
	h.cycle(ctx)
	for _, n := range []string{"a-0", "a-1"} {
		if !strings.Contains(io.pending[n], "2 of 3 exist") {
			t.Errorf("%s: reason %q once the gang stopped growing, want 2 of 3 exist", n, io.pending[n])
		}
	}
	if _, ok := io.pending["b-0"]; ok {
		t.Errorf("b-0, bound while its gang formed, got a pending reason %q", io.pending["b-0"])
	}
}
