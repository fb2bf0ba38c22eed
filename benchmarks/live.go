package benchmarks

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// liveCases: live changes of a running cluster (issue 14): a host joining
// or leaving h100-100k while its ledger is half full, each a new Cluster
// version (Apply) and the ledger following it (Follow).
func liveCases() []Case {
	return []Case{{
		Name: "Live/add-host-tor/100k",
		Doc:  "a dgx-h100 host joins an existing ToR in the middle of h100-100k (about half its GPUs held): Cluster.Apply + Ledger.Follow",
		Size: "100k", BenchTime: "300x",
		Figures: []Figure{fig("ms/op", 1, 14)},
		F:       func(b *testing.B) { benchLiveAdd(b, false) },
	}, {
		Name: "Live/add-host-new-tor/100k",
		Doc:  "a new ToR under a middle spine of h100-100k, with one dgx-h100 host: Cluster.Apply + Ledger.Follow",
		Size: "100k", BenchTime: "300x",
		F: func(b *testing.B) { benchLiveAdd(b, true) },
	}, {
		Name: "Live/remove-host/100k",
		Doc:  "an idle dgx-h100 host leaves h100-100k (about half its GPUs held): Cluster.Apply + Ledger.Follow",
		Size: "100k", BenchTime: "300x",
		Figures: []Figure{fig("ms/op", 1, 14)},
		F:       benchLiveRemove,
	}, {
		Name: "Live/reconfigure-queues/100k",
		Doc:  "reconfigure a 50-leaf queue tree over 100k GPUs holding 10,000 jobs (5,000 running, 5,000 pending): every quota and weight, one leaf's policy, one leaf added or removed",
		Size: "100k", BenchTime: "300x",
		Figures: []Figure{fig("ms/op", 1, 14)},
		F:       benchLiveReconfigure,
	}, {
		Name: "Live/scheduler-add-host/100k",
		Doc:  "Scheduler.AddHosts: a dgx-h100 host joins a middle ToR of h100-100k, 90% held by running jobs, 10,000 pending; every concern follows",
		Size: "100k", BenchTime: "100x",
		Figures: []Figure{fig("ms/op", 1, 14)},
		F:       benchSchedulerAddHost,
	}, {
		Name: "Live/scheduler-remove-host/100k",
		Doc:  "Scheduler.RemoveHosts of an idle host, same world",
		Size: "100k", BenchTime: "100x",
		Figures: []Figure{fig("ms/op", 1, 14)},
		F:       benchSchedulerRemoveHost,
	}, {
		Name: "Live/scheduler-reconfigure/100k",
		Doc:  "Scheduler.Reconfigure: every quota of the world's 20 queues edited, same world",
		Size: "100k", BenchTime: "100x",
		Figures: []Figure{fig("ms/op", 1, 14)},
		F:       benchSchedulerReconfigure,
	}, {
		Name: "Live/scheduler-join-then-cycle/100k",
		Doc:  "Scheduler.AddHosts and the Schedule after it (which re-initialises the placer's per-cluster scratch), same world; no target: what a join costs the next cycle",
		Size: "100k", BenchTime: "20x",
		F: benchSchedulerJoinCycle,
	}}
}

// liveLedger returns a private copy of the half-full h100-100k ledger,
// following a first change made outside the timer: the fixture's cluster
// is shared by the cases, so the first change from it copies its arrays.
func liveLedger(b *testing.B) *topology.Ledger {
	c := preset(b, "h100-100k")
	l := fragmented(b, "h100-100k/4", c, 4).Clone()
	next, err := c.Apply(topology.Change{Hosts: []topology.HostGroup{{Name: "warm", Template: c.Host(0).Template, Parent: c.DomainName(c.HostAt(0, topology.LevelHost+1))}}})
	if err != nil {
		fatal(b, err)
	}
	if err := l.Follow(next); err != nil {
		fatal(b, err)
	}
	return l
}

func benchLiveAdd(b *testing.B, newToR bool) {
	l := liveLedger(b)
	c := l.Cluster()
	tors := c.DomainsAt(topology.LevelHost + 1)
	spines := c.DomainsAt(topology.LevelHost + 2)
	mid := c.DomainName(tors[len(tors)/2])
	spine := c.DomainName(spines[len(spines)/2])
	tmpl := c.Host(0).Template
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ch := topology.Change{Hosts: []topology.HostGroup{{Name: fmt.Sprintf("join%d", i), Template: tmpl, Parent: mid}}}
		if newToR {
			tor := fmt.Sprintf("newtor%d", i)
			ch.Switches = []topology.SwitchGroup{{Name: tor, Level: "tor", Parent: spine}}
			ch.Hosts[0].Parent = tor
		}
		next, err := c.Apply(ch)
		if err != nil {
			fatal(b, err)
		}
		if err := l.Follow(next); err != nil {
			fatal(b, err)
		}
		c = next
		i++
	}
	if c.NumHosts() != 12501+i || l.HostFreeGPUs(topology.HostID(c.NumHosts()-1)) != 8 {
		fatalf(b, "%d hosts after %d joins", c.NumHosts(), i)
	}
}

