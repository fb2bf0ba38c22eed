package preempt

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// TestLostSinceAgrees: the planner's lost work of a job (run.lostSince,
// which reads a reported checkpoint in place) equals the plain
// computation from lastCheckpoint, for times with and without monotonic
// readings, checkpoints before, at and after the start, and intervals.
func TestLostSinceAgrees(t *testing.T) {
	mono := time.Now()
	rapid.Check(t, func(rt *rapid.T) {
		at := func(label string) time.Time {
			switch rapid.IntRange(0, 3).Draw(rt, label+" kind") {
			case 0:
				return time.Time{}
			case 1:
				return mono.Add(time.Duration(rapid.Int64Range(-1e13, 1e13).Draw(rt, label)))
			}
			return t0.Add(time.Duration(rapid.Int64Range(-1e13, 1e13).Draw(rt, label)))
		}
		j := &Job{Started: at("started"), Checkpoint: at("checkpoint")}
		switch rapid.IntRange(0, 2).Draw(rt, "checkpoint is") {
		case 1:
			j.Checkpoint = j.Started
		case 2:
			j.Checkpoint = j.Started.Round(0)
		}
		if rapid.Bool().Draw(rt, "interval") {
			j.CheckpointInterval = time.Duration(rapid.Int64Range(-1e9, 1e12).Draw(rt, "every"))
		}
		now := at("now")
		milli := rapid.Int64Range(0, 64000).Draw(rt, "milli")
		want := GPUTime(0)
		if !j.Started.IsZero() {
			from := j.Started
			if cp := j.lastCheckpoint(now); !cp.IsZero() {
				from = cp
			}
			want = lostNanos(milli, from.UnixNano(), now.UnixNano())
		}
		r := &run{now: now, nowNano: now.UnixNano()}
		if got := r.lostSince(milli, j); got != want {
			rt.Fatalf("lostSince %d, plain %d (started %v, checkpoint %v, interval %v, now %v)", got, want, j.Started, j.Checkpoint, j.CheckpointInterval, now)
		}
	})
}

