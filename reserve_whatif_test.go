package gpusched

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// ledgerView renders everything a ledger reports: per GPU its occupancy,
// per host its free CPU, memory and GPUs, per domain its counters, and
// the answers of the indexed queries.
func ledgerView(l *topology.Ledger) string {
	c := l.Cluster()
	var b []byte
	for g := topology.GPUID(0); int(g) < c.NumGPUs(); g++ {
		b = fmt.Appendf(b, "gpu %d %+v\n", g, l.GPU(g))
	}
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		b = fmt.Appendf(b, "host %d %v %d %d %d\n", h, l.HostHealth(h), l.CPUFree(h), l.MemoryFree(h), l.HostFreeGPUs(h))
	}
	for d := topology.DomainID(0); int(d) < c.NumDomains(); d++ {
		b = fmt.Appendf(b, "domain %d %d %d %d\n", d, l.FreeGPUs(d), l.FreeMilli(d), l.HealthyGPUs(d))
	}
	for k := 1; k <= 9; k++ {
		h, ok := l.BestHost(c.Root(), k, topology.NoModel)
		b = fmt.Appendf(b, "best host %d: %d %v\n", k, h, ok)
		for lv := topology.Level(0); lv < c.LevelCluster(); lv++ {
			if lv != topology.LevelHost {
				d, ok := l.BestDomain(lv, k)
				b = fmt.Appendf(b, "best domain %d %d: %d %v\n", lv, k, d, ok)
			}
		}
	}
	l.AscendSharedGPUs(topology.NoModel, 1, func(g topology.GPUID, free int) bool {
		b = fmt.Appendf(b, "shared %d %d\n", g, free)
		return true
	})
	return string(b)
}

// TestPropertyWhatIfRollback: after any what-if on a ledger (releases of
// what jobs hold, allocations, claims put back, on hosts made unhealthy
// or cordoned), rollback leaves the ledger exactly as a deep copy taken
// before: Check holds, and every counter, occupancy and query answer is
// the same; Generation only moved on.
func TestPropertyWhatIfRollback(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := testCluster(t, rapid.IntRange(1, 6).Draw(rt, "hosts"), 2)
		l := topology.NewLedger(c)
		claim := func() topology.Claim {
			h := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(rt, "host"))
			first, n := c.HostGPUs(h)
			cl := topology.Claim{Host: h, CPUMilli: int64(rapid.IntRange(0, 3).Draw(rt, "cpu")) * 4000, MemoryMiB: int64(rapid.IntRange(0, 3).Draw(rt, "mem")) * 1024}
			for k := rapid.IntRange(0, 3).Draw(rt, "gpus"); k > 0; k-- {
				gc := topology.GPUClaim{GPU: first + topology.GPUID(rapid.IntRange(0, n-1).Draw(rt, "gpu"))}
				if rapid.Bool().Draw(rt, "share") {
					gc.Kind, gc.Milli = topology.ClaimShare, int32(rapid.SampledFrom([]int{250, 500, 750}).Draw(rt, "milli"))
				}
				cl.GPUs = append(cl.GPUs, gc)
			}
			return cl
		}
		var held [][]topology.Claim
		for range rapid.IntRange(0, 30).Draw(rt, "jobs") {
			cs := []topology.Claim{claim()}
			if l.Allocate(cs...) == nil {
				held = append(held, cs)
			}
		}
		for range rapid.IntRange(0, 2).Draw(rt, "health changes") {
			h := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(rt, "sick host"))
			if rapid.Bool().Draw(rt, "cordon") {
				_ = l.SetHostCordoned(h, true)
			} else {
				_ = l.SetHostHealth(h, topology.Draining)
			}
		}
		before, gen := ledgerView(l.Clone()), l.Generation()
		var w whatIf
		w.begin(l)
		var released [][]topology.Claim
		for range rapid.IntRange(0, 40).Draw(rt, "what-if steps") {
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0:
				if len(held) > 0 {
					i := rapid.IntRange(0, len(held)-1).Draw(rt, "release")
					if w.Release(held[i]...) == nil {
						released = append(released, held[i])
						held = append(held[:i], held[i+1:]...)
					}
				}
			case 1:
				if cs := []topology.Claim{claim()}; w.Allocate(cs...) == nil {
					held = append(held, cs)
				}
			case 2, 3:
				if len(released) > 0 {
					i := rapid.IntRange(0, len(released)-1).Draw(rt, "put back")
					put := w.Reinstate
					if rapid.Bool().Draw(rt, "trial restore") {
						put = w.TrialRestore
					}
					if put(released[i]...) == nil {
						held = append(held, released[i])
						released = append(released[:i], released[i+1:]...)
					}
				}
			}
			if rapid.IntRange(0, 4).Draw(rt, "query") == 0 {
				_ = ledgerView(l) // the indexes refresh mid-what-if
			}
		}
		w.rollback()
		if err := l.Check(); err != nil {
			rt.Fatalf("after rollback: %v", err)
		}
		if got := ledgerView(l); got != before {
			rt.Fatalf("rollback left the ledger changed:\n%s", firstLineDiff(got, before))
		}
		if l.Generation() < gen {
			rt.Fatalf("generation went back from %d to %d", gen, l.Generation())
		}
	})
}

