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

// TestPropertyPreemption drives a Scheduler with a PlanPreemptor through
// random streams: jobs of random shapes (GPUs with CPU and memory, and
// CPU-only jobs), priorities and protections in queues with guarantees
// (flat or nested, the root's and a parent's quotas often below the
// cluster's capacity, sometimes a borrowing limit and a CPU quota),
// checkpoints, finishes, and the host carrying out every preemption and
// recovery one step later (sometimes slower), with random GPU and host
// faults. After every step the invariants hold (ledger, quotas,
// holdings). And:
//   - a job is never preempted for while a preemption for it is pending,
//     nor chosen twice, nor chosen when protected (non-preemptible, inside
//     its minimum run time, at its cap);
//   - a preempting job binds in the first cycle after all its victims
//     released (unless a fault took part of its placement meanwhile):
//     no job admitted while they stopped took the quota, GPUs, CPU or
//     memory it was promised; the Scheduler never preempts for a job that
//     then cannot be placed;
//   - every job the faults hit gets exactly one recovery action, and no
//     job is lost: every submitted job is live or ended by an event.
func TestPropertyPreemption(t *testing.T) {
	var preemptions, nominatedBinds, deferred, recoveries int
	rapid.Check(t, func(rt *rapid.T) {
		c := testCluster(t, rapid.IntRange(2, 4).Draw(rt, "hosts"), 2)
		qc, queues := preemptionQueues(rt, c)
		cfg := Config{Cluster: c, DefaultRuntime: time.Hour, Queues: qc}
		pcfg := preempt.Config{LowerPriority: preempt.Scope(rapid.IntRange(0, 1).Draw(rt, "scope")), FairSharing: rapid.Bool().Draw(rt, "fs")}
		p, err := NewPlanPreemptor(pcfg, 0)
		if err != nil {
			rt.Fatal(err)
		}
		cfg.Preemptor = p
		cfg.MaxRestarts = rapid.IntRange(0, 2).Draw(rt, "maxRestarts")
		s, err := New(cfg)
		if err != nil {
			rt.Fatal(err)
		}
		now := t0
		var submitted []string
		ended := map[string]bool{}
		pendingStops := map[string]time.Time{} // victims and recoveries the host will carry out, by when
		stopKind := map[string]string{}
		waitingFor := map[string][]string{} // preempting job → victims
		faultedSince := map[string]bool{}   // a fault happened while it waited
		for step := 0; step < 100; step++ {
			now = now.Add(time.Duration(rapid.IntRange(1, 30).Draw(rt, "dt")) * time.Minute)
			// The host carries out due stops.
			var due []string
			for id, at := range pendingStops {
				if !at.After(now) {
					due = append(due, id)
				}
			}
			slices.Sort(due)
			for _, id := range due {
				delete(pendingStops, id)
				st, ok := s.Job(id)
				if !ok || !st.State.Holding() {
					continue
				}
				var err error
				switch stopKind[id] {
				case "preempt":
					err = s.Preempted(id, now)
				case "end":
					err = s.Failed(id, now)
					ended[id] = true
				default:
					err = s.Requeue(id, now)
				}
				if err != nil {
					rt.Fatal(err)
				}
			}
			switch k := rapid.IntRange(0, 9).Draw(rt, "event"); {
			case k < 4:
				id := fmt.Sprintf("j%d", len(submitted))
				g := workload.TaskGroup{Count: rapid.IntRange(1, 2).Draw(rt, "count"), GPUs: rapid.SampledFrom([]int{0, 2, 4, 8}).Draw(rt, "gpus"),
					CPUMilli:  1000 * rapid.SampledFrom([]int64{0, 8, 56, 120, 180}).Draw(rt, "cores"),
					MemoryMiB: 1024 * rapid.SampledFrom([]int64{0, 64, 512, 1536}).Draw(rt, "memGiB")}
				if g.GPUs == 0 && g.CPUMilli == 0 {
					g.CPUMilli = 1000
				}
				j := workload.Job{ID: id, Queue: rapid.SampledFrom(queues).Draw(rt, "queue"), Priority: int32(rapid.IntRange(0, 3).Draw(rt, "prio")),
					Groups: []workload.TaskGroup{g}, Runtime: time.Duration(rapid.IntRange(1, 6).Draw(rt, "rt")) * time.Hour,
					CheckpointInterval: time.Duration(rapid.IntRange(0, 2).Draw(rt, "cpi")) * 30 * time.Minute}
				switch rapid.IntRange(0, 6).Draw(rt, "protect") {
				case 0:
					j.NonPreemptible = true
				case 1:
					j.MinRunTime = time.Hour
				case 2:
					j.MaxPreemptions = 1
				}
				if rapid.IntRange(0, 3).Draw(rt, "topo") == 0 {
					j.Topology = []workload.Constraint{{Level: "tor", Required: true}}
				}
				if err := s.Submit(j, now); err == nil {
					submitted = append(submitted, id)
				}
			case k == 4:
				// A random running job finishes or checkpoints.
				var running []string
				s.Holding(func(id string, st JobStatus) bool {
					if st.State == queue.Running {
						running = append(running, id)
					}
					return true
				})
				if len(running) > 0 {
					id := rapid.SampledFrom(running).Draw(rt, "job")
					if rapid.Bool().Draw(rt, "finish") {
						if err := s.Finished(id, now); err != nil {
							rt.Fatal(err)
						}
						ended[id] = true
					} else if err := s.Checkpointed(id, now, now); err != nil {
						rt.Fatal(err)
					}
				}
			case k == 5:
				h := []topology.Health{topology.Healthy, topology.Draining, topology.Failed}[rapid.IntRange(0, 2).Draw(rt, "health")]
				if rapid.Bool().Draw(rt, "gpuFault") {
					if _, err := s.SetGPUHealth(topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(rt, "gpu")), h); err != nil {
						rt.Fatal(err)
					}
				} else if _, err := s.SetHostHealth(c.HostName(topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(rt, "host"))), h); err != nil {
					rt.Fatal(err)
				}
				for id := range waitingFor {
					faultedSince[id] = true
				}
			}
			// Preempting jobs whose victims are all gone now must bind in
			// this cycle.
			var ready []string
			for id, victims := range waitingFor {
				gone := true
				for _, v := range victims {
					if st, ok := s.Job(v); ok && st.State.Holding() {
						gone = false
					}
				}
				if st, ok := s.Job(id); gone && ok && st.State.Waiting() {
					ready = append(ready, id)
				}
				if st, ok := s.Job(id); gone || !ok || !st.State.Waiting() {
					delete(waitingFor, id)
				}
			}
			d := s.Schedule(now)
			bound := map[string]bool{}
			for _, b := range d.Bindings {
				bound[b.Job] = true
				if err := s.Started(b.Job, now); err != nil {
					rt.Fatal(err)
				}
			}
			for _, id := range ready {
				switch {
				case bound[id]:
					nominatedBinds++
				case faultedSince[id]:
				default:
					// Its plan counted on another stop in progress (a
					// victim of another plan, a recovery) for quota: it
					// may wait for that one, which must be stopping.
					w := deferredBy(d, id)
					if st, ok := s.Job(w); w == "" || !ok || !st.State.Holding() || pendingStops[w].IsZero() {
						rt.Fatalf("%v: %s waited for victims now gone, but did not bind:\n%s", now, id, d.Format(c))
					}
					waitingFor[id] = []string{w}
					deferred++
					continue
				}
				delete(faultedSince, id)
			}
			seen := map[string]bool{}
			for _, pr := range d.Preemptions {
				preemptions++
				if seen[pr.Job] || pendingStops[pr.Job] != (time.Time{}) {
					rt.Fatalf("%s chosen twice", pr.Job)
				}
				seen[pr.Job] = true
				st, _ := s.Job(pr.Job)
				sp := st.Spec
				if sp.NonPreemptible || sp.MaxPreemptions > 0 && st.Preemptions >= sp.MaxPreemptions ||
					sp.MinRunTime > 0 && !st.Started.IsZero() && now.Sub(st.Started) < sp.MinRunTime {
					rt.Fatalf("protected job %s preempted: %+v", pr.Job, sp)
				}
				if bound[pr.Job] {
					rt.Fatalf("%s bound and preempted in one cycle", pr.Job)
				}
				pendingStops[pr.Job] = now.Add(time.Duration(rapid.IntRange(0, 2).Draw(rt, "delay")) * time.Minute)
				stopKind[pr.Job] = "preempt"
				waitingFor[pr.For] = append(waitingFor[pr.For], pr.Job)
			}
			for _, r := range d.Recoveries {
				recoveries++
				if seen[r.Job] {
					rt.Fatalf("%s recovered twice in a cycle", r.Job)
				}
				seen[r.Job] = true
				switch r.Action {
				case preempt.ActionKeep:
				case preempt.ActionEnd:
					pendingStops[r.Job], stopKind[r.Job] = now, "end"
				default:
					if stopKind[r.Job] != "preempt" || pendingStops[r.Job].IsZero() {
						pendingStops[r.Job], stopKind[r.Job] = now.Add(r.Grace), "requeue"
					}
				}
			}
			checkInvariants(t, s, fmt.Sprint("step ", step))
		}
		// No job lost.
		for _, id := range submitted {
			if _, live := s.Job(id); !live && !ended[id] {
				rt.Fatalf("job %s vanished", id)
			}
		}
	})
	t.Logf("%d preemptions, %d preempting jobs bound after their victims (%d waited for other stops first), %d recoveries", preemptions, nominatedBinds, deferred, recoveries)
	if preemptions == 0 || nominatedBinds == 0 || recoveries == 0 {
		t.Error("the property was not exercised")
	}
}