func benchLiveRemove(b *testing.B) {
	l := liveLedger(b)
	c := l.Cluster()
	var idle []string
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		if _, n := c.HostGPUs(h); l.HostFreeGPUs(h) == n && l.CPUFree(h) == c.CPUMilli(h) {
			idle = append(idle, c.HostName(h))
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(idle) {
			fatalf(b, "only %d idle hosts to remove", len(idle))
		}
		next, err := c.Apply(topology.Change{Remove: []string{idle[i]}})
		if err != nil {
			fatal(b, err)
		}
		if err := l.Follow(next); err != nil {
			fatal(b, err)
		}
		c = next
		i++
	}
	if c.NumRemoved() != i {
		fatalf(b, "%d removed after %d removals", c.NumRemoved(), i)
	}
}

// liveQueueConfig is a queue tree of 10 organisations × 5 leaves over
// 100k GPUs; odd flips the quotas, weights, one leaf's policy and whether
// the extra leaf "spare" exists.
func liveQueueConfig(odd bool) queue.Config {
	var root queue.Node
	for o := range 10 {
		org := queue.Node{Name: fmt.Sprintf("org%d", o), Quotas: []queue.Quota{{Resource: "gpu", Nominal: 9000}}}
		for q := range 5 {
			n := queue.Node{Name: fmt.Sprintf("org%d-q%d", o, q), Quotas: []queue.Quota{{Resource: "gpu", Nominal: 1600, BorrowingLimit: queue.Limit(2000)}}}
			if odd {
				n.Quotas[0].Nominal, n.Weight = 1500, 2
			}
			if odd && o == 0 && q == 0 {
				n.Policy = queue.Policy{Ordering: queue.StrictFIFO}
			}
			org.Children = append(org.Children, n)
		}
		root.Children = append(root.Children, org)
	}
	if odd {
		root.Children = append(root.Children, queue.Node{Name: "spare", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 100}}})
	}
	return queue.Config{Root: root}
}

// benchLiveReconfigure reconfigures a queue tree holding 10,000 jobs (100
// running and 100 pending per leaf) back and forth between two configs
// that differ in every leaf's quota and weight, one leaf's ordering policy
// (its 100 pending jobs re-queued) and one leaf added or removed.
func benchLiveReconfigure(b *testing.B) {
	capacity := queue.Capacity{Resources: workload.Resources{GPUMilli: 100000 * 1000, CPUMilli: 1 << 40, MemoryMiB: 1 << 40}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr, err := queue.Build(liveQueueConfig(false), capacity)
	if err != nil {
		fatal(b, err)
	}
	seq := uint64(0)
	for _, id := range tr.Leaves() {
		lf := tr.LeafOf(id)
		for range 100 {
			tr.Admit(id, queue.Vector{8000, 0, 0}, t0)
			tr.Start(id, queue.Vector{8000, 0, 0}, t0)
			lf.Count(0, 1)
			seq++
			lf.Add(&queue.Entry{ID: fmt.Sprintf("p%d", seq), Seq: seq, Submitted: t0.Add(time.Duration(seq)), Class: "8gpu", Demand: queue.Vector{8000, 0, 0}})
		}
	}
	cfgs := [2]queue.Config{liveQueueConfig(false), liveQueueConfig(true)}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		next, _, err := tr.Reconfigure(cfgs[i%2], capacity, nil, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			fatal(b, err)
		}
		tr = next
	}
	pending := 0
	for _, id := range tr.Leaves() {
		pending += tr.LeafOf(id).Len()
	}
	if used, _ := tr.Usage(0); pending != 5000 || used[0] != 5000*8000 {
		fatalf(b, "%d pending, %d milli-GPU used after %d reconfigurations", pending, used[0], i)
	}
}

// liveScheduler is the 100k-GPU scheduling world (about 90% of h100-100k
// held by running jobs) with 10,000 pending jobs, its cycle run.
func liveScheduler(b *testing.B) (*gpusched.Scheduler, *schedWorld, time.Time) {
	w := world(b, "h100-100k")
	s, now, _ := w.scheduler(b, 10000)
	d := s.Schedule(now)
	for _, x := range d.Bindings {
		if err := s.Started(x.Job, now); err != nil {
			fatal(b, err)
		}
	}
	return s, w, now
}

