package plugin

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestCycleQueueMergesBatches (the scale benchmark's reclaim at 1,000
// nodes): the batches cycles queue while the queue's goroutine is busy
// go out together in its next call, in order, not one cycle's after the
// other (each a few rounds of round trips: the reclaim's evictions fell
// minutes behind).
func TestCycleQueueMergesBatches(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	got := make(chan []int, 4)
	q := newCycleQueue(func(_ context.Context, b []int) {
		if b[0] == 1 {
			close(started)
			<-release
		}
		got <- b
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer q.start(ctx)()
	defer cancel() // (before the wait above)
	q.put([]int{1})
	<-started
	if !q.busy() {
		t.Error("busy false while a batch is carried out")
	}
	q.put([]int{2, 3})
	q.put([]int{4})
	close(release)
	for _, want := range [][]int{{1}, {2, 3, 4}} {
		select {
		case b := <-got:
			if len(b) != len(want) || b[0] != want[0] || b[len(b)-1] != want[len(want)-1] {
				t.Fatalf("batch %v, want %v", b, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no batch %v within 30 s", want)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for q.busy() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if q.busy() {
		t.Error("busy once every batch is done")
	}
}

// TestConditionsYieldToEvictions (the scale benchmark's reclaim): while
// evictions or gang plans are being written, no waiting pod's condition
// is; it is written once they are done.
func TestConditionsYieldToEvictions(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	wrote := make(chan string, 4)
	c := newCondWriter(func(_ context.Context, e podEvent) { wrote <- e.pod.Name }, func(types.UID) bool { return false })
	c.yield = busy.Load
	ctx, cancel := context.WithCancel(context.Background())
	c.run(ctx, 2)
	defer c.wait()
	defer cancel()
	c.put([]podEvent{{pod: &v1.Pod{}, why: "x", what: "waiting"}})
	select {
	case <-wrote:
		t.Fatal("a condition written while evictions are under way")
	case <-time.After(200 * time.Millisecond):
	}
	busy.Store(false)
	select {
	case <-wrote:
	case <-time.After(30 * time.Second):
		t.Fatal("the condition not written within 30 s once the evictions were done")
	}
}
