package gpusched

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// TestPropertyPreemptionIndexed runs two Schedulers with a PlanPreemptor
// in lockstep through the same random events — submissions of random
// shapes, priorities and protections in two queues with guarantees,
// finishes, checkpoints, priority changes, GPU and host faults, and the
// host carrying out preemptions and recoveries — one planning through its
// roster of holding jobs (kept by the events), the other visiting every
// holding job for every plan. Their Decisions must be byte-identical in
// every cycle: the roster changes how much a plan looks at, never what it
// decides.
func TestPropertyPreemptionIndexed(t *testing.T) {
	var preemptions, cycles int
	rapid.Check(t, func(rt *rapid.T) {
		c := testCluster(t, rapid.IntRange(2, 4).Draw(rt, "hosts"), 2)
		total := int64(c.NumGPUs())
		na := rapid.Int64Range(0, total).Draw(rt, "nominalA")
		pcfg := preempt.Config{LowerPriority: preempt.Scope(rapid.IntRange(0, 2).Draw(rt, "scope")), FairSharing: rapid.Bool().Draw(rt, "fs"),
			Reclaim: preempt.ReclaimPolicy(rapid.IntRange(0, 2).Draw(rt, "reclaim"))}
		plans := rapid.IntRange(1, 8).Draw(rt, "plans")
		var ss [2]*Scheduler
		for i := range ss {
			p, err := NewPlanPreemptor(pcfg, plans)
			if err != nil {
				rt.Fatal(err)
			}
			s, err := New(Config{Cluster: c, DefaultRuntime: time.Hour, Preemptor: p, MaxRestarts: 2,
				Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
					{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: na}}},
					{Name: "b", Quotas: []queue.Quota{{Resource: "gpu", Nominal: total - na}}},
				}}}})
			if err != nil {
				rt.Fatal(err)
			}
			ss[i] = s
		}
		ss[1].victims.noRoster = true
		both := func(f func(s *Scheduler) error) {
			var errs [2]error
			for i, s := range ss {
				errs[i] = f(s)
			}
			if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
				rt.Fatalf("the Schedulers disagree: %v / %v", errs[0], errs[1])
			}
		}
		holding := func(st queue.State) []string {
			var ids []string
			ss[0].Holding(func(id string, js JobStatus) bool {
				if js.State == st {
					ids = append(ids, id)
				}
				return true
			})
			return ids
		}
		now := t0
		n := 0
		stops := map[string]time.Time{} // the host stops these by then
		stopKind := map[string]string{}
		for step := 0; step < 40; step++ {
			now = now.Add(time.Duration(rapid.IntRange(0, 30).Draw(rt, "dt")) * time.Minute)
			var due []string
			for id, at := range stops {
				if !at.After(now) {
					due = append(due, id)
				}
			}
			slices.Sort(due)
			for _, id := range due {
				delete(stops, id)
				if st, ok := ss[0].Job(id); !ok || !st.State.Holding() {
					continue
				}
				switch stopKind[id] {
				case "preempt":
					both(func(s *Scheduler) error { return s.Preempted(id, now) })
				case "end":
					both(func(s *Scheduler) error { return s.Failed(id, now) })
				default:
					both(func(s *Scheduler) error { return s.Requeue(id, now) })
				}
			}
			for k := rapid.IntRange(0, 3).Draw(rt, "events"); k > 0; k-- {
				switch e := rapid.IntRange(0, 9).Draw(rt, "event"); {
				case e < 4:
					id := fmt.Sprintf("j%d", n)
					n++
					g := workload.TaskGroup{Count: rapid.IntRange(1, 2).Draw(rt, "count"), GPUs: rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(rt, "gpus")}
					j := workload.Job{ID: id, Queue: rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "queue"), Priority: int32(rapid.IntRange(0, 3).Draw(rt, "prio")),
						Groups: []workload.TaskGroup{g}, Runtime: time.Duration(rapid.IntRange(1, 6).Draw(rt, "rt")) * time.Hour,
						CheckpointInterval: time.Duration(rapid.IntRange(0, 2).Draw(rt, "cpi")) * 30 * time.Minute}
					switch rapid.IntRange(0, 6).Draw(rt, "protect") {
					case 0:
						j.NonPreemptible = true
					case 1:
						j.MinRunTime = time.Duration(rapid.IntRange(1, 90).Draw(rt, "minRun")) * time.Minute
					case 2:
						j.MaxPreemptions = 1
					}
					if rapid.IntRange(0, 3).Draw(rt, "topo") == 0 {
						j.Topology = []workload.Constraint{{Level: "tor", Required: true}}
					}
					both(func(s *Scheduler) error { return s.Submit(j, now) })
				case e < 6:
					if running := holding(queue.Running); len(running) > 0 {
						id := rapid.SampledFrom(running).Draw(rt, "job")
						if rapid.Bool().Draw(rt, "finish") {
							both(func(s *Scheduler) error { return s.Finished(id, now) })
						} else {
							both(func(s *Scheduler) error { return s.Checkpointed(id, now, now) })
						}
					}
				case e < 8:
					if ids := append(holding(queue.Running), holding(queue.Admitted)...); len(ids) > 0 {
						id := rapid.SampledFrom(ids).Draw(rt, "job")
						p := int32(rapid.IntRange(0, 3).Draw(rt, "newPrio"))
						both(func(s *Scheduler) error { return s.SetPriority(id, p) })
					}
				default:
					h := []topology.Health{topology.Healthy, topology.Draining, topology.Failed}[rapid.IntRange(0, 2).Draw(rt, "health")]
					if rapid.Bool().Draw(rt, "gpuFault") {
						g := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(rt, "gpu"))
						both(func(s *Scheduler) error { _, err := s.SetGPUHealth(g, h); return err })
					} else {
						hh := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(rt, "host"))
						both(func(s *Scheduler) error { _, err := s.SetHostHealth(s.Cluster().HostName(hh), h); return err })
					}
				}
			}
			var d [2]Decision
			for i, s := range ss {
				d[i] = s.Schedule(now)
			}
			cycles++
			if a, b := d[0].Format(c), d[1].Format(c); a != b {
				rt.Fatalf("step %d: through the roster:\n%s\nvisiting every job:\n%s", step, a, b)
			}
			start := rapid.Bool().Draw(rt, "start")
			for _, b := range d[0].Bindings {
				if start {
					both(func(s *Scheduler) error { return s.Started(b.Job, now) })
				}
			}
			for _, p := range d[0].Preemptions {
				preemptions++
				stops[p.Job], stopKind[p.Job] = now.Add(time.Duration(rapid.IntRange(0, 2).Draw(rt, "delay"))*time.Minute), "preempt"
			}
			for _, r := range d[0].Recoveries {
				switch r.Action {
				case preempt.ActionKeep:
				case preempt.ActionEnd:
					stops[r.Job], stopKind[r.Job] = now, "end"
				default:
					if stopKind[r.Job] != "preempt" || stops[r.Job].IsZero() {
						stops[r.Job], stopKind[r.Job] = now.Add(r.Grace), "requeue"
					}
				}
			}
			checkInvariants(t, ss[0], fmt.Sprint("step ", step))
		}
	})
	t.Logf("%d cycles, %d preemptions", cycles, preemptions)
	if preemptions == 0 {
		t.Error("no preemption")
	}
}