// benchSchedulerAddHost: Scheduler.AddHosts, one host into a middle ToR
// per op, with every concern following (ledger, jobs, admission,
// reservations, the queue tree's capacity).
func benchSchedulerAddHost(b *testing.B) {
	s, w, now := liveScheduler(b)
	c := w.c
	tors := c.DomainsAt(topology.LevelHost + 1)
	mid := c.DomainName(tors[len(tors)/2])
	tmpl := c.Host(0).Template
	// A first join outside the timer: the fixture's cluster is shared by
	// the runs of this benchmark, so the first change from it copies.
	if err := s.AddHosts(topology.Change{Hosts: []topology.HostGroup{{Name: "warm", Template: tmpl, Parent: mid}}}, now); err != nil {
		fatal(b, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.AddHosts(topology.Change{Hosts: []topology.HostGroup{{Name: fmt.Sprintf("join%d", i), Template: tmpl, Parent: mid}}}, now); err != nil {
			fatal(b, err)
		}
	}
	b.StopTimer()
	if s.Cluster().NumHosts() != c.NumHosts()+b.N+1 {
		fatalf(b, "%d hosts after %d joins", s.Cluster().NumHosts(), b.N)
	}
	b.ReportMetric(float64(s.Len()), "jobs")
}

// benchSchedulerRemoveHost: Scheduler.RemoveHosts of an idle host per op
// (hosts added outside the timer).
func benchSchedulerRemoveHost(b *testing.B) {
	s, w, now := liveScheduler(b)
	c := w.c
	tors := c.DomainsAt(topology.LevelHost + 1)
	tmpl := c.Host(0).Template
	for i := 0; i < b.N; i++ {
		tor := c.DomainName(tors[i%len(tors)])
		if err := s.AddHosts(topology.Change{Hosts: []topology.HostGroup{{Name: fmt.Sprintf("idle%d", i), Template: tmpl, Parent: tor}}}, now); err != nil {
			fatal(b, err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if jobs, err := s.RemoveHosts([]string{fmt.Sprintf("idle%d", i)}, now); err != nil || len(jobs) > 0 {
			fatalf(b, "RemoveHosts: %v, %v", jobs, err)
		}
	}
	b.StopTimer()
	if s.Cluster().NumRemoved() != b.N {
		fatalf(b, "%d removed after %d removals", s.Cluster().NumRemoved(), b.N)
	}
	b.ReportMetric(float64(s.Len()), "jobs")
}

// benchSchedulerReconfigure: Scheduler.Reconfigure toggling every queue's
// quota (the 20 queues of the world, nominal ±10%).
func benchSchedulerReconfigure(b *testing.B) {
	s, w, now := liveScheduler(b)
	cfgs := [2]queue.Config{w.queues, scaledQueues(w.queues, 9, 10)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Reconfigure(cfgs[(i+1)%2], nil, now); err != nil {
			fatal(b, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(s.Len()), "jobs")
}

// scaledQueues returns cfg with every nominal quota scaled by num/den.
func scaledQueues(cfg queue.Config, num, den int64) queue.Config {
	var scale func(n queue.Node) queue.Node
	scale = func(n queue.Node) queue.Node {
		out := n
		out.Quotas = slices.Clone(n.Quotas)
		for i := range out.Quotas {
			out.Quotas[i].Nominal = out.Quotas[i].Nominal * num / den
		}
		out.Children = nil
		for _, ch := range n.Children {
			out.Children = append(out.Children, scale(ch))
		}
		return out
	}
	cfg.Root = scale(cfg.Root)
	return cfg
}

// benchSchedulerJoinCycle: a host joins, then a cycle runs (the placers
// see a new cluster version for the first time).
func benchSchedulerJoinCycle(b *testing.B) {
	s, w, now := liveScheduler(b)
	c := w.c
	tors := c.DomainsAt(topology.LevelHost + 1)
	mid := c.DomainName(tors[len(tors)/2])
	tmpl := c.Host(0).Template
	if err := s.AddHosts(topology.Change{Hosts: []topology.HostGroup{{Name: "warm", Template: tmpl, Parent: mid}}}, now); err != nil {
		fatal(b, err)
	}
	s.Schedule(now)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Second)
		if err := s.AddHosts(topology.Change{Hosts: []topology.HostGroup{{Name: fmt.Sprintf("join%d", i), Template: tmpl, Parent: mid}}}, now); err != nil {
			fatal(b, err)
		}
		d := s.Schedule(now)
		for _, x := range d.Bindings {
			if err := s.Started(x.Job, now); err != nil {
				fatal(b, err)
			}
		}
	}
}
