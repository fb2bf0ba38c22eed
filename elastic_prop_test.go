package gpusched

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// elasticRun replays one drawn stream of steps on a fresh Scheduler (3–4
// DGX H100 hosts, one queue, a PlanPreemptor, Config.Elastic): each step
// submits a rigid or elastic job, finishes or checkpoints a running one,
// or runs a cycle whose Decision the host carries out — bindings started,
// shrinks and grows confirmed (or left in flight a while), preemptions
// reported. After every step it checks the invariants (ledger, quotas,
// GPUs held once) and the elastic ones: no job lost, an elastic job never
// below its minimum nor above its size before it shrank (nor its count).
// It returns the transcript of the Decisions.
func elasticRun(t fatalT, hosts int, steps []int) string {
	sp, err := topology.Generator{Name: "p", Machine: "dgx-h100", Hosts: hosts, HostsPerToR: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Name: "root", Children: []queue.Node{{Name: "q"}}}},
		Preemptor: pp, Elastic: &ElasticConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	live := map[string]bool{}
	var order []string // live jobs, in submission order
	size := map[string]int{}
	type flight struct {
		id   string
		grow bool
	}
	var inflight []flight
	var stops []string
	n := 0
	for i, step := range steps {
		x := step % 1000
		now = now.Add(time.Duration(1+x%7) * time.Minute)
		switch []int{0, 0, 1, 2, 3, 3, 4, 4, 5, 5}[step/1000] {
		case 0: // submit
			n++
			id := fmt.Sprintf("j%02d", n)
			g := workload.TaskGroup{Count: 1, GPUs: []int{1, 2, 4, 8}[(x/5)%4]}
			if (x/20)%2 == 0 {
				g = workload.TaskGroup{Count: 4 + (x/40)%5, MinCount: 2, GPUs: 1 + (x/200)%2}
			}
			j := workload.Job{ID: id, Queue: "q", Priority: int32((x / 7) % 3), Groups: []workload.TaskGroup{g}}
			if err := s.Submit(j, now); err == nil {
				live[id] = true
				order = append(order, id)
			}
		case 1, 2, 3: // cancel the waiting jobs, or finish or checkpoint a running one
			if step/1000 >= 4 && step/1000 <= 5 {
				for _, id := range slices.Clone(order) {
					if st, _ := s.Job(id); st.State.Waiting() {
						if err := s.Cancel(id, now); err != nil {
							t.Fatal(err)
						}
						delete(live, id)
						order = slices.DeleteFunc(order, func(o string) bool { return o == id })
					}
				}
				break
			}
			for k := range order {
				id := order[(k+x)%len(order)]
				st, _ := s.Job(id)
				if st.State != queue.Running {
					continue
				}
				if step/1000 == 2 {
					if err := s.Finished(id, now); err != nil {
						t.Fatal(err)
					}
					delete(live, id)
					order = slices.DeleteFunc(order, func(o string) bool { return o == id })
					inflight = slices.DeleteFunc(inflight, func(f flight) bool { return f.id == id })
				} else if err := s.Checkpointed(id, now, now); err != nil {
					t.Fatal(err)
				}
				break
			}
		case 4: // confirm what is in flight, report stops
			for _, id := range stops {
				if st, ok := s.Job(id); ok && st.State.Holding() {
					if err := s.Preempted(id, now); err != nil {
						t.Fatal(err)
					}
				}
			}
			stops = stops[:0]
			for _, f := range inflight {
				var err error
				if f.grow {
					err = s.Grown(f.id, now)
				} else {
					err = s.Shrunk(f.id, now)
				}
				if err != nil {
					t.Fatalf("step %d: %v\n%s", i, err, b.String())
				}
			}
			inflight = inflight[:0]
		default: // a cycle
			d := s.Schedule(now)
			fmt.Fprintf(&b, "@%d\n%s", i, d.Format(c))
			for _, bd := range d.Bindings {
				if err := s.Started(bd.Job, now); err != nil {
					t.Fatal(err)
				}
				size[bd.Job] = bd.Placement.Len()
			}
			for _, p := range d.Preemptions {
				stops = append(stops, p.Job)
			}
			for _, sh := range d.Shrinks {
				inflight = append(inflight, flight{id: sh.Job})
			}
			for _, g := range d.Grows {
				inflight = append(inflight, flight{id: g.Job, grow: true})
				if g.Size > size[g.Job] {
					t.Fatalf("step %d: %s grows to %d, above %d before it shrank", i, g.Job, g.Size, size[g.Job])
				}
			}
		}
		checkInvariants(t, s, fmt.Sprintf("step %d", i))
		if s.Len() != len(live) {
			t.Fatalf("step %d: %d live jobs, want %d", i, s.Len(), len(live))
		}
		for _, id := range order {
			st, ok := s.Job(id)
			if !ok {
				t.Fatalf("step %d: job %s lost", i, id)
			}
			if !st.State.Holding() {
				continue
			}
			k := st.Placement.Len()
			if k < st.Spec.MinTasks() || k > st.Spec.Groups[0].Count {
				t.Fatalf("step %d: %s holds %d tasks (min %d, count %d)", i, id, k, st.Spec.MinTasks(), st.Spec.Groups[0].Count)
			}
			if st.State == queue.Running && k > size[id] && size[id] > 0 {
				t.Fatalf("step %d: %s holds %d tasks, above %d it was bound with", i, id, k, size[id])
			}
		}
	}
	return b.String()
}

// TestPropertyElastic: on random streams, no job is lost or placed
// twice, an elastic job stays between its minimum and its size before it
// shrank, the ledger and quotas stay consistent, and the same stream
// gives byte-identical Decisions.
func TestPropertyElastic(t *testing.T) {
	var shrinks, grows int
	rapid.Check(t, func(rt *rapid.T) {
		hosts := rapid.IntRange(1, 3).Draw(rt, "hosts")
		steps := elasticSteps(rapid.Uint64().Draw(rt, "seed"), rapid.IntRange(10, 120).Draw(rt, "steps"))
		a := elasticRun(rt, hosts, steps)
		if b := elasticRun(rt, hosts, steps); a != b {
			rt.Fatalf("decisions differ:\n%s\n---\n%s", a, b)
		}
		shrinks += strings.Count(a, "\nshrink ")
		grows += strings.Count(a, "\ngrow ")
	})
	t.Logf("%d shrinks, %d grows", shrinks, grows)
}

// TestElasticStreamsResize: the streams of TestPropertyElastic do shrink
// and grow (200 fixed seeds), so the property checks something.
func TestElasticStreamsResize(t *testing.T) {
	var shrinks, grows int
	for seed := range uint64(200) {
		a := elasticRun(t, 1+int(seed%3), elasticSteps(seed, 100))
		shrinks += strings.Count(a, "\nshrink ")
		grows += strings.Count(a, "\ngrow ")
	}
	t.Logf("%d shrinks, %d grows", shrinks, grows)
	if shrinks == 0 || grows == 0 {
		t.Errorf("no shrink (%d) or no grow (%d) in any stream", shrinks, grows)
	}
}

// fatalT is what elasticRun needs of *testing.T and *rapid.T.
type fatalT interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// elasticSteps draws n steps from seed.
func elasticSteps(seed uint64, n int) []int {
	rng := rand.New(rand.NewPCG(seed, 1))
	steps := make([]int, n)
	for i := range steps {
		steps[i] = rng.IntN(10000)
	}
	return steps
}
