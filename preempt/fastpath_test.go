package preempt

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
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

// prepared is a run of s taken through the steps Plan (or Defragment)
// takes before its search: collect, restart prices, rank. It returns nil
// when rank gives a verdict; the caller ends the run.
func prepared(s *Search, snap Snapshot, p *Pending, now time.Time, defrag bool) *run {
	r := s.begin(snap, p, now)
	if defrag {
		r.defrag, r.tree = true, nil
	} else {
		r.goSolo()
	}
	r.collect()
	r.priceRestarts()
	if r.rank() != 0 {
		r.end()
		return nil
	}
	return r
}

// plainSlots is slotsIn at LevelFabric GPU by GPU: the runs of one
// host's free GPUs, on hosts the gang may use, in the domain's list.
func plainSlots(r *run, x *dom, k int) int {
	n, run := 0, 0
	h := topology.NoHost
	for _, g := range r.c.DomainGPUs(x.id) {
		if gh := r.c.GPUHost(g); gh != h {
			n += run / k
			h, run = gh, 0
		}
		if r.l.GPUIsFree(g) && r.hostUsable(h) {
			run++
		}
	}
	return n + run/k
}

// TestPropertySearchShortcuts: rankFrom's listing of the units as it
// meets them (plainLists) and orderUnits' deferred ordering of the units
// outside the searched domain when the quota blocks the gang or when
// defragmenting (eagerOthers) give every domain the same units in the
// same order, and they and polish's shortcut after a settled greedy set
// (plainPolish) the same plans (placement counts included) and reasons,
// as the plain computations:
// Plan on random instances (with queues, where the quota may block the
// gang; through the Roster and visiting every job), Defragment on
// scattered ones, and both on two GB200 NVL72 racks busy with up to 144
// small jobs (more than orderPool sorts at once, so that the units go
// through the heap) and a few failed GPUs and hosts and cordons; and
// slotsIn's count host by host equals plainSlots'.
func TestPropertySearchShortcuts(t *testing.T) {
	flags := []*bool{&plainLists, &eagerOthers, &plainPolish}
	check := func(rt *rapid.T, cfg Config, snap Snapshot, p *Pending, now time.Time, defrag bool) {
		// The lists and the order of every domain.
		r1 := prepared(newSearch(rt, cfg), snap, p, now, defrag)
		plainLists = true
		r2 := prepared(newSearch(rt, cfg), snap, p, now, defrag)
		plainLists = false
		if (r1 == nil) != (r2 == nil) {
			rt.Fatalf("ranked: listed %v, plain %v", r1 != nil, r2 != nil)
		}
		if r1 != nil {
			defer r1.end()
			defer r2.end()
			for i := range r1.doms {
				x1, x2 := &r1.doms[i], &r2.doms[i]
				if r1.lv == topology.LevelFabric {
					for k := 2; k <= 8; k *= 2 {
						if got, want := r1.slotsIn(x1, k), plainSlots(r1, x1, k); got != want {
							rt.Fatalf("domain %d: %d slots of %d GPUs, counted GPU by GPU %d", x1.i, got, k, want)
						}
					}
				}
				if a, b := r1.domUnits[x1.ufrom:x1.uto], r2.domUnits[x2.ufrom:x2.uto]; !slices.Equal(a, b) {
					rt.Fatalf("domain %d: units listed %v, plain %v", x1.i, a, b)
				}
				var seq [2][]int32
				for k, eager := range []bool{false, true} {
					eagerOthers = eager
					r1.orderUnits(x1)
					n := r1.nUnits()
					for i := 0; i < n; i++ {
						ui, ok := r1.unitAt(i)
						if !ok {
							rt.Fatalf("domain %d, eager %v: unit %d of %d missing", x1.i, eager, i, n)
						}
						seq[k] = append(seq[k], ui)
					}
					if _, ok := r1.unitAt(n); ok {
						rt.Fatalf("domain %d, eager %v: more than %d units", x1.i, eager, n)
					}
				}
				eagerOthers = false
				if !slices.Equal(seq[0], seq[1]) {
					rt.Fatalf("domain %d: deferred order %v, eager %v", x1.i, seq[0], seq[1])
				}
			}
		}
		// The plans and reasons, each shortcut off, then both.
		plan := func() (any, any) {
			if defrag {
				return newSearch(rt, cfg).Defragment(snap, p, now)
			}
			return newSearch(rt, cfg).Plan(snap, p, now)
		}
		p1, n1 := plan()
		for k := 0; k <= len(flags); k++ {
			for i, f := range flags {
				*f = k == len(flags) || k == i
			}
			p2, n2 := plan()
			for _, f := range flags {
				*f = false
			}
			if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(n1, n2) {
				rt.Fatalf("shortcuts off (%d): %+v %+v\non: %+v %+v", k, p2, n2, p1, n1)
			}
		}
	}
	t.Run("plan", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			in := genInstance(rt, 12)
			var snap Snapshot = in.f.st
			if rapid.Bool().Draw(rt, "every job") {
				snap = plainSnap{in.f.st}
			}
			check(rt, in.cfg, snap, in.pend, in.now, false)
		})
	})
	t.Run("defrag", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			in := genScattered(rt)
			check(rt, in.cfg, in.f.st, in.pend, in.now, true)
		})
	})
	c := cluster(t, "gb200-nvl72", 36, 0)
	t.Run("nvl72", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			f := newFixture(rt, c, nil)
			n := 0
			hosts := make([]int, 36)
			for h := range hosts {
				hosts[h] = h
			}
			// Trays in random order: the State lists the jobs in that
			// order, its Roster in host order.
			for _, h := range rapid.Permutation(hosts).Draw(rt, "order") {
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
			for k := rapid.IntRange(0, 3).Draw(rt, "faults"); k > 0; k-- {
				switch g := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(rt, "fault")); rapid.IntRange(0, 2).Draw(rt, "kind") {
				case 0:
					_ = f.l.SetGPUHealth(g, topology.Failed)
				case 1:
					_ = f.l.SetHostHealth(c.GPUHost(g), topology.Failed)
				default:
					_ = f.l.SetHostCordoned(c.GPUHost(g), true)
				}
			}
			pend := f.pending(rt, "big", "q", 10, rapid.IntRange(2, 18).Draw(rt, "count"), 4, "nvlink")
			at := t0.Add(time.Duration(rapid.IntRange(600, 900).Draw(rt, "now")) * time.Minute)
			cfg := Config{MaxPlacements: 1 << 20, MaxNodes: 1 << 24}
			check(rt, cfg, f.st, pend, at, true)
			check(rt, cfg, f.st, pend, at, false)
			// Through the Roster or visiting every job (collectMoves).
			d1, m1 := newSearch(rt, cfg).Defragment(f.st, pend, at)
			d2, m2 := newSearch(rt, cfg).Defragment(plainSnap{f.st}, pend, at)
			if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(m1, m2) {
				rt.Fatalf("through the roster: %v %+v\nevery job: %v %+v", d1, m1, d2, m2)
			}
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

// TestPropertyUsualVisit: collectIndexed's visit of the usual job in its
// own loop (visitUsual) makes the same jobs, units (their lost work
// repriced for restarts too), contributions, exclusions and eligible
// count as considerFiled does job by job (slowVisit), and Plan the same
// plans and reasons: on random instances (with and without queues,
// elastic gangs, protected, stopping and checkpointed jobs, a failed GPU,
// the gang required on a host, a ToR or nowhere), and on busy ToRs of
// whole-GPU jobs and gangs (some not started, some checkpointing at an
// interval): without queues, or in two queues that borrow from each
// other, where the loop makes the units of plans whose visited buckets
// are all on priority and a plan with a reclaim or fair-share bucket goes
// job by job.
func TestPropertyUsualVisit(t *testing.T) {
	t.Run("random", func(t *testing.T) {
		inLoop := 0
		rapid.Check(t, func(rt *rapid.T) {
			in := genInstance(rt, 12)
			inLoop += checkUsualVisit(rt, in.cfg, in.f.st, in.pend, in.now)
		})
		t.Logf("%d units of rigid whole-GPU jobs in plans the loop visits", inLoop)
	})
	t.Run("busy", func(t *testing.T) {
		c := cluster(t, "dgx-h100", 16, 4)
		inLoop := 0
		rapid.Check(t, func(rt *rapid.T) {
			// Without queues, or two queues guaranteed half the GPUs
			// each (one borrows what the other leaves), reclaim and fair
			// sharing drawn.
			var qc *queue.Config
			cfg := Config{MaxPlacements: 1 << 20, MaxNodes: 1 << 24}
			queues := []string{"q"}
			if rapid.Bool().Draw(rt, "queues") {
				qc = &queue.Config{Root: queue.Node{Children: []queue.Node{
					{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 64}}},
					{Name: "b", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 64}}},
				}}}
				cfg.FairSharing = rapid.Bool().Draw(rt, "fairSharing")
				cfg.Reclaim = ReclaimPolicy(rapid.IntRange(0, 2).Draw(rt, "reclaim"))
				cfg.LowerPriority = Scope(rapid.IntRange(0, 2).Draw(rt, "scope"))
				queues = []string{"a", "b", "b"}
			}
			f := newFixture(rt, c, qc)
			n := 0
			for h := 0; h < 16; h++ {
				for at := 0; at < 8; n++ {
					// started 0: admitted, not started.
					js := jobSpec{id: "j" + itoa(n), queue: rapid.SampledFrom(queues).Draw(rt, "queue"), prio: int32(rapid.IntRange(0, 9).Draw(rt, "prio")),
						started: time.Duration(rapid.IntRange(0, 600).Draw(rt, "started")) * time.Minute}
					if rapid.Bool().Draw(rt, "checkpointed") {
						js.checkpoint = js.started + time.Duration(rapid.IntRange(0, 600).Draw(rt, "checkpoint"))*time.Minute
					}
					switch rapid.IntRange(0, 19).Draw(rt, "protect") {
					case 0:
						js.nonPre = true
					case 1:
						js.minRun = 12 * time.Hour
					}
					if at == 0 && h%4 < 3 && rapid.IntRange(0, 3).Draw(rt, "gang") == 0 {
						// A gang of whole hosts within the ToR, rarely elastic.
						k := rapid.IntRange(2, 4-h%4).Draw(rt, "hosts")
						for i := 0; i < k; i++ {
							js.tasks = append(js.tasks, task{c.HostName(topology.HostID(h + i)), 0, 8})
						}
						if rapid.IntRange(0, 4).Draw(rt, "elastic") == 0 {
							js.min = 1
						}
						withInterval(rt, f.run(rt, js))
						h += k - 1
						n++
						break
					}
					g := min(8-at, rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(rt, "gpus"))
					js.tasks = []task{{c.HostName(topology.HostID(h)), at, g}}
					withInterval(rt, f.run(rt, js))
					at += g
				}
			}
			pend := f.pending(rt, "big", rapid.SampledFrom(queues).Draw(rt, "pendQueue"), int32(rapid.IntRange(1, 10).Draw(rt, "pendPrio")), rapid.IntRange(1, 8).Draw(rt, "count"), 8,
				rapid.SampledFrom([]string{"", "host", "tor"}).Draw(rt, "level"))
			at := t0.Add(time.Duration(rapid.IntRange(600, 900).Draw(rt, "now")) * time.Minute)
			inLoop += checkUsualVisit(rt, cfg, f.st, pend, at)
		})
		t.Logf("%d units of rigid whole-GPU jobs in plans the loop visits", inLoop)
		if inLoop == 0 {
			t.Fatal("no unit was made in the loop")
		}
	})
}

