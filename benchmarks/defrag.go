package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// NVL72x100k is a 100k-GPU GB200 NVL72 cluster: 1,389 racks of 18
// four-GPU trays (25,002 trays, 100,008 GPUs), one NVLink domain and one
// ToR per rack, 16 ToRs to a spine.
var NVL72x100k = topology.Generator{Name: "gb200-nvl72-100k", Machine: "gb200-nvl72", Hosts: 25002, HostsPerToR: 18, ToRsPerSpine: 16}

func nvl72x100k(b testing.TB) *topology.Cluster {
	return cached(b, "nvl72x100k", func() (*topology.Cluster, error) {
		s, err := NVL72x100k.Spec()
		if err != nil {
			return nil, err
		}
		return topology.Build(s)
	})
}

// defragCases: protected-domain placement and the defragmentation
// decision (issue 15).
func defragCases() []Case {
	one := fig("µs/op", 2, 15)
	one.Note = "protected domains on (the topology policy's default): every candidate tray is wholly idle and one rack in three is wholly free"
	dec := fig("ms/op", 2, 15)
	dec.Note = "preempt.Defragment for 16 × 4 GPUs required in one NVLink domain; about 10,000 jobs"
	return []Case{
		{
			Name: "Place/topology/1gpu-protected/100k-nvl72", Size: "100k", BenchTime: "1s", Figures: []Figure{one, fig("allocs/op", 0, 15)},
			Doc: "topology: one 1-GPU task on " + NVL72x100k.Name + " whose trays are all busy or all idle, a third of the racks wholly idle (protected); Place, then Commit and Undo",
			F: func(b *testing.B) {
				benchPlace(b, protectFixture(b, false), "topology", placeShape{name: "1gpu-protected", tasks: 1, gpus: 1, fits: true})
			},
		},
		{
			Name: "Place/topology/cpu-only-protected/100k-nvl72", Size: "100k", BenchTime: "1s",
			Doc: "topology: one CPU-only task on the same cluster (hosts with the fewest free GPUs first, protected racks last); Place, then Commit and Undo",
			F: func(b *testing.B) {
				benchPlace(b, protectFixture(b, false), "topology", placeShape{name: "cpu-only-protected", tasks: 1, gpus: 0, fits: true})
			},
		},
		{
			Name: "Place/topology/1gpu-protected-idle/100k-nvl72", Size: "100k", BenchTime: "1s",
			Doc: "topology: one 1-GPU task on " + NVL72x100k.Name + " idle but for the last rack: the walk skips 8 protected racks, then places unprotected (the bound on protection's cost)",
			F: func(b *testing.B) {
				benchPlace(b, protectFixture(b, true), "topology", placeShape{name: "1gpu-protected-idle", tasks: 1, gpus: 1, fits: true})
			},
		},
		{
			Name: "Preempt/defrag-64gpu-nvlink/100k-nvl72", Size: "100k", BenchTime: "1s", Figures: []Figure{dec},
			Doc: "defragmentation plan for a 16 × 4-GPU gang required in one NVLink domain on " + NVL72x100k.Name + ", nearly full: every rack busy but one in 12 that has 64 GPUs free on too few whole trays",
			F:   benchDefrag,
		},
		{
			Name: "Preempt/consolidate-nvlink/100k-nvl72", Size: "100k", BenchTime: "1s",
			Doc: "consolidation when idle: preempt.Search.Consolidate at the NVLink level on the same nearly full " + NVL72x100k.Name + " (collect the ~10,000 jobs by rack, try the cheapest racks)",
			F:   benchConsolidate,
		},
	}
}

// protectFixture: trays of NVL72x100k all busy or all idle (PCG seed 13,
// 14). idle: every rack idle but the last, whose trays are busy with
// probability ½. Otherwise a third of the racks are wholly idle, a third
// wholly busy and a third mixed (each tray busy with probability 0.6).
func protectFixture(b testing.TB, idle bool) *topology.Ledger {
	key := "protect"
	if idle {
		key = "protect-idle"
	}
	return cached(b, key, func() (*topology.Ledger, error) {
		c := nvl72x100k(b)
		l := topology.NewLedger(c)
		rng := rand.New(rand.NewPCG(13, 14))
		racks := c.NumHosts() / 18
		for rk := 0; rk < racks; rk++ {
			kind := rng.IntN(3)
			if idle {
				kind = 0
				if rk == racks-1 {
					kind = 2
				}
			}
			for t := 0; t < 18; t++ {
				h := topology.HostID(rk*18 + t)
				busy := kind == 1 || kind == 2 && rng.IntN(10) < 6
				if !busy {
					continue
				}
				first, n := c.HostGPUs(h)
				for g := first; g < first+topology.GPUID(n); g++ {
					if err := l.AllocateGPU(g); err != nil {
						return nil, err
					}
				}
			}
		}
		return l, nil
	})
}

