package preempt

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// defragSetup is TestDefragWorked's cluster: 2 ToRs of 2 DGX H100 hosts,
// 4 GPUs used on each host; tor2's jobs (b1, b2) ran 10 minutes, tor1's
// 1 and 2 hours. The 16-GPU ToR gang's cheapest plan moves b1 and b2
// (2 × 4 GPUs × 10 min = 80 GPU-min lost).
func defragSetup(t *testing.T) (*fixture, *Pending) {
	f := newFixture(t, cluster(t, "dgx-h100", 4, 2), nil)
	f.run(t, jobSpec{id: "a1", queue: "q", tasks: []task{{"dgx-h100-1", 0, 4}}, started: ago(time.Hour)})
	f.run(t, jobSpec{id: "a2", queue: "q", prio: 9, tasks: []task{{"dgx-h100-2", 0, 4}}, started: ago(2 * time.Hour)})
	f.run(t, jobSpec{id: "b1", queue: "q", tasks: []task{{"dgx-h100-3", 0, 4}}, started: ago(10 * time.Minute)})
	f.run(t, jobSpec{id: "b2", queue: "q", tasks: []task{{"dgx-h100-4", 0, 4}}, started: ago(10 * time.Minute)})
	return f, f.pending(t, "big", "q", 0, 2, 8, "tor")
}

