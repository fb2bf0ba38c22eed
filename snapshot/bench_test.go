package snapshot

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// benchScheduler is h100-1k (1,000 GPUs) with n jobs of 1 to 8 GPUs in
// four queues: as many running as fit, the rest waiting.
func benchScheduler(b *testing.B, n int) (*gpusched.Scheduler, CaptureOptions) {
	c, err := topology.LoadPreset("h100-1k")
	if err != nil {
		b.Fatal(err)
	}
	cfg := gpusched.Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}}}}
	p, _ := gang.New("topology", gang.Options{})
	cfg.Placer = p
	s, err := gpusched.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("j%05d", i)
		j := workload.Job{ID: id, Queue: string(rune('a' + i%4)), Runtime: time.Hour, Groups: []workload.TaskGroup{{Count: 1, GPUs: 1 << (i % 4)}}}
		if err := s.Submit(j, t0.Add(time.Duration(i)*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	now := t0.Add(time.Duration(n) * time.Second)
	for _, x := range s.Schedule(now).Bindings {
		if err := s.Started(x.Job, now); err != nil {
			b.Fatal(err)
		}
	}
	return s, CaptureOptions{}
}

// BenchmarkSnapshot measures Capture and Encode, and Load, of a state of
// 1,000 and 10,000 jobs on 1,000 GPUs.
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		s, opt := benchScheduler(b, n)
		now := t0.Add(time.Duration(n+1) * time.Second)
		b.Run(fmt.Sprintf("capture-encode/%d-jobs", n), func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				st, err := Capture(s, now, opt)
				if err != nil {
					b.Fatal(err)
				}
				if err := Encode(&buf, st, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "bytes/state")
		})
		st, _ := Capture(s, now, opt)
		var buf bytes.Buffer
		if err := Encode(&buf, st, ""); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("load/%d-jobs", n), func(b *testing.B) {
			for b.Loop() {
				l, err := Load(buf.Bytes(), "bench", Options{NoPreemption: true})
				if err != nil || l.Scheduler.Len() != n {
					b.Fatal(err)
				}
			}
		})
	}
}