// deferredBy returns the stopping job a nominated job waits for after its
// own victims are gone (its plan counted on that stop too), or "".
func deferredBy(d Decision, id string) string {
	for _, p := range d.Pending {
		if p.Job == id && p.Reason != nil && p.Reason.Code == WaitPreemption && len(p.Reason.Victims) == 0 {
			return p.Reason.Blocker
		}
	}
	return ""
}

// preemptionQueues draws a quota tree for TestPropertyPreemption: leaves a
// and b under the root, or under a parent "org" beside a leaf c; the
// root's GPU quota is the cluster's capacity or less, and every level's
// nominal quotas fit in their parent's; sometimes org or a has a
// borrowing limit, and the root a CPU quota below the cluster's cores.
func preemptionQueues(rt *rapid.T, c *topology.Cluster) (queue.Config, []string) {
	total := int64(c.NumGPUs())
	root := total
	var rootQ []queue.Quota
	if rapid.Bool().Draw(rt, "rootQuota") {
		root = rapid.Int64Range(total/2, total).Draw(rt, "root")
		rootQ = append(rootQ, queue.Quota{Resource: "gpu", Nominal: root})
	}
	if rapid.IntRange(0, 3).Draw(rt, "cpuQuota") == 0 {
		cores := int64(c.NumHosts()) * c.CPUMilli(0) / 1000
		rootQ = append(rootQ, queue.Quota{Resource: "cpu", Nominal: rapid.Int64Range(cores/2, cores).Draw(rt, "rootCores")})
	}
	limit := func(name string) *int64 {
		if rapid.IntRange(0, 3).Draw(rt, name) != 0 {
			return nil
		}
		v := rapid.Int64Range(0, total).Draw(rt, name+"Limit")
		return &v
	}
	gpu := func(n int64, lim *int64) []queue.Quota {
		return []queue.Quota{{Resource: "gpu", Nominal: n, BorrowingLimit: lim}}
	}
	if !rapid.Bool().Draw(rt, "nested") {
		na := rapid.Int64Range(0, root).Draw(rt, "nominalA")
		nb := rapid.Int64Range(0, root-na).Draw(rt, "nominalB")
		return queue.Config{Root: queue.Node{Quotas: rootQ, Children: []queue.Node{
			{Name: "a", Quotas: gpu(na, limit("borrowA"))},
			{Name: "b", Quotas: gpu(nb, nil)},
		}}}, []string{"a", "b"}
	}
	org := rapid.Int64Range(0, root).Draw(rt, "nominalOrg")
	na := rapid.Int64Range(0, org).Draw(rt, "nominalA")
	nb := rapid.Int64Range(0, org-na).Draw(rt, "nominalB")
	nc := rapid.Int64Range(0, root-org).Draw(rt, "nominalC")
	return queue.Config{Root: queue.Node{Quotas: rootQ, Children: []queue.Node{
		{Name: "org", Quotas: gpu(org, limit("borrowOrg")), Children: []queue.Node{
			{Name: "a", Quotas: gpu(na, limit("borrowA"))},
			{Name: "b", Quotas: gpu(nb, nil)},
		}},
		{Name: "c", Quotas: gpu(nc, nil)},
	}}}, []string{"a", "b", "c"}
}

