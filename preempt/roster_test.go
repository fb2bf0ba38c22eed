package preempt

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestRoster files, refiles and removes jobs, and checks what a plan
// through the State's Roster counts in bulk.
func TestRoster(t *testing.T) {
	f := newFixture(t, cluster(t, "dgx-h100", 4, 0), nil)
	low := f.run(t, jobSpec{id: "low", queue: "q", prio: 0, tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(time.Hour)})
	f.run(t, jobSpec{id: "high", queue: "q", prio: 9, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(time.Hour)})
	f.run(t, jobSpec{id: "young", queue: "q", prio: 9, tasks: []task{{"dgx-h100-3", 0, 8}}, started: ago(time.Minute), minRun: time.Hour})
	f.run(t, jobSpec{id: "other", queue: "r", prio: 0, tasks: []task{{"dgx-h100-4", 0, 8}}, started: ago(time.Hour), nonPre: true})
	ro := f.st.Roster()
	if ro.Len() != 4 {
		t.Fatalf("Len %d", ro.Len())
	}
	if err := ro.Add(low); err == nil {
		t.Error("a job filed twice")
	}
	if err := NewRoster().Add(low); err == nil {
		t.Error("a job filed in two rosters")
	}
	if NewRoster().Remove(low) {
		t.Error("removed a job from a roster it is not in")
	}
	s := newSearch(t, Config{})
	pend := f.pending(t, "p", "q", 5, 1, 8, "")
	p, np := s.Plan(f.st, pend, now)
	if got := victimIDs(p); !slices.Equal(got, []string{"low"}) {
		t.Fatalf("%v %v", p, np)
	}
	// low stops being a candidate: no plan; the others are counted in bulk.
	low.Stopping = true
	f.st.Update("low")
	p, np = s.Plan(f.st, pend, now)
	if p != nil {
		t.Fatalf("plan %s with the only candidate stopping", p)
	}
	want := [NumExclusions]int{ExclStopping: 1, ExclNonPreemptible: 1, ExclMinRunTime: 1, ExclPriority: 1}
	if np.Excluded != want || np.Eligible != 0 || !np.Until.Equal(now.Add(59*time.Minute)) {
		t.Errorf("excluded %v, eligible %d, until %v", np.Excluded, np.Eligible, np.Until)
	}
	// Priority changes move jobs between buckets.
	low.Stopping = false
	low.Spec.Priority = 7
	f.st.Update("low")
	if p, _ = s.Plan(f.st, pend, now); p != nil {
		t.Errorf("plan %s: low's priority is 7 now", p)
	}
	if p, _ = s.Plan(f.st, f.pending(t, "p", "q", 8, 1, 8, ""), now); !slices.Equal(victimIDs(p), []string{"low"}) {
		t.Errorf("plan %s for priority 8", p)
	}
	if !f.st.Remove("low") || ro.Len() != 3 || f.st.Update("low") {
		t.Error("Remove")
	}
	if _, np = s.Plan(f.st, f.pending(t, "p", "q", 8, 1, 8, ""), now); np == nil || np.Eligible != 0 {
		t.Errorf("no plan expected without low: %v", np)
	}
}

// TestRosterReplacedPlacement: a job whose placement is replaced by a new
// one (as the Scheduler does when a job shrinks) is planned with the new
// placement's GPUs, although the planner keeps what it derived from the
// old one (Job.Placement).
func TestRosterReplacedPlacement(t *testing.T) {
	f := newFixture(t, cluster(t, "dgx-h100", 2, 0), nil)
	low := f.run(t, jobSpec{id: "low", queue: "q", prio: 0, tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(time.Hour)})
	f.run(t, jobSpec{id: "high", queue: "q", prio: 9, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(time.Hour)})
	s := newSearch(t, Config{})
	pend := f.pending(t, "p", "q", 5, 1, 8, "")
	gpuMilli := func() int64 {
		t.Helper()
		p, np := s.Plan(f.st, pend, now)
		if p == nil {
			t.Fatalf("no plan: %v", np)
		}
		v, ok := p.Victim("low")
		if !ok {
			t.Fatalf("plan %s without low", p)
		}
		return v.GPUMilli
	}
	if got := gpuMilli(); got != 8000 {
		t.Fatalf("victim frees %d milli-GPU, want 8000", got)
	}
	// low shrinks to 4 GPUs: a new placement, the other 4 GPUs released.
	np := low.Placement.Clone()
	cl := np.Claims[0]
	np.Claims[0].GPUs = cl.GPUs[:4:4]
	if err := f.l.Release(topology.Claim{Host: cl.Host, GPUs: cl.GPUs[4:]}); err != nil {
		t.Fatal(err)
	}
	low.Placement = np
	f.st.Update("low")
	if got := gpuMilli(); got != 4000 {
		t.Fatalf("victim frees %d milli-GPU after shrinking to 4 GPUs, want 4000", got)
	}
}

