package gavel_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gpusched/gpusched/sim/gavel"
	"github.com/gpusched/gpusched/sim/policy"
)

// TestGavelProperties: under any sequence of arrivals, starts, stops,
// ends and cycles, the policy answers without error, one priority per
// job; every live job's allocation lies in [0, 1] per model and sums to
// at most 1; and the same sequence gives the same priorities.
func TestGavelProperties(t *testing.T) {
	types := []string{"", "resnet50-bs64", "recommendation-bs2048", "lm-bs20"}
	c := cluster(t, "V100", "P100", "K80")
	tab := speeds(t)
	models := []string{"V100", "P100", "K80"}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "jobs")
		ty := map[string]string{}
		gpus := map[string]float64{}
		for i := range n {
			id := fmt.Sprintf("j%d", i)
			ty[id] = rapid.SampledFrom(types).Draw(t, "type")
			gpus[id] = float64(rapid.IntRange(1, 2).Draw(t, "gpus"))
		}
		ops := rapid.SliceOfN(rapid.IntRange(0, 4), 1, 40).Draw(t, "ops")
		picks := rapid.SliceOfN(rapid.IntRange(0, n-1), len(ops), len(ops)).Draw(t, "picks")
		on := rapid.SliceOfN(rapid.SampledFrom(models), len(ops), len(ops)).Draw(t, "models")
		agnostic := rapid.Bool().Draw(t, "agnostic")
		run := func() []int32 {
			p, err := gavel.New(gavel.Config{Cluster: c, Speeds: tab, Types: ty, Round: time.Minute, Agnostic: agnostic})
			if err != nil {
				t.Fatal(err)
			}
			state := map[string]int{} // 0 unknown, 1 waiting, 2 running, 3 ended
			var out []int32
			now := time.Duration(0)
			for k, op := range ops {
				now += 20 * time.Second
				id := fmt.Sprintf("j%d", picks[k])
				job := policy.Job{ID: id, GPUs: gpus[id]}
				switch {
				case op == 0 && (state[id] == 0 || state[id] == 2): // arrive, or stop and requeue
					pr, err := p.Enqueued(now, []policy.Job{job})
					if err != nil || len(pr) != 1 {
						t.Fatalf("Enqueued: %v %v", pr, err)
					}
					out = append(out, pr...)
					state[id] = 1
				case op == 1 && state[id] == 1:
					p.Started(now, id, on[k])
					state[id] = 2
				case op == 2 && (state[id] == 1 || state[id] == 2):
					p.Ended(now, id)
					state[id] = 3
				default:
					var running []policy.Job
					for i := range n {
						if rid := fmt.Sprintf("j%d", i); state[rid] == 2 {
							running = append(running, policy.Job{ID: rid, GPUs: gpus[rid], Running: true})
						}
					}
					pr, err := p.Running(now, running)
					if err != nil || len(pr) != len(running) {
						t.Fatalf("Running: %v %v", pr, err)
					}
					out = append(out, pr...)
				}
				for i := range n {
					id := fmt.Sprintf("j%d", i)
					x, ok := p.Allocation(id)
					if !ok {
						continue
					}
					var sum float64
					for _, v := range x {
						if v < 0 || v > 1 {
							t.Fatalf("%s: allocation %v out of [0, 1]", id, x)
						}
						sum += v
					}
					if sum > 1+1e-6 {
						t.Fatalf("%s: allocation %v sums to %g", id, x, sum)
					}
				}
			}
			return out
		}
		if a, b := run(), run(); !slices.Equal(a, b) {
			t.Fatalf("two runs of one sequence: %v and %v", a, b)
		}
	})
}
