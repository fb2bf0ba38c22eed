package livepage

import (
	"fmt"
	"io"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// BenchmarkPage100k builds (Build: what a host does under its lock) and
// draws (WriteHTML) the page of the h100-100k preset (12,500 hosts,
// 100,000 GPUs in 16-ToR spines) after one cycle over 2,500 two-task jobs
// (those that fit the queue's 20,000 GPUs run, the rest wait): what one
// GET of the live page costs on the largest cluster the README measures.
func BenchmarkPage100k(b *testing.B) {
	c, err := topology.LoadPreset("h100-100k")
	if err != nil {
		b.Fatal(err)
	}
	s, err := gpusched.New(gpusched.Config{Cluster: c, Stats: true,
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 20000, Max: ptr(int64(20000))}}}}}}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 2500 {
		gpus := 8
		if i%2 == 1 {
			gpus = 4
		}
		if err := s.Submit(workload.Job{ID: fmt.Sprintf("j%d", i), Queue: "q", Groups: []workload.TaskGroup{{Count: 2, GPUs: gpus}}}, t0); err != nil {
			b.Fatal(err)
		}
	}
	d := s.Schedule(t0)
	b.Run("Build", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			Build(s, FromDecision(&d), Options{Title: "h100-100k"})
		}
	})
	p := Build(s, FromDecision(&d), Options{Title: "h100-100k"})
	b.Run("WriteHTML", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := p.WriteHTML(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
		var n countWriter
		_ = p.WriteHTML(&n)
		b.ReportMetric(float64(n)/(1<<20), "MiB/page")
	})
}

type countWriter int

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }
