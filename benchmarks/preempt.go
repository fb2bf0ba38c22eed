package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// benchNow is the time of every planning benchmark.
var benchNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// preemptCases: victim planning on full clusters (issue 5).
func preemptCases() []Case {
	plan := fig("ms/op", 1, 5)
	plan.Note = "on h100-100k-tor64 (64 hosts per ToR): a ToR of h100-100k holds only 256 GPUs"
	noPlan := fig("ms/op", 2, 5)
	noPlan.Note = plan.Note
	cs := []Case{
		{
			Name: "Preempt/plan-512gpu-tor/100k-tor64", Size: "100k", BenchTime: "1s", Figures: []Figure{plan},
			Doc: "plan for a 64 × 8-GPU gang (priority 10) required in one ToR on h100-100k-tor64, every GPU busy with jobs of priority 0-9: clear the cheapest whole ToR",
			F:   func(b *testing.B) { benchPlan(b, "", 64, "tor", 10, true) },
		},
		{
			Name: "Preempt/no-plan-512gpu-tor/100k-tor64", Size: "100k", BenchTime: "1s", Figures: []Figure{noPlan},
			Doc: "prove that no plan exists for the same gang at priority 5 (every ToR holds jobs it may not preempt)",
			F:   func(b *testing.B) { benchPlan(b, "", 64, "tor", 5, false) },
		},
	}
	for _, sz := range sizes {
		var figs []Figure
		if sz.name == "100k" {
			f := fig("ms/op", 1, 5)
			f.Note = "the 512-GPU target applied to one whole ToR (256 GPUs) of h100-100k"
			figs = []Figure{f}
		}
		cs = append(cs,
			Case{
				Name: "Preempt/plan-256gpu-tor/" + sz.name, Size: sz.name, BenchTime: "1s", Figures: figs,
				Doc: "plan for a 32 × 8-GPU gang (priority 10) required in one ToR of " + sz.preset + ", every GPU busy: clear one whole ToR",
				F:   func(b *testing.B) { benchPlan(b, sz.preset, 32, "tor", 10, true) },
			},
			Case{
				Name: "Preempt/no-plan-256gpu-tor/" + sz.name, Size: sz.name, BenchTime: "1s",
				Doc: "prove that no plan exists for that gang at priority 5 on " + sz.preset,
				F:   func(b *testing.B) { benchPlan(b, sz.preset, 32, "tor", 5, false) },
			},
			Case{
				Name: "Preempt/plan-8gpu/" + sz.name, Size: sz.name, BenchTime: "1s",
				Doc: "plan for one 8-GPU task (priority 10) anywhere on " + sz.preset + ", every GPU busy",
				F:   func(b *testing.B) { benchPlan(b, sz.preset, 1, "", 10, true) },
			},
		)
	}
	return cs
}

// fullState returns the planning fixture of a cluster: every GPU busy
// with jobs (PCG seed 7, 8), ToR by ToR: whole-host jobs, gangs of 2, 4
// or 8 whole hosts inside the ToR, and hosts split among jobs of 1, 2 and
// 4 GPUs; priorities 0-9; started up to a day before benchNow; 70% with a
// checkpoint since. On h100-100k that is about 10,000 jobs.
func fullState(b testing.TB, key string, c *topology.Cluster) *preempt.State {
	return cached(b, "full/"+key, func() (*preempt.State, error) {
		rng := rand.New(rand.NewPCG(7, 8))
		l := topology.NewLedger(c)
		st := preempt.NewState(l, nil)
		tor, ok := c.LevelByName("tor")
		if !ok {
			return nil, fmt.Errorf("%s has no tor level", c.Name())
		}
		n := 0
		add := func(claims []topology.Claim, per int) error {
			if err := l.Allocate(claims...); err != nil {
				return err
			}
			n++
			return st.Add(runningJob(rng, "j"+strconv.Itoa(n), claims, per, nil))
		}
		hostClaim := func(h topology.HostID, from, k int) topology.Claim { return gpuClaim(c, h, from, k) }
		for _, d := range c.DomainsAt(tor) {
			first, end := c.DomainHosts(d)
			for h := first; h < end; {
				_, ng := c.HostGPUs(h)
				switch x := rng.IntN(20); {
				case x < 6: // split among small jobs
					for g := 0; g < ng; {
						k := min([]int{1, 2, 4}[rng.IntN(3)], ng-g)
						if err := add([]topology.Claim{hostClaim(h, g, k)}, k); err != nil {
							return nil, err
						}
						g += k
					}
					h++
				case x < 14: // a whole host
					if err := add([]topology.Claim{hostClaim(h, 0, ng)}, ng); err != nil {
						return nil, err
					}
					h++
				default: // a gang of 2, 4 or 8 hosts inside the ToR
					k := min([]int{2, 4, 8}[rng.IntN(3)], int(end-h))
					var claims []topology.Claim
					for i := 0; i < k; i++ {
						claims = append(claims, hostClaim(h+topology.HostID(i), 0, ng))
					}
					if err := add(claims, ng); err != nil {
						return nil, err
					}
					h += topology.HostID(k)
				}
			}
		}
		if free := l.FreeGPUs(c.Root()); free != 0 {
			return nil, fmt.Errorf("%d GPUs left free", free)
		}
		return st, nil
	})
}

