package gpusched

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// FuzzElasticEvents drives a Scheduler with Config.Elastic (2 DGX H100
// hosts, two queues with quotas, a PlanPreemptor) through random
// sequences of submissions of elastic and rigid jobs, cycles whose shrinks
// and grows are confirmed or left in flight, Shrunk, Grown, Preempted,
// Finished and Checkpointed at hostile times and IDs, and RestoreResize
// with hostile sizes and claims. After every step nothing has panicked,
// the ledger and the quotas are consistent, the holding jobs are exactly
// those the ledger's claims are for, and no elastic job holds fewer tasks
// than its minimum or more than its count.
//
//	go test -run '^$' -fuzz FuzzElasticEvents -fuzztime 60s .
func FuzzElasticEvents(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 5, 0, 0, 2, 7, 9, 5, 5, 3, 5, 4, 4, 5})
	f.Add([]byte{0, 1, 0, 0, 0, 0, 5, 2, 5, 0, 4, 6, 5, 3, 5, 9, 8, 7, 1})
	f.Add([]byte{1, 1, 0, 5, 5, 6, 0, 3, 3, 5, 2, 2, 8, 8, 8, 5, 4})
	c := testClusterTB(f, 2, 2)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			return
		}
		pp, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue, Reclaim: preempt.ReclaimAny}, 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Cluster: c, Preemptor: pp, Elastic: &ElasticConfig{},
			Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
				{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}},
				{Name: "b", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}},
			}}}})
		if err != nil {
			t.Fatal(err)
		}
		tp := &eventTape{b: data}
		now := t0
		n := 0
		ids := func() string { return pick(tp, "j1", "j2", "j3", "j4", "j5", "nope", "") }
		when := func() time.Time {
			return now.Add(pick(tp, time.Duration(0), time.Minute, -time.Hour, math.MinInt64/2))
		}
		claim := func() topology.Claim {
			cl := topology.Claim{Host: topology.HostID(pick(tp, 0, 1, -1, 5))}
			for k := int(tp.byte() % 3); k > 0; k-- {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: topology.GPUID(pick(tp, 0, 1, 8, 15, -1, 99))})
			}
			return cl
		}
		claims := func() []topology.Claim {
			var out []topology.Claim
			for k := int(tp.byte() % 3); k > 0; k-- {
				out = append(out, claim())
			}
			return out
		}
		for step := 0; !tp.done() && step < 200; step++ {
			op := tp.byte() % 10
			what := fmt.Sprintf("step %d op %d", step, op)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s panicked: %v", what, r)
					}
				}()
				switch op {
				case 0, 1:
					n++
					g := workload.TaskGroup{Count: pick(tp, 4, 8, 2), MinCount: pick(tp, 0, 1, 2, 4, -1), GPUs: pick(tp, 1, 2)}
					_ = s.Submit(workload.Job{ID: fmt.Sprintf("j%d", n), Queue: pick(tp, "a", "b"), Priority: int32(pick(tp, 0, 1, 10)),
						Groups: []workload.TaskGroup{g}, Topology: pick(tp, []workload.Constraint(nil), []workload.Constraint{{Level: "host", Required: true}})}, when())
				case 2:
					_ = s.Shrunk(ids(), when())
				case 3:
					_ = s.Grown(ids(), when())
				case 4:
					_ = s.Preempted(ids(), when())
				case 5, 6:
					now = now.Add(time.Duration(tp.byte()%30) * time.Minute)
					d := s.Schedule(now)
					for _, b := range d.Bindings {
						_ = s.Started(b.Job, now)
					}
					confirm := tp.byte()%2 == 0
					for _, p := range d.Preemptions {
						_ = s.Preempted(p.Job, now)
					}
					for _, x := range d.Shrinks {
						if confirm {
							_ = s.Shrunk(x.Job, now)
						}
					}
					for _, x := range d.Grows {
						if confirm {
							_ = s.Grown(x.Job, now)
						}
					}
				case 7:
					_ = s.Finished(ids(), when())
				case 8:
					_ = s.Checkpointed(ids(), when(), when())
				case 9:
					_ = s.RestoreResize(Resize{Job: ids(), Size: pick(tp, []int(nil), []int{8}, []int{-1}, []int{2, 2}), Shrink: pick(tp, []topology.Claim(nil), claims()),
						Grow: pick(tp, []topology.Claim(nil), claims()), Grace: pick(tp, time.Duration(0), -time.Second)})
					_ = s.Resizes()
				}
			}()
			checkInvariants(t, s, what)
			checkHolders(t, s, what)
			s.jobs.ends.Ascend(func(j *job) bool {
				if k := j.placement.Len(); k < j.spec.MinTasks() || k > j.spec.Tasks() {
					t.Fatalf("%s: %s holds %d tasks (min %d, count %d)", what, j.spec.ID, k, j.spec.MinTasks(), j.spec.Tasks())
				}
				return true
			})
		}
	})
}