// TestCheckpointedErrors: checkpoints only for running jobs, inside the
// run.
func TestCheckpointedErrors(t *testing.T) {
	s := oneQueue(t, 1, queue.Policy{})
	if err := s.Checkpointed("x", t0, t0); err == nil {
		t.Fatal("unknown job accepted")
	}
	_ = s.Submit(gpuJob("a", 8), t0)
	if err := s.Checkpointed("a", t0, t0); err == nil {
		t.Fatal("pending job accepted")
	}
	s.Schedule(t0)
	_ = s.Started("a", t0.Add(time.Minute))
	if err := s.Checkpointed("a", t0, t0.Add(time.Hour)); err == nil {
		t.Fatal("checkpoint before the start accepted")
	}
	if err := s.Checkpointed("a", t0.Add(2*time.Hour), t0.Add(time.Hour)); err == nil {
		t.Fatal("checkpoint in the future accepted")
	}
	if err := s.Checkpointed("a", t0.Add(30*time.Minute), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if cp, _, _ := s.Progress("a"); !cp.Equal(t0.Add(30 * time.Minute)) {
		t.Fatalf("checkpoint %v", cp)
	}
	if _, err := NewPlanPreemptor(preempt.Config{Grace: -1}, 0); err == nil {
		t.Fatal("negative grace accepted")
	}
}