func benchPlan(b *testing.B, presetName string, tasks int, level string, prio int32, ok bool) {
	var c *topology.Cluster
	var st *preempt.State
	if presetName == "" {
		c = tor64(b)
		st = fullState(b, "tor64", c)
	} else {
		c = preset(b, presetName)
		st = fullState(b, presetName, c)
	}
	j := &workload.Job{ID: "big", Queue: "q", Priority: prio, Groups: []workload.TaskGroup{{Count: tasks, GPUs: 8}}}
	if level != "" {
		j.Topology = []workload.Constraint{{Level: level, Required: true}}
	}
	r, err := gang.NewRequest(c, j)
	if err != nil {
		fatal(b, err)
	}
	pend := &preempt.Pending{Request: r, Queue: "q", Priority: prio}
	s, err := preempt.New(preempt.Config{})
	if err != nil {
		fatal(b, err)
	}
	gen := st.Ledger().Generation()
	p, np := s.Plan(st, pend, benchNow) // sizes the scratch space outside the timer
	if (p != nil) != ok {
		fatalf(b, "plan %v, no plan %v", p, np)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, np = s.Plan(st, pend, benchNow)
	}
	if (p != nil) != ok {
		fatalf(b, "plan %v, no plan %v", p, np)
	}
	if p != nil && len(p.Victims) == 0 {
		fatal(b, "a plan without victims on a full cluster")
	}
	if np != nil && np.Verdict == 0 {
		fatal(b, "no plan without a verdict")
	}
	if st.Ledger().Generation() != gen {
		fatal(b, "planning changed the ledger")
	}
	b.ReportMetric(float64(st.Len()), "jobs")
}

// runningJob is a fixture job: id running its len(claims) tasks of per GPUs
// on claims, with topology constraints topo; its priority (0-9), start (up
// to a day before benchNow) and, for 70%, a checkpoint since are drawn
// from rng in that order.
func runningJob(rng *rand.Rand, id string, claims []topology.Claim, per int, topo []workload.Constraint) *preempt.Job {
	spec := &workload.Job{ID: id, Queue: "q", Priority: int32(rng.IntN(10)),
		Groups: []workload.TaskGroup{{Count: len(claims), GPUs: per}}, Topology: topo}
	p := &gang.Placement{Job: id, Claims: claims, Placed: []int{len(claims)}}
	for i := range claims {
		p.Tasks = append(p.Tasks, gang.TaskRef{Index: int32(i)})
	}
	j := &preempt.Job{Spec: spec, Placement: p, Started: benchNow.Add(-time.Duration(60+rng.IntN(86400)) * time.Second)}
	if rng.IntN(10) < 7 {
		j.Checkpoint = j.Started.Add(time.Duration(rng.Int64N(int64(benchNow.Sub(j.Started)))))
	}
	return j
}

// gpuClaim claims GPUs from..from+k-1 of host h.
func gpuClaim(c *topology.Cluster, h topology.HostID, from, k int) topology.Claim {
	first, _ := c.HostGPUs(h)
	cl := topology.Claim{Host: h}
	for g := from; g < from+k; g++ {
		cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g)})
	}
	return cl
}
