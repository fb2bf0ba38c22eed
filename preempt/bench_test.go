package preempt

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// fullCluster fills every GPU of c with jobs of 1 to 32 GPUs (multi-host
// jobs inside one ToR), priorities 0..9, started in the last day, 70% with
// a checkpoint, and returns the state. Seeded: the same every time.
func fullCluster(tb testing.TB, c *topology.Cluster, seed uint64) (*State, int) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	l := topology.NewLedger(c)
	st := NewState(l, nil)
	sizes := []int{1, 2, 4, 8, 8, 8, 8, 16, 16, 32}
	n := 0
	h := 0
	nh := c.NumHosts()
	var spare []topology.HostID // hosts with free GPUs left by small jobs
	for h < nh || len(spare) > 0 {
		size := sizes[rng.IntN(len(sizes))]
		var claims []topology.Claim
		per := size
		if size >= 8 {
			per = 8
			k := size / 8
			if h+k > nh || c.HostAt(topology.HostID(h), 2) != c.HostAt(topology.HostID(h+k-1), 2) {
				k = 1
			}
			if h >= nh {
				continue
			}
			for i := 0; i < k; i++ {
				first, _ := c.HostGPUs(topology.HostID(h))
				cl := topology.Claim{Host: topology.HostID(h)}
				for g := 0; g < 8; g++ {
					cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g)})
				}
				claims = append(claims, cl)
				h++
			}
		} else {
			var host topology.HostID
			if len(spare) > 0 && l.HostFreeGPUs(spare[len(spare)-1]) >= size {
				host = spare[len(spare)-1]
			} else if h < nh {
				host = topology.HostID(h)
				h++
				spare = append(spare, host)
			} else {
				// fill the last spare host with 1-GPU jobs
				host = spare[len(spare)-1]
				size, per = 1, 1
			}
			first, ng := c.HostGPUs(host)
			cl := topology.Claim{Host: host}
			for g := 0; g < ng && len(cl.GPUs) < size; g++ {
				if l.GPUIsFree(first + topology.GPUID(g)) {
					cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g)})
				}
			}
			claims = append(claims, cl)
			if l.HostFreeGPUs(host) == len(cl.GPUs) {
				spare = spare[:len(spare)-1]
			}
		}
		if err := l.Allocate(claims...); err != nil {
			tb.Fatal(err)
		}
		n++
		id := "j" + strconv.Itoa(n)
		spec := &workload.Job{ID: id, Queue: "q", Priority: int32(rng.IntN(10)),
			Groups: []workload.TaskGroup{{Count: len(claims), GPUs: per}}}
		p := &gang.Placement{Job: id, Claims: claims, Placed: []int{len(claims)}}
		for i := range claims {
			p.Tasks = append(p.Tasks, gang.TaskRef{Index: int32(i)})
		}
		j := &Job{Spec: spec, Placement: p, Started: now.Add(-time.Duration(1+rng.IntN(86400)) * time.Second)}
		if rng.IntN(10) < 7 {
			j.Checkpoint = j.Started.Add(time.Duration(rng.Int64N(int64(now.Sub(j.Started)))))
		}
		if err := st.Add(j); err != nil {
			tb.Fatal(err)
		}
	}
	if free := l.FreeGPUs(c.Root()); free != 0 {
		tb.Fatalf("%d GPUs left free", free)
	}
	return st, n
}

var benchClusters = map[string]*topology.Cluster{}

// inQueue returns a State of st's ledger and jobs (copies, filed in a
// roster of its own) with a queue tree of one queue, q, without quotas,
// each job's charge admitted to it.
func inQueue(b *testing.B, st *State) *State {
	c := st.Ledger().Cluster()
	tree, err := queue.Build(queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}, capacityOf(c))
	if err != nil {
		b.Fatal(err)
	}
	leaf, _ := tree.Lookup("q")
	out := NewState(st.Ledger(), tree)
	st.Jobs(func(j *Job) bool {
		cp := unfiled(j)
		tree.Admit(leaf, chargeOf(cp, tree, c), now)
		if err := out.Add(cp); err != nil {
			b.Fatal(err)
		}
		return true
	})
	return out
}

// unfiled returns a copy of j's spec, placement, start and checkpoint,
// in no roster (fullCluster's jobs are filed in their State's).
func unfiled(j *Job) *Job {
	return &Job{Spec: j.Spec, Placement: j.Placement, Started: j.Started, Checkpoint: j.Checkpoint}
}

func benchCluster(b *testing.B, perToR int) *topology.Cluster {
	key := strconv.Itoa(perToR)
	if c := benchClusters[key]; c != nil {
		return c
	}
	spec, err := topology.Generator{Name: "h100-100k", Machine: "dgx-h100", Hosts: 12500, HostsPerToR: perToR, ToRsPerSpine: 16}.Spec()
	if err != nil {
		b.Fatal(err)
	}
	c, err := topology.Build(spec)
	if err != nil {
		b.Fatal(err)
	}
	benchClusters[key] = c
	return c
}