// withInterval gives j a checkpoint interval, one time in four (a
// negative one among them).
func withInterval(rt *rapid.T, j *Job) {
	if rapid.IntRange(0, 3).Draw(rt, "interval") == 0 {
		j.CheckpointInterval = time.Duration(rapid.IntRange(-10, 240).Draw(rt, "every")) * time.Minute
	}
}

// checkUsualVisit compares collect and Plan with and without visitUsual
// for one instance; it returns how many units of rigid whole-GPU jobs
// were made in a run that visitUsual may take.
func checkUsualVisit(rt *rapid.T, cfg Config, snap Snapshot, pend *Pending, now time.Time) int {
	collected := func() *run {
		r := newSearch(rt, cfg).begin(snap, pend, now)
		r.goSolo()
		r.collect()
		r.priceRestarts()
		return r
	}
	r1 := collected()
	defer r1.end()
	slowVisit = true
	r2 := collected()
	slowVisit = false
	defer r2.end()
	if !slices.Equal(r1.jobs, r2.jobs) || !slices.Equal(r1.units, r2.units) || !slices.Equal(r1.contribs, r2.contribs) {
		rt.Fatalf("in the loop: jobs %v units %+v contribs %+v\njob by job: jobs %v units %+v contribs %+v", r1.jobs, r1.units, r1.contribs, r2.jobs, r2.units, r2.contribs)
	}
	if r1.excluded != r2.excluded || r1.eligible != r2.eligible {
		rt.Fatalf("in the loop: excluded %v, %d eligible; job by job: %v, %d", r1.excluded, r1.eligible, r2.excluded, r2.eligible)
	}
	// rank: visitUsual added up its units as it went.
	v1, v2 := r1.rank(), r2.rank()
	if v1 != v2 || r1.freeFits != r2.freeFits || r1.candidates != r2.candidates || r1.tooSmall != r2.tooSmall || !slices.Equal(r1.heap, r2.heap) {
		rt.Fatalf("ranked in the loop: %v, %d fit free, %d candidates, %d too small, heap %v\njob by job: %v, %d, %d, %d, %v",
			v1, r1.freeFits, r1.candidates, r1.tooSmall, r1.heap, v2, r2.freeFits, r2.candidates, r2.tooSmall, r2.heap)
	}
	if len(r1.doms) != len(r2.doms) {
		rt.Fatalf("%d domains ranked in the loop, %d job by job", len(r1.doms), len(r2.doms))
	}
	for i := range r1.doms {
		x1, x2 := r1.doms[i], r2.doms[i]
		l1, l2 := r1.domUnits[x1.ufrom:x1.uto], r2.domUnits[x2.ufrom:x2.uto]
		x1.ufrom, x1.uto, x2.ufrom, x2.uto = 0, 0, 0, 0
		if x1 != x2 || !slices.Equal(l1, l2) {
			rt.Fatalf("domain %d in the loop: %+v units %v\njob by job: %+v units %v", i, x1, l1, x2, l2)
		}
	}
	inLoop := 0
	if !r1.jobByJob() {
		for _, u := range r1.units {
			if j := r1.jobs[u.ji]; u.task < 0 && j.rigid && j.allWhole {
				inLoop++
			}
		}
	}
	p1, n1 := newSearch(rt, cfg).Plan(snap, pend, now)
	slowVisit = true
	p2, n2 := newSearch(rt, cfg).Plan(snap, pend, now)
	slowVisit = false
	if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(n1, n2) {
		rt.Fatalf("in the loop: %+v %+v\njob by job: %+v %+v", p1, n1, p2, n2)
	}
	return inLoop
}