// defragState: NVL72x100k nearly full (PCG seed 11, 12). One rack in 12
// is fragmented: 13 idle trays, 4 trays each running one 1-GPU job, one
// running a whole-tray job (64 GPUs free, 13 whole trays: a 16-tray gang
// does not place). The other racks: 50% of their trays in gangs of 2, 4
// or 8 trays (NVLink required), 45% whole-tray jobs, 5% split among jobs
// of 1 and 2 GPUs, one GPU in two of those left free. Started up to a
// day before benchNow, 70% with a checkpoint since, priorities 0-9.
func defragState(b testing.TB) *preempt.State {
	return cached(b, "defrag-nvl72x100k", func() (*preempt.State, error) {
		c := nvl72x100k(b)
		rng := rand.New(rand.NewPCG(11, 12))
		l := topology.NewLedger(c)
		st := preempt.NewState(l, nil)
		n := 0
		add := func(claims []topology.Claim, per int, nvlink bool) error {
			if err := l.Allocate(claims...); err != nil {
				return err
			}
			n++
			var topo []workload.Constraint
			if nvlink {
				topo = []workload.Constraint{{Level: "nvlink", Required: true}}
			}
			return st.Add(runningJob(rng, "j"+strconv.Itoa(n), claims, per, topo))
		}
		tray := func(h topology.HostID, from, k int) topology.Claim { return gpuClaim(c, h, from, k) }
		racks := c.NumHosts() / 18
		for rk := 0; rk < racks; rk++ {
			base := topology.HostID(rk * 18)
			if rk%12 == 6 {
				for t := 0; t < 4; t++ {
					if err := add([]topology.Claim{tray(base+topology.HostID(1+4*t), 0, 1)}, 1, false); err != nil {
						return nil, err
					}
				}
				if err := add([]topology.Claim{tray(base+17, 0, 4)}, 4, false); err != nil {
					return nil, err
				}
				continue
			}
			for t := 0; t < 18; {
				h := base + topology.HostID(t)
				switch x := rng.IntN(20); {
				case x < 1: // split among small jobs, a GPU left free in half of them
					for g := 0; g < 4; {
						k := min(1+rng.IntN(2), 4-g)
						if g+k == 4 && rng.IntN(2) == 0 {
							k = 4 - g - 1
							if k == 0 {
								break
							}
						}
						if err := add([]topology.Claim{tray(h, g, k)}, k, false); err != nil {
							return nil, err
						}
						g += k
					}
					t++
				case x < 10: // a whole tray
					if err := add([]topology.Claim{tray(h, 0, 4)}, 4, false); err != nil {
						return nil, err
					}
					t++
				default: // a gang of 2, 4 or 8 trays in the rack
					k := min([]int{2, 4, 8}[rng.IntN(3)], 18-t)
					var claims []topology.Claim
					for i := 0; i < k; i++ {
						claims = append(claims, tray(h+topology.HostID(i), 0, 4))
					}
					if err := add(claims, 4, k > 1); err != nil {
						return nil, err
					}
					t += k
				}
			}
		}
		return st, nil
	})
}

func benchDefrag(b *testing.B) {
	c := nvl72x100k(b)
	st := defragState(b)
	j := &workload.Job{ID: "big", Queue: "q", Groups: []workload.TaskGroup{{Count: 16, GPUs: 4}},
		Topology: []workload.Constraint{{Level: "nvlink", Required: true}}}
	r, err := gang.NewRequest(c, j)
	if err != nil {
		fatal(b, err)
	}
	pend := &preempt.Pending{Request: r, Queue: "q"}
	s, err := preempt.New(preempt.Config{})
	if err != nil {
		fatal(b, err)
	}
	gen := st.Ledger().Generation()
	dp, np := s.Defragment(st, pend, benchNow) // sizes the scratch space outside the timer
	if dp == nil {
		fatalf(b, "no defragmentation plan: %v", np)
	}
	b.ReportAllocs()
	for b.Loop() {
		dp, np = s.Defragment(st, pend, benchNow)
	}
	if dp == nil || len(dp.Migrations) == 0 {
		fatalf(b, "plan %v, no plan %v", dp, np)
	}
	for _, m := range dp.Migrations {
		if m.To == nil {
			fatal(b, fmt.Sprintf("migration of %s without a destination", m.Job))
		}
	}
	if st.Ledger().Generation() != gen {
		fatal(b, "planning changed the ledger")
	}
	b.ReportMetric(float64(st.Len()), "jobs")
	b.ReportMetric(float64(len(dp.Migrations)), "migrations")
	b.ReportMetric(float64(dp.Domains), "domains")
	b.ReportMetric(float64(dp.Placements), "placements")
}

func benchConsolidate(b *testing.B) {
	st := defragState(b)
	s, err := preempt.New(preempt.Config{})
	if err != nil {
		fatal(b, err)
	}
	o := preempt.ConsolidateOptions{Level: topology.LevelFabric}
	gen := st.Ledger().Generation()
	dp := s.Consolidate(st, o, benchNow)
	b.ReportAllocs()
	for b.Loop() {
		dp = s.Consolidate(st, o, benchNow)
	}
	if st.Ledger().Generation() != gen {
		fatal(b, "planning changed the ledger")
	}
	moves := 0
	if dp != nil {
		moves = len(dp.Migrations)
	}
	b.ReportMetric(float64(st.Len()), "jobs")
	b.ReportMetric(float64(moves), "migrations")
}
