package preempt

import (
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// tb is what the fixture builders need of a test: *testing.T,
// *testing.B and *rapid.T all have it.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture is a cluster, a ledger, an optional queue tree and the jobs
// running on them.
type fixture struct {
	c    *topology.Cluster
	l    *topology.Ledger
	tree *queue.Tree
	st   *State
}

// cluster builds hosts dgx-h100 machines (8 GPUs each), perToR to a ToR
// (0: flat).
func cluster(t tb, machine string, hosts, perToR int) *topology.Cluster {
	t.Helper()
	spec, err := topology.Generator{Name: "t", Machine: machine, Hosts: hosts, HostsPerToR: perToR}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newFixture(t tb, c *topology.Cluster, qc *queue.Config) *fixture {
	t.Helper()
	f := &fixture{c: c, l: topology.NewLedger(c)}
	if qc != nil {
		tr, err := queue.Build(*qc, capacityOf(c))
		if err != nil {
			t.Fatal(err)
		}
		f.tree = tr
	}
	f.st = NewState(f.l, f.tree)
	return f
}

func capacityOf(c *topology.Cluster) queue.Capacity {
	var cp queue.Capacity
	for h := 0; h < c.NumHosts(); h++ {
		hi := c.Host(topology.HostID(h))
		cp.Resources.CPUMilli += hi.CPUMilli
		cp.Resources.MemoryMiB += hi.MemoryMiB
		cp.Resources.GPUMilli += int64(hi.NumGPUs) * topology.MilliPerGPU
	}
	return cp
}

// task is one task of a running job: n whole GPUs on a host from GPU
// index at.
type task struct {
	host string
	at   int
	n    int
}

// jobSpec is a running job to set up.
type jobSpec struct {
	id, queue      string
	prio           int32
	tasks          []task
	min            int // elastic minimum (0: rigid)
	started        time.Duration
	checkpoint     time.Duration // 0: none
	minRun         time.Duration
	cap, preempted int
	nonPre         bool
}

// run puts a job on the ledger (and its charge on the tree) and records
// it. Times are offsets from t0; started 0 means not started.
func (f *fixture) run(t tb, js jobSpec) *Job {
	t.Helper()
	gpus := js.tasks[0].n
	spec := &workload.Job{ID: js.id, Queue: js.queue, Priority: js.prio, MinRunTime: js.minRun, MaxPreemptions: js.cap, NonPreemptible: js.nonPre,
		Groups: []workload.TaskGroup{{Count: len(js.tasks), MinCount: js.min, GPUs: gpus}}}
	p := &gang.Placement{Job: js.id, Placed: []int{len(js.tasks)}}
	for i, tk := range js.tasks {
		h, ok := f.c.HostByName(tk.host)
		if !ok {
			t.Fatalf("no host %s", tk.host)
		}
		first, _ := f.c.HostGPUs(h)
		cl := topology.Claim{Host: h}
		for k := 0; k < tk.n; k++ {
			cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(tk.at+k), Kind: topology.ClaimWhole})
		}
		p.Claims = append(p.Claims, cl)
		p.Tasks = append(p.Tasks, gang.TaskRef{Group: 0, Index: int32(i)})
	}
	if err := f.l.Allocate(p.Claims...); err != nil {
		t.Fatalf("job %s: %v", js.id, err)
	}
	j := &Job{Spec: spec, Placement: p, Preemptions: js.preempted}
	if js.started > 0 {
		j.Started = t0.Add(js.started)
	}
	if js.checkpoint > 0 {
		j.Checkpoint = t0.Add(js.checkpoint)
	}
	if f.tree != nil {
		leaf, ok := f.tree.Lookup(js.queue)
		if !ok {
			t.Fatalf("no queue %s", js.queue)
		}
		ch := chargeOf(j, f.tree, f.c)
		if b := f.tree.Check(leaf, ch); b != nil {
			t.Fatalf("job %s over quota: %v", js.id, b)
		}
		f.tree.Admit(leaf, ch, t0)
		f.tree.Start(leaf, ch, t0)
	}
	if err := f.st.Add(j); err != nil {
		t.Fatal(err)
	}
	return j
}

// pending builds a pending gang of count tasks of gpus GPUs.
func (f *fixture) pending(t tb, id, q string, prio int32, count, gpus int, level string) *Pending {
	t.Helper()
	spec := workload.Job{ID: id, Queue: q, Priority: prio, Groups: []workload.TaskGroup{{Count: count, GPUs: gpus}}}
	if level != "" {
		spec.Topology = []workload.Constraint{{Level: level, Required: true}}
	}
	r, err := gang.NewRequest(f.c, &spec)
	if err != nil {
		t.Fatal(err)
	}
	return &Pending{Request: r, Queue: q, Priority: prio}
}

func newSearch(t tb, cfg Config) *Search {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rulesChecked += agreeWithNaiveRules(t, s)
	return s
}

func victimIDs(p *Plan) []string {
	if p == nil {
		return nil
	}
	var ids []string
	for _, v := range p.Victims {
		ids = append(ids, v.Job)
	}
	return ids
}

// checkApplies verifies that the plan's victims released on a clone of the
// ledger let the plan's placement commit, and the gang place.
func checkApplies(t tb, f *fixture, p *Plan, pend *Pending) {
	t.Helper()
	l := f.l.Clone()
	for _, v := range p.Victims {
		if err := l.Release(v.Claims...); err != nil {
			t.Fatalf("victim %s: %v", v.Job, err)
		}
	}
	// The placement must place the gang: every group at least its
	// minimum (an empty placement commits trivially).
	if len(p.Placement.Placed) != len(pend.Request.Groups) {
		t.Fatalf("plan placement has %d groups, the gang %d: %+v", len(p.Placement.Placed), len(pend.Request.Groups), p.Placement)
	}
	for g, k := range p.Placement.Placed {
		if k < pend.Request.Groups[g].Min || len(p.Placement.Claims) != len(p.Placement.Tasks) {
			t.Fatalf("plan placement places %d tasks of group %d (minimum %d): %+v", k, g, pend.Request.Groups[g].Min, p.Placement)
		}
	}
	if _, err := gang.Commit(l, p.Placement.Clone()); err != nil {
		t.Fatalf("plan placement does not commit after the victims: %v", err)
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}
