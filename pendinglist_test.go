package gpusched

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// fullPending lists every waiting job of s afresh, as Schedule did before
// the list was kept across cycles: each job's reason from cs.reason.
func fullPending(s *Scheduler) []Pending {
	var out []Pending
	for _, id := range s.tree.Leaves() {
		l := s.tree.LeafOf(id)
		l.Ascend(func(e *queue.Entry) bool {
			j := e.Ref.(*job)
			out = append(out, Pending{Job: j.spec.ID, Queue: l.Name(), State: j.state, Reason: s.cyc.reason(j)})
			return true
		})
	}
	return out
}

// TestPendingListIncremental drives random streams through queue trees
// mixing strict FIFO with backfill, best effort and priority aging, with
// quotas, and checks after every cycle that Decision.Pending, which keeps
// rows across cycles, is row for row what a full listing gives: the same
// jobs in the same order, states, and the very reason pointers cs.reason
// returns. Requeues and cancellations of waiting jobs change the queues
// between cycles.
func TestPendingListIncremental(t *testing.T) {
	var cycles, kept, merged int
	defer func() {
		t.Logf("%d cycles: %d leaves' rows kept (patched or not), %d merged", cycles, kept, merged)
		if kept == 0 || merged == 0 {
			t.Error("no rows kept or merged: the incremental paths were never exercised")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		c := testCluster(t, rapid.IntRange(2, 6).Draw(rt, "hosts"), rapid.IntRange(0, 3).Draw(rt, "per tor"))
		policies := []queue.Policy{
			{Ordering: queue.StrictFIFO, Backfill: true},
			{Ordering: queue.StrictFIFO},
			{Ordering: queue.BestEffortFIFO},
			{Ordering: queue.PriorityAging, AgingInterval: 10 * time.Minute, Backfill: true},
		}
		var leaves []string
		var cfg queue.Config
		for i := range rapid.IntRange(1, 4).Draw(rt, "leaves") {
			name := fmt.Sprintf("q%d", i)
			leaves = append(leaves, name)
			n := queue.Node{Name: name, Policy: policies[rapid.IntRange(0, len(policies)-1).Draw(rt, "policy")]}
			if rapid.Bool().Draw(rt, "quota") {
				mx := int64(rapid.IntRange(8, 24).Draw(rt, "max"))
				n.Quotas = []queue.Quota{{Resource: "gpu", Nominal: int64(rapid.IntRange(1, 8).Draw(rt, "nominal")), Max: &mx}}
			}
			cfg.Root.Children = append(cfg.Root.Children, n)
		}
		s, err := New(Config{Cluster: c, Queues: cfg, MaxReservations: rapid.IntRange(-1, 3).Draw(rt, "reservations")})
		if err != nil {
			rt.Skip(err) // a quota tree New refuses
		}
		var jobs []*simJob
		for i := range rapid.IntRange(2, 40).Draw(rt, "jobs") {
			g := shapes[rapid.IntRange(0, len(shapes)-1).Draw(rt, "shape")]
			jobs = append(jobs, &simJob{spec: workload.Job{ID: fmt.Sprintf("j%02d", i), Queue: leaves[rapid.IntRange(0, len(leaves)-1).Draw(rt, "queue")],
				Priority: int32(rapid.IntRange(0, 2).Draw(rt, "priority")), Groups: []workload.TaskGroup{g},
				Runtime: time.Duration(rapid.IntRange(0, 12).Draw(rt, "rt")) * 10 * time.Minute},
				arrive: t0.Add(time.Duration(rapid.IntRange(0, 120).Draw(rt, "at")) * time.Minute)})
		}
		defer func() { kept, merged = kept+int(s.cyc.list.kept), merged+int(s.cyc.list.merged) }()
		runStream(t, s, jobs, t0.Add(100*time.Hour), func(now time.Time, d Decision) {
			cycles++
			want := fullPending(s)
			if len(d.Pending) != len(want) {
				rt.Fatalf("%v: %d rows listed, %d waiting", now, len(d.Pending), len(want))
			}
			for i := range want {
				if d.Pending[i] != want[i] {
					rt.Fatalf("%v: row %d is %+v (%v), a full listing gives %+v (%v)", now, i, d.Pending[i], d.Pending[i].Reason, want[i], want[i].Reason)
				}
			}
			// Change the queues between cycles now and then: cancel a
			// waiting job (by the hosts' event), which a later listing must
			// drop.
			if len(want) > 0 && rapid.IntRange(0, 4).Draw(rt, "cancel") == 0 {
				id := want[rapid.IntRange(0, len(want)-1).Draw(rt, "which")].Job
				if err := s.Cancel(id, now); err != nil {
					rt.Fatal(err)
				}
			}
		})
	})
}

// TestSameReasonComparesEveryField checks that sameReason looks at every
// field of Reason: two reasons differing in any one field are not the
// same (a field it skipped would let a changed reason keep an old row).
func TestSameReasonComparesEveryField(t *testing.T) {
	base := Reason{Code: WaitQuota, Quota: &queue.Block{Queue: "a"}, Placement: &gang.Explanation{}, Blocker: "b", Queue: "q", Cause: WaitCapacity,
		HeldQueue: "h", HeldResource: "gpu", Until: t0, Victims: []string{"v"}, Reserved: t0, Detail: "d", ExplainedAt: t0}
	same := base
	same.Quota = &queue.Block{Queue: "a"}
	same.Victims = []string{"v"}
	if !sameReason(&base, &same) {
		t.Fatal("equal reasons (quota and victims copied) are not the same")
	}
	rv := reflect.ValueOf(&base).Elem()
	for i := range rv.NumField() {
		other := base
		ov := reflect.ValueOf(&other).Elem().Field(i)
		switch f := rv.Type().Field(i); f.Type.Kind() {
		case reflect.Bool:
			ov.SetBool(!ov.Bool())
		case reflect.Uint8:
			ov.SetUint(ov.Uint() + 1)
		case reflect.String:
			ov.SetString(ov.String() + "x")
		case reflect.Slice:
			ov.Set(reflect.ValueOf([]string{"w"}))
		case reflect.Pointer:
			ov.Set(reflect.New(f.Type.Elem()))
		case reflect.Struct: // time.Time
			ov.Set(reflect.ValueOf(t0.Add(time.Second)))
		default:
			t.Fatalf("field %s of kind %s: teach this test (and sameReason) about it", f.Name, f.Type.Kind())
		}
		if sameReason(&base, &other) {
			t.Errorf("reasons differing in %s are the same to sameReason", rv.Type().Field(i).Name)
		}
	}
}