func TestDefragBudget(t *testing.T) {
	f, pend := defragSetup(t)
	s := newSearch(t, Config{})
	dp, np := s.Defragment(f.st, pend, now)
	if np != nil {
		t.Fatal(np)
	}
	// 16 GPUs for 80 GPU-min = 4/3 GPU-h: value 12 GPUs per GPU-hour.
	if v := Value(dp); math.Abs(v-12) > 1e-9 {
		t.Fatalf("value %v, want 12", v)
	}
	var log DefragLog
	for _, tc := range []struct {
		name   string
		b      DefragBudget
		reason string
	}{
		{"unlimited", DefragBudget{}, ""},
		{"per hour", DefragBudget{PerHour: 1}, "per-hour"},
		{"lost per hour", DefragBudget{LostPerHour: GPUTime(3600 * 1000)}, "lost-per-hour"},
		{"value", DefragBudget{MinValue: 13}, "value"},
		{"all met", DefragBudget{PerHour: 2, LostPerHour: GPUTime(2 * 3600 * 1000), MinValue: 12}, ""},
	} {
		x := tc.b.Admit(&log, dp, now)
		if got := ""; x != nil && x.Reason != tc.reason || x == nil && tc.reason != got {
			t.Fatalf("%s: refusal %v, want %q", tc.name, x, tc.reason)
		}
		if x != nil && x.Error() == "" {
			t.Fatal("empty refusal")
		}
	}
	// Budgets stop a second plan within the hour, not one an hour later.
	b := DefragBudget{PerHour: 3}
	if x := b.Admit(&log, dp, now); x != nil {
		t.Fatal(x)
	}
	log.Record(dp, now)
	if n, lost := log.LastHour(now); n != 2 || lost != dp.Cost.Lost {
		t.Fatalf("log holds %d, %s", n, lost)
	}
	if x := b.Admit(&log, dp, now.Add(30*time.Minute)); x == nil || x.Reason != "per-hour" {
		t.Fatalf("second plan within the hour: %v", x)
	}
	if x := b.Admit(&log, dp, now.Add(time.Hour)); x != nil {
		t.Fatalf("an hour later: %v", x)
	}
	if n, _ := log.LastHour(now.Add(time.Hour)); n != 0 {
		t.Fatalf("log kept %d entries past the hour", n)
	}
	for _, bad := range []DefragBudget{{PerHour: -1}, {LostPerHour: -1}, {MinValue: math.NaN()}, {MinValue: math.Inf(1)}} {
		if bad.Validate() == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
}

// TestDefragMaxMigrations: with b1 at its migration cap, the cheapest plan
// moves tor1's jobs instead; b1 is reported excluded.
func TestDefragMaxMigrations(t *testing.T) {
	f, pend := defragSetup(t)
	j, _ := f.st.Job("b1")
	j.Migrations = 1
	s := newSearch(t, Config{MaxMigrations: 1})
	dp, np := s.Defragment(f.st, pend, now)
	if np != nil {
		t.Fatal(np)
	}
	for _, m := range dp.Migrations {
		if m.Job == "b1" {
			t.Fatal("b1 moved past its cap")
		}
	}
	if f.c.DomainName(dp.Domain) != "tor1" {
		t.Fatalf("cleared %s", f.c.DomainName(dp.Domain))
	}
	checkDefrag(t, f, dp, pend)
	if _, err := New(Config{MaxMigrations: -1}); err == nil {
		t.Fatal("negative MaxMigrations accepted")
	}
}

// TestDefragMinRunTime: a job inside its minimum run time is never moved.
func TestDefragMinRunTime(t *testing.T) {
	f := newFixture(t, cluster(t, "dgx-h100", 4, 2), nil)
	f.run(t, jobSpec{id: "a1", queue: "q", tasks: []task{{"dgx-h100-1", 0, 4}}, started: ago(time.Hour)})
	f.run(t, jobSpec{id: "a2", queue: "q", tasks: []task{{"dgx-h100-2", 0, 4}}, started: ago(2 * time.Hour)})
	f.run(t, jobSpec{id: "b1", queue: "q", tasks: []task{{"dgx-h100-3", 0, 4}}, started: ago(10 * time.Minute), minRun: time.Hour})
	f.run(t, jobSpec{id: "b2", queue: "q", tasks: []task{{"dgx-h100-4", 0, 4}}, started: ago(10 * time.Minute)})
	pend := f.pending(t, "big", "q", 0, 2, 8, "tor")
	dp, np := newSearch(t, Config{}).Defragment(f.st, pend, now)
	if np != nil {
		t.Fatal(np)
	}
	for _, m := range dp.Migrations {
		if m.Job == "b1" {
			t.Fatal("b1 moved inside its minimum run time")
		}
	}
	checkDefrag(t, f, dp, pend)
}

// TestDefragNVL72: two GB200 NVL72 racks. Rack 1 has 14 idle trays and a
// 1-GPU job on each of trays 15–18 (64 GPUs free, 14 whole trays: the
// 16 × 4-GPU NVLink gang does not place); rack 2 is busy with pinned
// jobs but for one free GPU on each of its first four trays. The cheapest
// plan moves the two cheapest 1-GPU jobs into rack 2 (the slot bound and
// the confined what-ifs at the fabric level must not miss it).
func TestDefragNVL72(t *testing.T) {
	c := cluster(t, "gb200-nvl72", 36, 0)
	f := newFixture(t, c, nil)
	ran := []time.Duration{40 * time.Minute, 10 * time.Minute, 30 * time.Minute, 20 * time.Minute}
	for i, d := range ran {
		f.run(t, jobSpec{id: "s" + itoa(i+1), queue: "q", tasks: []task{{c.HostName(topology.HostID(14 + i)), 0, 1}}, started: ago(d)})
	}
	for h := 18; h < 36; h++ {
		n, at := 4, 0
		if h < 22 {
			n, at = 3, 1
		}
		f.run(t, jobSpec{id: "p" + pad2(h), queue: "q", tasks: []task{{c.HostName(topology.HostID(h)), at, n}}, started: ago(time.Hour), nonPre: true})
	}
	spec := workload.Job{ID: "rack", Queue: "q", Groups: []workload.TaskGroup{{Count: 16, GPUs: 4}},
		Topology: []workload.Constraint{{Level: "nvlink", Required: true}}}
	r, err := gang.NewRequest(c, &spec)
	if err != nil {
		t.Fatal(err)
	}
	pend := &Pending{Request: r, Queue: "q"}
	dp, np := newSearch(t, Config{}).Defragment(f.st, pend, now)
	if np != nil {
		t.Fatal(np)
	}
	var ids []string
	for _, m := range dp.Migrations {
		ids = append(ids, m.Job)
	}
	// s2 (10 min) and s4 (20 min): 30 GPU-min.
	if !slices.Equal(ids, []string{"s2", "s4"}) || dp.Cost.Lost != 30*60*1000 {
		t.Fatalf("migrations %v cost %s", ids, dp.Cost)
	}
	if pend.Request.AllowDomain != nil {
		t.Fatal("the request keeps the search's domain filter")
	}
	checkDefrag(t, f, dp, pend)
}