// firstLineDiff returns the first line where got and want differ.
func firstLineDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	end := func(s string) string {
		j := i
		for j < len(s) && s[j] != '\n' {
			j++
		}
		k := i
		for k > 0 && s[k-1] != '\n' {
			k--
		}
		return s[k:j]
	}
	return "got  " + end(got) + "\nwant " + end(want)
}

// TestPropertyReserveShadow drives random streams through a backfilling
// queue and checks after every cycle that the live ledger holds exactly
// what the holding jobs hold (reserve's what-ifs on it left nothing
// behind), and that every kept reservation's shadow, the Occupancy reserve
// took of its what-if and the admissions since, equals the shadow the
// Ledger-copy path (rebuild: a copy of the live ledger, every job ending
// by the reserved time released, the reservation taken) makes of it, GPU
// by GPU and host by host.
func TestPropertyReserveShadow(t *testing.T) {
	var shadows int
	defer func() {
		t.Logf("%d shadows compared", shadows)
		if shadows == 0 {
			t.Error("the property was never exercised")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		c := testCluster(t, rapid.IntRange(2, 5).Draw(rt, "hosts"), 0)
		s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
			{Name: "q", Policy: queue.Policy{Ordering: queue.StrictFIFO, Backfill: true}},
			{Name: "r", Policy: queue.Policy{Ordering: queue.BestEffortFIFO, Backfill: true}}}}},
			MaxReservations: 4})
		if err != nil {
			rt.Fatal(err)
		}
		var jobs []*simJob
		for i := range rapid.IntRange(2, 30).Draw(rt, "jobs") {
			g := shapes[rapid.IntRange(0, len(shapes)-1).Draw(rt, "shape")]
			jobs = append(jobs, &simJob{spec: workload.Job{ID: fmt.Sprintf("j%02d", i), Queue: rapid.SampledFrom([]string{"q", "r"}).Draw(rt, "queue"),
				Groups: []workload.TaskGroup{g}, Runtime: time.Duration(rapid.IntRange(1, 12).Draw(rt, "rt")) * 10 * time.Minute},
				arrive: t0.Add(time.Duration(rapid.IntRange(0, 120).Draw(rt, "at")) * time.Minute)})
		}
		runStream(t, s, jobs, t0.Add(100*time.Hour), func(now time.Time, d Decision) {
			want := topology.NewLedger(c)
			s.Holding(func(id string, st JobStatus) bool {
				if err := want.Allocate(st.Placement.Claims...); err != nil {
					rt.Fatalf("%s: %v", id, err)
				}
				return true
			})
			if err := s.ledger.Check(); err != nil {
				rt.Fatalf("%v: live ledger: %v", now, err)
			}
			if got, w := ledgerView(s.ledger), ledgerView(want); got != w {
				rt.Fatalf("%v: the live ledger is not what the jobs hold:\n%s", now, firstLineDiff(got, w))
			}
			for _, r := range s.res.kept {
				occ, ok := r.shadow.(*topology.Occupancy)
				if !ok {
					continue
				}
				sh := s.res.rebuild(r, s.ledger, &s.jobs, &s.noms)
				full, _ := sh.(*topology.Ledger)
				if full == nil {
					rt.Fatalf("%v: %s's reservation does not fit the rebuilt shadow", now, r.holder.spec.ID)
				}
				for g := topology.GPUID(0); int(g) < c.NumGPUs(); g++ {
					if occ.GPU(g) != full.GPU(g) {
						rt.Fatalf("%v: %s's shadow: %s is %+v, rebuilt %+v", now, r.holder.spec.ID, c.GPUName(g), occ.GPU(g), full.GPU(g))
					}
				}
				for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
					if occ.CPUFree(h) != full.CPUFree(h) || occ.MemoryFree(h) != full.MemoryFree(h) {
						rt.Fatalf("%v: %s's shadow: host %s differs", now, r.holder.spec.ID, c.HostName(h))
					}
				}
				s.res.recycle(full)
				shadows++
			}
		})
	})
}
