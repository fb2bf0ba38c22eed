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
