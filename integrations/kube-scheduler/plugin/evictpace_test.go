package plugin

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// barrierIO is fakeIO whose evictions of the pods in together each wait
// until all of them have begun (or 30 s, then fail): they must be in
// flight at once.
type barrierIO struct {
	*fakeIO
	together map[string]bool
	arrived  sync.WaitGroup
	late     []string
	mu       sync.Mutex
}

func (b *barrierIO) evict(ctx context.Context, p *v1.Pod, grace time.Duration) error {
	if b.together[p.Name] {
		b.arrived.Done()
		done := make(chan struct{})
		go func() { b.arrived.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.mu.Lock()
			b.late = append(b.late, p.Name)
			b.mu.Unlock()
		}
	}
	return b.fakeIO.evict(ctx, p, grace)
}

// TestVictimGangEvictedTogether (the scale benchmark's reclaim): once a
// victim gang's first pod is evicted, its other pods are evicted at once,
// not one round trip after the other (a 32-pod gang took 32 round trips
// of the cycle, seconds on a loaded apiserver).
func TestVictimGangEvictedTogether(t *testing.T) {
	h, fio := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	io := &barrierIO{fakeIO: fio, together: map[string]bool{"v-1": true, "v-2": true, "v-3": true}}
	io.arrived.Add(3)
	h.io = io
	for i := range 4 {
		p := schedPod(fmt.Sprintf("v-%d", i), 2, map[string]string{DefaultGangLabel: "v", DefaultGangSizeKey: "4"})
		p.Spec.NodeName = "n1"
		p.Annotations = map[string]string{DefaultGPUIndicesAnnotation: fmt.Sprintf("%d,%d", 2*i, 2*i+1)}
		fio.pods = append(fio.pods, p)
	}
	high := schedPod("high", 8, nil)
	prio := int32(1000)
	high.Spec.Priority = &prio
	fio.pods = append(fio.pods, high)
	for range 3 {
		fio.clock = fio.clock.Add(time.Second)
		h.cycle(context.Background())
	}
	slices.Sort(fio.evicted)
	if !slices.Equal(fio.evicted, []string{"v-0", "v-1", "v-2", "v-3"}) || len(io.late) > 0 {
		t.Fatalf("evicted %v, %v not in flight together; want all four, v-1..v-3 together", fio.evicted, io.late)
	}
}

// stuckEvictIO is gatedIO whose evictions wait until gate is closed.
type stuckEvictIO struct {
	*gatedIO
	evicting chan string
}

func (s *stuckEvictIO) evict(ctx context.Context, p *v1.Pod, grace time.Duration) error {
	s.evicting <- p.Name
	<-s.gate
	return s.fakeIO.evict(ctx, p, grace)
}

// TestCycleDoesNotWaitForEvictions (the scale benchmark's reclaim): a
// cycle's evictions go out off the cycle loop. In the benchmark's reclaim
// at 1,000 nodes each cycle spent 1–3 s marking and evicting its victims'
// pods while the jobs whose victims were gone waited for the next cycle.
// Here the apiserver never answers an eviction: the run loop must still
// bind a job the cycle after its room is freed elsewhere.
func TestCycleDoesNotWaitForEvictions(t *testing.T) {
	h, fio := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil))
	io := &stuckEvictIO{gatedIO: &gatedIO{fakeIO: fio, gate: make(chan struct{}), entered: make(chan string, 16), activated: make(chan string, 16)},
		evicting: make(chan string, 16)}
	h.io = io
	defer close(io.gate)
	low, c := schedPod("low", 8, nil), schedPod("c", 8, nil)
	low.Spec.NodeName, c.Spec.NodeName = "n1", "n2"
	low.Annotations = map[string]string{DefaultGPUIndicesAnnotation: "0,1,2,3,4,5,6,7"}
	c.Annotations = map[string]string{DefaultGPUIndicesAnnotation: "0,1,2,3,4,5,6,7"}
	high, w := schedPod("high", 8, nil), schedPod("w", 8, nil)
	prio := int32(1000)
	high.Spec.Priority = &prio
	w.CreationTimestamp.Time = w.CreationTimestamp.Add(time.Second)
	fio.pods = []*v1.Pod{low, c, high, w}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.lead.lead()
	go h.run(ctx)
	wait := func(ch chan string, want, what string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case got := <-ch:
				if got == want {
					return
				}
			case <-deadline:
				t.Fatalf("%s: not within 30 s", what)
			}
		}
	}
	wait(io.evicting, "low", "low's eviction for high started")

	// c finishes: w's room on n2 is free.
	io.podsMu.Lock()
	done := fio.pods[1].DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	fio.pods[1] = done
	io.podsMu.Unlock()
	h.poke()
	wait(io.activated, "w", "w activated the cycle after c finished, while low's eviction hangs")
}