// TestRosterPlacementEditedInPlace: a placement emptied in place, against
// Job.Placement's contract, gives a plan or a reason, never a panic: an
// elastic job (shrink units) and a rigid one.
func TestRosterPlacementEditedInPlace(t *testing.T) {
	f := newFixture(t, cluster(t, "dgx-h100", 2, 0), nil)
	elastic := f.run(t, jobSpec{id: "elastic", queue: "q", prio: 0, tasks: []task{{"dgx-h100-1", 0, 4}, {"dgx-h100-1", 4, 4}}, min: 1, started: ago(time.Hour)})
	rigid := f.run(t, jobSpec{id: "rigid", queue: "q", prio: 0, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(time.Hour)})
	s := newSearch(t, Config{})
	pend := f.pending(t, "p", "q", 5, 1, 8, "")
	if p, np := s.Plan(f.st, pend, now); p == nil {
		t.Fatalf("no plan before the edit: %v", np)
	}
	elastic.Placement.Claims = nil
	rigid.Placement.Claims = nil
	if p, np := s.Plan(f.st, pend, now); p == nil && np == nil {
		t.Fatal("neither a plan nor a reason")
	}
}

// TestPropertyRosterSettle files, refiles and removes random jobs (some
// holding nothing, several on one host; removed from the tail or from the
// settled order, with the roster settling on its own when enough changed)
// in random runs between plans and checks, after each run, that nothing
// dead is left and that the host-ordered list a plan reads equals
// the one inserting each filed job after its host's last entry gives (the
// roster's former filing, kept here as the oracle), entry by entry: the
// job, its bucket, host and flags.
func TestPropertyRosterSettle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ro := NewRoster()
		var oracle []rentry
		oracleAdd := func(j *Job) {
			if j.rb == nil {
				return
			}
			k := sort.Search(len(oracle), func(k int) bool { return oracle[k].host > j.rhost })
			oracle = slices.Insert(oracle, k, rentry{j: j, b: j.rb, host: j.rhost, flags: j.rflags})
		}
		oracleRemove := func(j *Job) {
			k := slices.IndexFunc(oracle, func(e rentry) bool { return e.j == j })
			if k >= 0 {
				oracle = slices.Delete(oracle, k, k+1)
			}
		}
		hosts := rapid.IntRange(1, 40).Draw(rt, "hosts")
		var filed []*Job
		seq := 0
		newJob := func() *Job {
			seq++
			g := workload.TaskGroup{Count: 1, GPUs: 1}
			j := &Job{Spec: &workload.Job{ID: fmt.Sprintf("j%d", seq), Queue: rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "queue"),
				Priority: int32(rapid.IntRange(0, 3).Draw(rt, "prio")), Groups: []workload.TaskGroup{g}}}
			p := &gang.Placement{Job: j.Spec.ID, Placed: []int{0}}
			if rapid.IntRange(0, 9).Draw(rt, "empty") > 0 { // one in ten holds nothing
				h := topology.HostID(rapid.IntRange(0, hosts-1).Draw(rt, "host"))
				p.Claims = []topology.Claim{{Host: h, GPUs: []topology.GPUClaim{{GPU: 0}}}}
				p.Tasks = []gang.TaskRef{{Group: 0, Index: 0}}
				p.Placed = []int{1}
			}
			j.Placement = p
			j.Stopping = rapid.IntRange(0, 5).Draw(rt, "stopping") == 0
			return j
		}
		for range rapid.IntRange(1, 12).Draw(rt, "runs") {
			for range rapid.IntRange(0, 200).Draw(rt, "steps") {
				switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
				case op < 6 || len(filed) == 0:
					j := newJob()
					if err := ro.Add(j); err != nil {
						rt.Fatalf("Add: %v", err)
					}
					oracleAdd(j)
					filed = append(filed, j)
				case op < 8:
					k := rapid.IntRange(0, len(filed)-1).Draw(rt, "remove")
					j := filed[k]
					if !ro.Remove(j) {
						rt.Fatalf("Remove %s", j.Spec.ID)
					}
					oracleRemove(j)
					filed = slices.Delete(filed, k, k+1)
				default: // a change of priority or stopping refiles it
					j := filed[rapid.IntRange(0, len(filed)-1).Draw(rt, "update")]
					j.Spec.Priority = int32(rapid.IntRange(0, 3).Draw(rt, "new prio"))
					j.Stopping = !j.Stopping
					oracleRemove(j)
					ro.Update(j)
					oracleAdd(j)
				}
			}
			ro.settle() // what a plan does first
			if len(ro.tail) != 0 || ro.dead != 0 || slices.ContainsFunc(ro.all, func(e rentry) bool { return e.j == nil }) {
				rt.Fatalf("settled: %d in the tail, %d dead", len(ro.tail), ro.dead)
			}
			if len(ro.all) != len(oracle) {
				rt.Fatalf("%d entries, the oracle %d", len(ro.all), len(oracle))
			}
			for i := range oracle {
				if e, o := ro.all[i], oracle[i]; e.j != o.j || e.b != o.b || e.host != o.host || e.flags != o.flags {
					rt.Fatalf("entry %d: %s on host %d, the oracle %s on host %d", i, ro.all[i].j.Spec.ID, ro.all[i].host, oracle[i].j.Spec.ID, oracle[i].host)
				}
			}
		}
	})
}