// TestPropertyNoPlanMemo drives a Scheduler with a PlanPreemptor through
// random events, with no quotas (so that "no plan" verdicts are kept across
// cycles while nothing that matters changes): whenever a kept verdict
// answers, a fresh plan on the same state must find no victims either.
func TestPropertyNoPlanMemo(t *testing.T) {
	var hits, stale int
	rapid.Check(t, func(rt *rapid.T) {
		c := testCluster(t, rapid.IntRange(2, 6).Draw(rt, "hosts"), rapid.SampledFrom([]int{0, 2}).Draw(rt, "perToR"))
		pcfg := preempt.Config{LowerPriority: preempt.Scope(rapid.IntRange(0, 1).Draw(rt, "scope"))}
		qs := queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a"}, {Name: "b"}}}}
		if rapid.Bool().Draw(rt, "quotas") {
			// Guarantees: verdicts then follow the quotas' usage too.
			// The root's quota is the capacity or less (then nominated
			// jobs' held demand binds at the root too).
			total := int64(c.NumGPUs())
			if rapid.Bool().Draw(rt, "rootQuota") {
				total = rapid.Int64Range(total/2, total).Draw(rt, "root")
				qs.Root.Quotas = []queue.Quota{{Resource: "gpu", Nominal: total}}
			}
			na := rapid.Int64Range(0, total).Draw(rt, "nominalA")
			qs.Root.Children[0].Quotas = []queue.Quota{{Resource: "gpu", Nominal: na}}
			qs.Root.Children[1].Quotas = []queue.Quota{{Resource: "gpu", Nominal: total - na}}
			pcfg.FairSharing = rapid.Bool().Draw(rt, "fs")
		}
		p, err := NewPlanPreemptor(pcfg, rapid.IntRange(1, 8).Draw(rt, "plans"))
		if err != nil {
			rt.Fatal(err)
		}
		p.testMemo = func(job string, plan *preempt.Plan) {
			hits++
			if plan != nil && len(plan.Victims) > 0 {
				stale++
				rt.Fatalf("kept no-plan for %s, but a fresh plan is %s", job, plan)
			}
		}
		s, err := New(Config{Cluster: c, DefaultRuntime: time.Hour, Preemptor: p, Queues: qs})
		if err != nil {
			rt.Fatal(err)
		}
		now := t0
		n := 0
		stops := map[string]time.Time{}
		var running []string
		for step := 0; step < 60; step++ {
			now = now.Add(time.Duration(rapid.IntRange(0, 20).Draw(rt, "dt")) * time.Minute)
			for id, at := range stops {
				if !at.After(now) {
					delete(stops, id)
					if st, ok := s.Job(id); ok && st.State.Holding() {
						if err := s.Preempted(id, now); err != nil {
							rt.Fatal(err)
						}
					}
				}
			}
			for k := rapid.IntRange(0, 3).Draw(rt, "events"); k > 0; k-- {
				switch e := rapid.IntRange(0, 9).Draw(rt, "event"); {
				case e < 5:
					id := fmt.Sprintf("j%d", n)
					n++
					g := workload.TaskGroup{Count: rapid.IntRange(1, 2).Draw(rt, "count")}
					if rapid.IntRange(0, 3).Draw(rt, "share") == 0 {
						g.GPUMilli = rapid.SampledFrom([]int{250, 500}).Draw(rt, "milli")
					} else {
						g.GPUs = rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(rt, "gpus")
					}
					g.CPUMilli = int64(rapid.IntRange(0, 64).Draw(rt, "cores")) * 1000
					j := workload.Job{ID: id, Queue: rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "queue"), Priority: int32(rapid.IntRange(0, 3).Draw(rt, "prio")),
						Groups: []workload.TaskGroup{g}, Runtime: time.Duration(rapid.IntRange(1, 6).Draw(rt, "rt")) * time.Hour}
					switch rapid.IntRange(0, 5).Draw(rt, "protect") {
					case 0:
						j.NonPreemptible = true
					case 1:
						j.MinRunTime = time.Duration(rapid.IntRange(1, 90).Draw(rt, "minRun")) * time.Minute
					case 2:
						j.MaxPreemptions = 1
					}
					if rapid.IntRange(0, 3).Draw(rt, "topo") == 0 {
						j.Topology = []workload.Constraint{{Level: "host", Required: true}}
					}
					_ = s.Submit(j, now)
				case e < 7:
					if len(running) > 0 {
						id := rapid.SampledFrom(running).Draw(rt, "job")
						if st, ok := s.Job(id); ok && st.State == queue.Running {
							if err := s.Finished(id, now); err != nil {
								rt.Fatal(err)
							}
						}
					}
				case e < 8:
					if len(running) > 0 {
						id := rapid.SampledFrom(running).Draw(rt, "job")
						if st, ok := s.Job(id); ok && st.State.Holding() {
							if err := s.SetPriority(id, int32(rapid.IntRange(0, 3).Draw(rt, "newPrio"))); err != nil {
								rt.Fatal(err)
							}
						}
					}
				default:
					h := []topology.Health{topology.Healthy, topology.Failed}[rapid.IntRange(0, 1).Draw(rt, "health")]
					if _, err := s.SetGPUHealth(topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(rt, "gpu")), h); err != nil {
						rt.Fatal(err)
					}
				}
			}
			d := s.Schedule(now)
			for _, b := range d.Bindings {
				if rapid.IntRange(0, 3).Draw(rt, "late") > 0 {
					if err := s.Started(b.Job, now); err != nil {
						rt.Fatal(err)
					}
					running = append(running, b.Job)
				}
			}
			for _, pr := range d.Preemptions {
				stops[pr.Job] = now.Add(time.Duration(rapid.IntRange(0, 2).Draw(rt, "delay")) * time.Minute)
			}
			for _, r := range d.Recoveries {
				if r.Action != preempt.ActionKeep {
					stops[r.Job] = now
				}
			}
		}
	})
	t.Logf("%d kept no-plans checked, %d stale", hits, stale)
	if hits == 0 {
		t.Error("no kept no-plan was checked")
	}
}