// TestPropertyDeferredOthers: ordering the units outside the searched
// domain only when the search reaches them (orderUnits, orderLater)
// makes the same plans and reasons as ordering them with the domain's
// own: Plan on random instances (with queues, where the quota may block
// the gang), Defragment on scattered ones, and both on two GB200 NVL72
// racks busy with up to 144 small jobs (more than orderPool sorts at once,
// so that the units go through the heap).
func TestPropertyDeferredOthers(t *testing.T) {
	// orders checks the order itself: every domain's units in full, with
	// and without deferring, after the steps Plan and Defragment take
	// before their search.
	orders := func(rt *rapid.T, s *Search, snap Snapshot, p *Pending, now time.Time, defrag bool) {
		r := s.begin(snap, p, now)
		defer r.end()
		if defrag {
			r.defrag, r.tree = true, nil
		} else {
			r.goSolo()
		}
		r.collect()
		r.priceRestarts()
		if r.rank() != 0 {
			return
		}
		for i := range r.doms {
			x := &r.doms[i]
			var seq [2][]int32
			for k, eager := range []bool{false, true} {
				eagerOthers = eager
				r.orderUnits(x)
				n := r.nUnits()
				for i := 0; i < n; i++ {
					ui, ok := r.unitAt(i)
					if !ok {
						rt.Fatalf("domain %d, eager %v: unit %d of %d missing", x.i, eager, i, n)
					}
					seq[k] = append(seq[k], ui)
				}
				if _, ok := r.unitAt(n); ok {
					rt.Fatalf("domain %d, eager %v: more than %d units", x.i, eager, n)
				}
			}
			eagerOthers = false
			if !slices.Equal(seq[0], seq[1]) {
				rt.Fatalf("domain %d: deferred order %v, eager %v", x.i, seq[0], seq[1])
			}
		}
	}
	same := func(rt *rapid.T, what string, f func() (any, any)) {
		p1, n1 := f()
		eagerOthers = true
		defer func() { eagerOthers = false }()
		p2, n2 := f()
		if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(n1, n2) {
			rt.Fatalf("%s, deferred: %+v %+v\neager: %+v %+v", what, p1, n1, p2, n2)
		}
	}
	t.Run("plan", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			in := genInstance(rt, 12)
			same(rt, "plan", func() (any, any) { return newSearch(rt, in.cfg).Plan(in.f.st, in.pend, in.now) })
			orders(rt, newSearch(rt, in.cfg), in.f.st, in.pend, in.now, false)
		})
	})
	t.Run("defrag", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			in := genScattered(rt)
			same(rt, "defrag", func() (any, any) { return newSearch(rt, in.cfg).Defragment(in.f.st, in.pend, in.now) })
			orders(rt, newSearch(rt, in.cfg), in.f.st, in.pend, in.now, true)
		})
	})
	c := cluster(t, "gb200-nvl72", 36, 0)
	t.Run("nvl72", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			f := newFixture(rt, c, nil)
			n := 0
			for h := 0; h < 36; h++ {
				host := c.HostName(topology.HostID(h))
				switch rapid.IntRange(0, 3).Draw(rt, "tray") {
				case 0: // idle
				case 1: // one whole tray
					n++
					f.run(rt, jobSpec{id: "j" + itoa(n), queue: "q", prio: int32(rapid.IntRange(0, 9).Draw(rt, "prio")), tasks: []task{{host, 0, 4}},
						started: time.Duration(rapid.IntRange(1, 600).Draw(rt, "started")) * time.Minute})
				default: // 1-GPU jobs, some GPUs left free
					for g := 0; g < 4; g++ {
						if rapid.IntRange(0, 4).Draw(rt, "gpu") == 0 {
							continue
						}
						n++
						f.run(rt, jobSpec{id: "j" + itoa(n), queue: "q", prio: int32(rapid.IntRange(0, 9).Draw(rt, "prio")), tasks: []task{{host, g, 1}},
							started:    time.Duration(rapid.IntRange(1, 600).Draw(rt, "started")) * time.Minute,
							checkpoint: time.Duration(rapid.IntRange(0, 600).Draw(rt, "checkpoint")) * time.Minute})
					}
				}
			}
			pend := f.pending(rt, "big", "q", 10, rapid.IntRange(2, 18).Draw(rt, "count"), 4, "nvlink")
			at := t0.Add(time.Duration(rapid.IntRange(600, 900).Draw(rt, "now")) * time.Minute)
			cfg := Config{MaxPlacements: 1 << 20, MaxNodes: 1 << 24}
			same(rt, "defrag", func() (any, any) { return newSearch(rt, cfg).Defragment(f.st, pend, at) })
			same(rt, "plan", func() (any, any) { return newSearch(rt, cfg).Plan(f.st, pend, at) })
			orders(rt, newSearch(rt, cfg), f.st, pend, at, true)
		})
	})
}

// TestPropertyRosterDefrag: Defragment through the State's Roster (every
// filed job in host order, protections read off the filing flags, see
// collectMoves) plans and explains exactly as visiting every job of the
// Snapshot, after random changes the Roster is told of and migration
// counts it is not (they are read off the job), with and without a
// migration cap.
func TestPropertyRosterDefrag(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		in := genScattered(rt)
		st := in.f.st
		st.Jobs(func(j *Job) bool {
			switch rapid.IntRange(0, 4).Draw(rt, "protect") {
			case 1:
				j.Spec.MaxPreemptions, j.Preemptions = 1, rapid.IntRange(0, 1).Draw(rt, "preempted")
			case 2:
				j.Spec.MinRunTime = time.Duration(rapid.IntRange(1, 600).Draw(rt, "minRun")) * time.Minute
			case 3:
				j.Stopping = true
			}
			st.Update(j.Spec.ID)
			return true
		})
		changeJobs(rt, st, in.now)
		if rapid.Bool().Draw(rt, "capped") {
			in.cfg.MaxMigrations = 1
			st.Jobs(func(j *Job) bool {
				j.Migrations = rapid.IntRange(0, 1).Draw(rt, "migrations")
				return true
			})
		}
		d1, n1 := newSearch(rt, in.cfg).Defragment(st, in.pend, in.now)
		d2, n2 := newSearch(rt, in.cfg).Defragment(plainSnap{st}, in.pend, in.now)
		if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(n1, n2) {
			rt.Fatalf("through the roster: %v %+v\nevery job: %v %+v", d1, n1, d2, n2)
		}
	})
}