// BenchmarkPlan plans on a full 100k-GPU cluster (12,500 DGX H100 hosts)
// running about 10,000 jobs:
//
//   - 512gpu-tor: a 512-GPU gang (64 × 8) required in one ToR, on a
//     cluster of 64 hosts (512 GPUs) per ToR: one whole ToR must be
//     cleared, the cheapest of 196.
//   - 256gpu-tor: the same on the h100-100k preset (32 hosts per ToR).
//   - 512gpu-spine: 512 GPUs required in one spine of the preset.
//   - 8gpu: one 8-GPU task anywhere.
//   - no-plan-512gpu-tor: the 512-GPU ToR gang at priority 5: every ToR
//     holds a job it may not preempt, so no plan exists.
func BenchmarkPlan(b *testing.B) {
	cases := []struct {
		name   string
		perToR int
		count  int
		level  string
		prio   int32
		ok     bool
	}{
		{"512gpu-tor", 64, 64, "tor", 10, true},
		{"256gpu-tor", 32, 32, "tor", 10, true},
		{"512gpu-spine", 32, 64, "spine", 10, true},
		{"8gpu", 32, 1, "", 10, true},
		{"no-plan-512gpu-tor", 64, 64, "tor", 5, false},
		// The same plans in one queue of a queue tree, as the
		// Scheduler's PlanPreemptor makes them (ground by the queue's
		// rules).
		{"512gpu-tor-queue", 64, 64, "tor", 10, true},
		{"no-plan-512gpu-tor-queue", 64, 64, "tor", 5, false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			c := benchCluster(b, tc.perToR)
			st, n := fullCluster(b, c, 1)
			if strings.HasSuffix(tc.name, "-queue") {
				st = inQueue(b, st)
			}
			f := &fixture{c: c, l: st.Ledger(), st: st}
			pend := f.pending(b, "big", "q", tc.prio, tc.count, 8, tc.level)
			s := newSearch(b, Config{})
			p, np := s.Plan(st, pend, now)
			if (p != nil) != tc.ok {
				b.Fatalf("plan %v, no plan %v", p, np)
			}
			if p != nil {
				b.Logf("%d jobs; %d victims, %s, %d domains searched, %d placements, exact %v", n, len(p.Victims), p.Cost, p.Domains, p.Placements, p.Exact)
			} else {
				b.Logf("%d jobs; %s", n, np)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				p, _ = s.Plan(st, pend, now)
			}
			if (p != nil) != tc.ok {
				b.Fatal("result changed")
			}
		})
	}
}

// BenchmarkRecover plans the recovery from a ToR failure (32 hosts, 256
// GPUs) on the full 100k-GPU cluster running about 10,000 jobs.
func BenchmarkRecover(b *testing.B) {
	c := benchCluster(b, 32)
	st, _ := fullCluster(b, c, 1)
	tor := c.DomainsAt(2)[100]
	faults := []Fault{DomainFault(tor, topology.Failed, "ToR down")}
	plan, err := Recover(st, faults, now, RecoveryConfig{})
	if err != nil || len(plan.Actions) == 0 || len(plan.Health) != 32 {
		b.Fatalf("plan %v, err %v", plan, err)
	}
	b.Logf("%d jobs hit, %s lost", len(plan.Actions), plan.Lost)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		plan, _ = Recover(st, faults, now, RecoveryConfig{})
	}
	if len(plan.Actions) == 0 {
		b.Fatal("no actions")
	}
}

// BenchmarkRoster files the jobs of the full 100k-GPU cluster (about
// 10,000, benchCluster and fullCluster) in a Roster:
//
//   - file: every job into an empty roster, in a shuffled order (a
//     Scheduler files them in order of estimated end, not of hosts), then
//     a plan's settle: what a Scheduler does when its first cycle with a
//     PlanPreemptor asks for a plan, after a restart or a
//     reconfiguration.
//   - churn: one job ends (Remove) and another starts (Add) per op, a
//     plan's settle every 32 ops (job ends are more frequent than plans).
func BenchmarkRoster(b *testing.B) {
	c := benchCluster(b, 32)
	st, _ := fullCluster(b, c, 1)
	var jobs []*Job
	st.Jobs(func(j *Job) bool {
		jobs = append(jobs, unfiled(j))
		return true
	})
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(jobs), func(i, k int) { jobs[i], jobs[k] = jobs[k], jobs[i] })
	b.Run("file", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			for _, j := range jobs {
				j.ro = nil
			}
			b.StartTimer()
			ro := NewRoster()
			for _, j := range jobs {
				if err := ro.Add(j); err != nil {
					b.Fatal(err)
				}
			}
			ro.settle()
		}
	})
	b.Run("churn", func(b *testing.B) {
		for _, j := range jobs {
			j.ro = nil
		}
		ro := NewRoster()
		for _, j := range jobs {
			if err := ro.Add(j); err != nil {
				b.Fatal(err)
			}
		}
		ro.settle()
		rng := rand.New(rand.NewPCG(2, 1))
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			j := jobs[rng.IntN(len(jobs))]
			if !ro.Remove(j) {
				b.Fatal("not filed")
			}
			if err := ro.Add(j); err != nil {
				b.Fatal(err)
			}
			if n++; n%32 == 0 {
				ro.settle()
			}
		}
	})
}
