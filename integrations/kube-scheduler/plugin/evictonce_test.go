package plugin

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// heldEvictIO is fakeIO whose evictions each announce themselves on
// evicting, then wait until gate is closed (an apiserver slow to answer).
// Its pods are read under fakeIO's lock: the eviction queue's marks
// (annotate) write them while cycles list them.
type heldEvictIO struct {
	*fakeIO
	gate     chan struct{}
	evicting chan string
}

func (s *heldEvictIO) listPods() ([]*v1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pods), nil
}

func (s *heldEvictIO) evict(ctx context.Context, p *v1.Pod, grace time.Duration) error {
	s.evicting <- p.Name
	<-s.gate
	return s.fakeIO.evict(ctx, p, grace)
}

// TestEvictionQueuedIsNotAskedAgain (found by the e2e TestHALeaderKilled
// once evictions went off the cycle loop: 17 eviction requests for 16
// pods gone): a victim gang's evictions are queued, its pods are marked
// (PreemptedForAnnotation) and the first eviction is in flight; before
// the queue drained, a node of a GPU model the cluster has not seen joins
// and the next cycle rebuilds the Scheduler, restoring the gang from its
// pods. The restore found the mark and evicted the gang again
// (resumeEvictions): each pod was asked twice. A pod's eviction is asked
// at most once per pod (UID) while it is queued, in flight or done.
func TestEvictionQueuedIsNotAskedAgain(t *testing.T) {
	h, fio := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := map[string]string{DefaultGangLabel: "v", DefaultGangSizeKey: "2"}
	fio.pods = []*v1.Pod{boundPod("v-0", "n1", 4, "0,1,2,3", g), boundPod("v-1", "n1", 4, "4,5,6,7", g)}
	h.cycle(ctx)
	high := schedPod("high", 8, nil)
	prio := int32(1000)
	high.Spec.Priority = &prio
	fio.pods = append(fio.pods, high)
	fio.clock = fio.clock.Add(time.Minute)

	io := &heldEvictIO{fakeIO: fio, gate: make(chan struct{}), evicting: make(chan string, 16)}
	h.io = io
	batches := make(chan int, 8) // a batch of the queue carried out (its size)
	h.evq = newEvictQueue(func(ctx context.Context, evs []eviction) {
		h.evict(ctx, evs)
		batches <- len(evs)
	})
	go h.evq.run(ctx)
	gateOpen := false
	defer func() {
		if !gateOpen {
			close(io.gate)
		}
	}()

	// The cycle queues v's evictions; v's pods are marked, and the first
	// eviction hangs.
	h.cycle(ctx)
	select {
	case name := <-io.evicting:
		if name != "v-0" {
			t.Fatalf("first eviction of %s, want v-0", name)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("v's eviction did not start within 30 s")
	}
	pods, _ := io.listPods()
	for _, p := range pods[:2] {
		if p.Annotations[PreemptedForAnnotation] != "default/high" {
			t.Fatalf("%s: %s=%q before its eviction, want default/high", p.Name, PreemptedForAnnotation, p.Annotations[PreemptedForAnnotation])
		}
	}

	// A node of a new GPU model joins: the next cycle rebuilds and
	// restores v from its pods, which carry the mark.
	io.nodes = append(io.nodes, gpuNode("n2", 8, "NVIDIA-A100-SXM4-80GB", nil))
	fio.clock = fio.clock.Add(time.Second)
	h.cycle(ctx)
	h.evq.mu.Lock()
	queued := len(h.evq.batches)
	h.evq.mu.Unlock()

	close(io.gate)
	gateOpen = true
	for range 1 + queued {
		select {
		case <-batches:
		case <-time.After(30 * time.Second):
			t.Fatal("the queued evictions were not carried out within 30 s")
		}
	}
	io.mu.Lock()
	defer io.mu.Unlock()
	for _, name := range []string{"v-0", "v-1"} {
		if n := io.attempts[name]; n != 1 {
			t.Errorf("%s: %d eviction requests, want 1 (%d more batches queued by the rebuild's restore)", name, n, queued)
		}
	}
}
