package preempt

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// TestRecoverWorked: 2 ToRs of 2 hosts.
//
//	solo    dgx-h100-1 GPUs 0-3, checkpointed 1 h ago (started 3 h ago)
//	pair    dgx-h100-1 GPUs 4-7 and dgx-h100-2 GPUs 0-3 (2 tasks of 4 GPUs)
//	elastic dgx-h100-3 and dgx-h100-4 GPUs 0-3, minimum 1 of 2
//	late    dgx-h100-4 GPUs 4-7, ends in 10 minutes
func TestRecoverWorked(t *testing.T) {
	c := cluster(t, "dgx-h100", 4, 2)
	f := newFixture(t, c, nil)
	f.run(t, jobSpec{id: "solo", queue: "q", tasks: []task{{"dgx-h100-1", 0, 4}}, started: ago(3 * time.Hour), checkpoint: ago(time.Hour)})
	f.run(t, jobSpec{id: "pair", queue: "q", tasks: []task{{"dgx-h100-1", 4, 4}, {"dgx-h100-2", 0, 4}}, started: ago(2 * time.Hour)})
	elastic := f.run(t, jobSpec{id: "elastic", queue: "q", min: 1, tasks: []task{{"dgx-h100-3", 0, 4}, {"dgx-h100-4", 0, 4}}, started: ago(time.Hour)})
	late := f.run(t, jobSpec{id: "late", queue: "q", tasks: []task{{"dgx-h100-4", 4, 4}}, started: ago(time.Hour)})
	late.End = now.Add(10 * time.Minute)
	late.Restarts = 2
	host := func(name string) topology.HostID { h, _ := c.HostByName(name); return h }
	gpu := func(name string, i int) topology.GPUID {
		first, _ := c.HostGPUs(host(name))
		return first + topology.GPUID(i)
	}
	tor2, _ := c.DomainByName("tor2")

	type want struct {
		action Action
		lost   GPUTime
		tasks  int
	}
	cases := []struct {
		name   string
		faults []Fault
		cfg    RecoveryConfig
		want   map[string]want
		health int
	}{
		{
			// GPU 2 of host 1 fails: only solo runs there. It restarts
			// from its checkpoint 1 h ago: 4 GPUs × 1 h lost.
			name:   "GPU failure requeues from checkpoint",
			faults: []Fault{GPUFault(gpu("dgx-h100-1", 2), topology.Failed, "Xid 79")},
			want:   map[string]want{"solo": {ActionRequeue, 4 * 3600 * 1000, 0}},
			health: 1,
		},
		{
			// Host 1 fails: solo and pair (a member there) stop; pair has
			// no checkpoint: 8 GPUs × 2 h.
			name:   "host failure stops every job on it",
			faults: []Fault{HostFault(host("dgx-h100-1"), topology.Failed, "")},
			want:   map[string]want{"solo": {ActionRequeue, 4 * 3600 * 1000, 0}, "pair": {ActionRequeue, 8 * 7200 * 1000, 0}},
			health: 1,
		},
		{
			// Host 4 fails: elastic loses its member above the minimum
			// (4 GPUs × 1 h) and runs on; late has been restarted twice,
			// with a cap of 2 it ends.
			name:   "elastic shrinks, capped job ends",
			faults: []Fault{HostFault(host("dgx-h100-4"), topology.Failed, "")},
			cfg:    RecoveryConfig{MaxRestarts: 2},
			want:   map[string]want{"elastic": {ActionShrink, 4 * 3600 * 1000, 1}, "late": {ActionEnd, 4 * 3600 * 1000, 0}},
			health: 1,
		},
		{
			// tor2 drains: elastic drains whole (both members hit), late
			// ends within the deadline and keeps running.
			name:   "ToR drain",
			faults: []Fault{DomainFault(tor2, topology.Draining, "maintenance")},
			cfg:    RecoveryConfig{KeepIfEndsWithin: 30 * time.Minute},
			want:   map[string]want{"elastic": {ActionDrain, 8 * 3600 * 1000, 0}, "late": {ActionKeep, 0, 0}},
			health: 2,
		},
		{
			// Repair: health only.
			name:   "repair",
			faults: []Fault{HostFault(host("dgx-h100-1"), topology.Healthy, "")},
			want:   map[string]want{},
			health: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Recover(f.st, tc.faults, now, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Health) != tc.health {
				t.Fatalf("health changes %v, want %d", plan.Health, tc.health)
			}
			var total GPUTime
			for _, a := range plan.Actions {
				t.Logf("%s: %s lost %s: %s", a.Job, a.Action, a.Lost, a.Reason)
				w, ok := tc.want[a.Job]
				if !ok {
					t.Fatalf("unexpected action for %s", a.Job)
				}
				if a.Action != w.action || a.Lost != w.lost || len(a.Tasks) != w.tasks {
					t.Fatalf("%s: %s lost %s tasks %d, want %s %s %d", a.Job, a.Action, a.Lost, len(a.Tasks), w.action, w.lost, w.tasks)
				}
				if a.Reason == "" {
					t.Fatalf("%s: no reason", a.Job)
				}
				total += a.Lost
			}
			if len(plan.Actions) != len(tc.want) || plan.Lost != total {
				t.Fatalf("%d actions (lost %s), want %d", len(plan.Actions), plan.Lost, len(tc.want))
			}
		})
	}
	// elastic already asked to stop (or resizing): host 4 fails, and it
	// is requeued whole, 8 GPUs × 1 h, never shrunk a second time.
	elastic.Stopping = true
	plan, err := Recover(f.st, []Fault{HostFault(host("dgx-h100-4"), topology.Failed, "")}, now, RecoveryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := plan.Action("elastic"); !ok || a.Action != ActionRequeue || a.Lost != 8*3600*1000 {
		t.Fatalf("stopping elastic gang: %+v, want requeued whole", a)
	}
}

func TestRecoverErrors(t *testing.T) {
	c := cluster(t, "dgx-h100", 2, 0)
	f := newFixture(t, c, nil)
	bad := []Fault{
		{GPU: topology.NoGPU, Host: topology.NoHost, Domain: topology.NoDomain, Health: topology.Failed},
		{GPU: 0, Host: 0, Domain: topology.NoDomain, Health: topology.Failed},
		GPUFault(99, topology.Failed, ""),
		HostFault(5, topology.Failed, ""),
		DomainFault(1<<20, topology.Failed, ""),
		HostFault(0, 7, ""),
	}
	for i, fl := range bad {
		_, err := Recover(f.st, []Fault{HostFault(1, topology.Draining, ""), fl}, now, RecoveryConfig{})
		if !errors.Is(err, ErrFault) || !strings.Contains(err.Error(), "faults[1]") {
			t.Errorf("case %d: %v", i, err)
		}
	}
}

// TestPropertyRecoverLosesNoJob: on random clusters with random jobs and
// random faults, every job with a task on a failed or draining part gets
// exactly one action and no other job gets one; ended jobs say why;
// shrinks keep every group at its minimum; and once the plan is carried
// out (health set, claims of stopped jobs and tasks released) no claim is
// left on a failed part.
func TestPropertyRecoverLosesNoJob(t *testing.T) {
	counts := map[Action]int{}
	rapid.Check(t, func(rt *rapid.T) {
		in := genInstance(rt, 12)
		f := in.f
		c := f.c
		var faults []Fault
		for i := rapid.IntRange(1, 4).Draw(rt, "faults"); i > 0; i-- {
			h := topology.Health(rapid.IntRange(0, 2).Draw(rt, "health"))
			switch rapid.IntRange(0, 2).Draw(rt, "kind") {
			case 0:
				faults = append(faults, GPUFault(topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(rt, "gpu")), h, "x"))
			case 1:
				faults = append(faults, HostFault(topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(rt, "host")), h, "x"))
			default:
				lv := topology.Level(rapid.IntRange(int(topology.LevelFabric), int(c.LevelCluster())).Draw(rt, "level"))
				ds := c.DomainsAt(lv)
				faults = append(faults, DomainFault(ds[rapid.IntRange(0, len(ds)-1).Draw(rt, "dom")], h, "x"))
			}
		}
		f.st.Jobs(func(j *Job) bool {
			j.Restarts = rapid.IntRange(0, 2).Draw(rt, "restarts")
			if rapid.Bool().Draw(rt, "hasEnd") {
				j.End = now.Add(time.Duration(rapid.IntRange(0, 120).Draw(rt, "end")) * time.Minute)
			}
			return true
		})
		cfg := RecoveryConfig{MaxRestarts: rapid.IntRange(0, 2).Draw(rt, "maxRestarts"), KeepIfEndsWithin: time.Duration(rapid.IntRange(0, 60).Draw(rt, "keep")) * time.Minute,
			NoShrink: rapid.Bool().Draw(rt, "noShrink")}
		plan, err := Recover(f.st, faults, now, cfg)
		if err != nil {
			rt.Fatal(err)
		}
		// The naive view of the final health of every part.
		hostHealth := map[topology.HostID]topology.Health{}
		gpuHealth := map[topology.GPUID]topology.Health{}
		for _, fl := range faults {
			switch {
			case fl.GPU != topology.NoGPU:
				gpuHealth[fl.GPU] = fl.Health
			case fl.Host != topology.NoHost:
				hostHealth[fl.Host] = fl.Health
			case c.DomainKindOf(fl.Domain) == topology.KindFabric:
				for _, g := range c.DomainGPUs(fl.Domain) {
					gpuHealth[g] = fl.Health
				}
			default:
				first, end := c.DomainHosts(fl.Domain)
				for h := first; h < end; h++ {
					hostHealth[h] = fl.Health
				}
			}
		}
		state := func(cl topology.Claim) topology.Health {
			w := hostHealth[cl.Host]
			for _, g := range cl.GPUs {
				w = max(w, gpuHealth[g.GPU])
			}
			return w
		}
		var ids []string
		f.st.Jobs(func(j *Job) bool {
			hit := false
			for _, cl := range j.Placement.Claims {
				hit = hit || state(cl) != topology.Healthy
			}
			a, ok := plan.Action(j.Spec.ID)
			if hit != ok {
				rt.Fatalf("job %s hit=%v but action=%v", j.Spec.ID, hit, ok)
			}
			if ok {
				ids = append(ids, j.Spec.ID)
				counts[a.Action]++
				if a.Reason == "" {
					rt.Fatalf("job %s: action without reason", j.Spec.ID)
				}
				if a.Action == ActionShrink && !withinExcess(j, taskIndexes(j, a.Tasks)) {
					rt.Fatalf("job %s shrunk below its minimum", j.Spec.ID)
				}
			}
			return true
		})
		if len(ids) != len(plan.Actions) {
			rt.Fatalf("%d actions for %d affected jobs", len(plan.Actions), len(ids))
		}
		// Carry it out on a clone.
		l := f.l.Clone()
		for _, a := range plan.Actions {
			if err := l.Release(a.Claims...); err != nil {
				rt.Fatal(err)
			}
		}
		if err := plan.ApplyHealth(l); err != nil {
			rt.Fatal(err)
		}
		f.st.Jobs(func(j *Job) bool {
			a, _ := plan.Action(j.Spec.ID)
			for ci, cl := range j.Placement.Claims {
				if a != nil && (a.Action != ActionKeep && a.Action != ActionShrink || a.Action == ActionShrink && slices.Contains(a.Tasks, j.Placement.Tasks[ci])) {
					continue
				}
				if state(cl) == topology.Failed {
					rt.Fatalf("job %s keeps a task on a failed part", j.Spec.ID)
				}
			}
			return true
		})
		if err := l.Check(); err != nil {
			rt.Fatal(err)
		}
	})
	t.Logf("actions: %v", counts)
	for _, a := range []Action{ActionRequeue, ActionDrain, ActionShrink, ActionKeep, ActionEnd} {
		if counts[a] == 0 {
			t.Errorf("action %s never taken", a)
		}
	}
}

func taskIndexes(j *Job, tasks []gang.TaskRef) []int {
	var out []int
	for _, t := range tasks {
		out = append(out, slices.Index(j.Placement.Tasks, t))
	}
	return out
}

func TestHealthProfile(t *testing.T) {
	c := cluster(t, "dgx-h100", 1, 0)
	p, err := NewHealthProfile(c, HealthConfig{Window: time.Hour, Xid: Threshold{Drain: 2, Fail: 4}})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(g topology.GPUID, at time.Duration, e Event) GPUHealth {
		t.Helper()
		e.At = t0.Add(at)
		v, err := p.Record(g, e)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// One Xid: healthy; a second within the hour: draining.
	if v := rec(0, 0, Event{Counter: CounterXid, Xid: 13}); v.Health != topology.Healthy {
		t.Fatalf("after one Xid: %v", v)
	}
	if v := rec(0, 30*time.Minute, Event{Counter: CounterXid, Xid: 13}); v.Health != topology.Draining || !strings.Contains(v.Why, "xid: 2") {
		t.Fatalf("after two Xids: %+v", v)
	}
	// The first leaves the window: healthy again.
	if v := p.Health(0, t0.Add(61*time.Minute)); v.Health != topology.Healthy {
		t.Fatalf("after the window: %+v", v)
	}
	if n := p.Counts(0, t0.Add(61*time.Minute)); n[CounterXid] != 1 {
		t.Fatalf("counts %v", n)
	}
	// A fatal Xid fails GPU 1 at once, for good.
	if v := rec(1, 0, Event{Counter: CounterXid, Xid: 79}); v.Health != topology.Failed || v.Why != "fatal Xid 79" {
		t.Fatalf("fatal Xid: %+v", v)
	}
	if v := p.Health(1, t0.Add(48*time.Hour)); v.Health != topology.Failed {
		t.Fatalf("failure not sticky: %+v", v)
	}
	// ECC errors by count: 100 in one event fail GPU 2 (default threshold).
	if v := rec(2, 0, Event{Counter: CounterECC, Count: 100}); v.Health != topology.Failed {
		t.Fatalf("ECC: %+v", v)
	}
	// Changes reports each change once, in GPU order.
	ch := p.Changes(t0.Add(40 * time.Minute))
	if len(ch) != 3 || ch[0].GPU != 0 || ch[0].Health != topology.Draining || ch[1].GPU != 1 || ch[2].GPU != 2 {
		t.Fatalf("changes %+v", ch)
	}
	if ch := p.Changes(t0.Add(40 * time.Minute)); len(ch) != 0 {
		t.Fatalf("changes again %+v", ch)
	}
	// Repair.
	p.Reset(1)
	if ch := p.Changes(t0.Add(2 * time.Hour)); len(ch) != 2 || ch[0].GPU != 0 || ch[0].Health != topology.Healthy || ch[1].GPU != 1 || ch[1].Health != topology.Healthy {
		t.Fatalf("changes after repair %+v", ch)
	}
	// Bad input.
	if _, err := p.Record(-1, Event{}); err == nil {
		t.Fatal("GPU -1 accepted")
	}
	if _, err := p.Record(0, Event{Counter: NumCounters}); err == nil {
		t.Fatal("bad counter accepted")
	}
	if _, err := NewHealthProfile(c, HealthConfig{ECC: Threshold{Drain: -5}}); err == nil {
		t.Fatal("bad threshold accepted")
	}
}

// TestHealthToRecovery: the profile's changes become faults, and Recover
// requeues the job on the GPU.
func TestHealthToRecovery(t *testing.T) {
	c := cluster(t, "dgx-h100", 1, 0)
	f := newFixture(t, c, nil)
	f.run(t, jobSpec{id: "train", queue: "q", tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(time.Hour)})
	p, _ := NewHealthProfile(c, HealthConfig{})
	for i := 0; i < 3; i++ {
		if _, err := p.Record(5, Event{At: now.Add(-time.Duration(i) * time.Minute), Counter: CounterXid, Xid: 31}); err != nil {
			t.Fatal(err)
		}
	}
	var faults []Fault
	for _, ch := range p.Changes(now) {
		faults = append(faults, GPUFault(ch.GPU, ch.Health, ch.Why))
	}
	plan, err := Recover(f.st, faults, now, RecoveryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Actions) != 1 || plan.Actions[0].Action != ActionDrain || !strings.Contains(plan.Actions[0].Reason, "xid: 3") {
		t.Fatalf("plan %+v", plan)
	}
}
