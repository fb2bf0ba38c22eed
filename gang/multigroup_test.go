package gang

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// hostsWithCores builds one empty host of the machine preset per entry of
// cpuFree, with no network levels, and takes CPU from each host so that
// cpuFree[i] cores are left.
func hostsWithCores(t *testing.T, machine string, cpuFree ...int64) *topology.Ledger {
	t.Helper()
	s, err := topology.Generator{Name: "few", Machine: machine, Hosts: len(cpuFree)}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	l := topology.NewLedger(c)
	for i, free := range cpuFree {
		h := topology.HostID(i)
		if err := l.Allocate(topology.Claim{Host: h, CPUMilli: l.CPUFree(h) - free*1000}); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// mpiJob is an MPI-style gang: one launcher of 60 cores without GPUs and
// one 8-GPU worker of 5 cores.
func mpiJob(launcherFirst bool, cons ...workload.Constraint) *workload.Job {
	la := workload.TaskGroup{Name: "launcher", Count: 1, CPUMilli: 60000}
	wk := workload.TaskGroup{Name: "worker", Count: 1, GPUs: 8, CPUMilli: 5000}
	gs := []workload.TaskGroup{la, wk}
	if !launcherFirst {
		gs = []workload.TaskGroup{wk, la}
	}
	return &workload.Job{ID: "mpi", Groups: gs, Topology: cons}
}

// TestMPILauncherAndWorker: two empty 8-GPU hosts with 62 and 10 free
// cores. The worker placed greedily first (largest GPU demand first) would
// take the first host, leaving the launcher's 60 cores nowhere; the gang
// fits with the worker on the second host. Every policy must find it, in
// either group order, and a second, identical launcher makes it
// infeasible (only one host has 60 cores): capacity for CPU.
func TestMPILauncherAndWorker(t *testing.T) {
	l := hostsWithCores(t, "dgx-h100", 62, 10)
	c := l.Cluster()
	for _, policy := range PolicyNames() {
		for _, first := range []bool{true, false} {
			p, x := place(t, policy, l, mpiJob(first))
			if x != nil {
				t.Fatalf("%s (launcher first %v): %s", policy, first, x)
			}
			for i, cl := range p.Claims {
				g := p.Tasks[i].Group
				name := mpiJob(first).Groups[g].Name
				want := topology.HostID(0)
				if name == "worker" {
					want = 1
				}
				if cl.Host != want {
					t.Fatalf("%s: %s on %s", policy, name, c.HostName(cl.Host))
				}
			}
			if _, err := Commit(l, p); err != nil {
				t.Fatalf("%s: %v", policy, err)
			}
			if err := l.Release(p.Claims...); err != nil {
				t.Fatal(err)
			}
		}
		j := mpiJob(true)
		j.Groups[0].Count = 2
		_, x := place(t, policy, l, j)
		if x == nil {
			t.Fatalf("%s: placed two 60-core launchers on hosts with 62 and 10 free cores", policy)
		}
	}
}

// TestSearchBacktracks: a gang that first-fit places by no group order,
// only by the backtracking search. Three 8-GPU PCIe boxes: host 0 with 16
// free cores, host 1 with 14, host 2 with 16 and one GPU busy (7 free).
// The gang is an 8-GPU task without CPU and three 4-GPU tasks of 8 cores.
// Largest first, the 8-GPU task takes host 0 and the 4-GPU tasks find
// room for two (host 1's 14 cores hold one, host 2's 7 GPUs one).
// CPU-heavy first, two 4-GPU tasks take host 0, one host 1, and the
// 8-GPU task finds no host with 8 free. The fit: the 8-GPU task on host
// 1, two 4-GPU tasks on host 0, one on host 2. Every policy finds it.
func TestSearchBacktracks(t *testing.T) {
	l := hostsWithCores(t, "pcie-8gpu", 16, 14, 16)
	c := l.Cluster()
	first, _ := c.HostGPUs(2)
	takeGPUs(t, l, first)
	j := &workload.Job{ID: "bt", Groups: []workload.TaskGroup{
		{Name: "big", Count: 1, GPUs: 8},
		{Name: "half", Count: 3, GPUs: 4, CPUMilli: 8000},
	}}
	for _, policy := range PolicyNames() {
		p, x := place(t, policy, l, j)
		if x != nil {
			t.Fatalf("%s: %s", policy, x)
		}
		perHost := map[topology.HostID]int{}
		for i, cl := range p.Claims {
			if p.Tasks[i].Group == 0 && cl.Host != 1 {
				t.Fatalf("%s: the 8-GPU task on %s", policy, c.HostName(cl.Host))
			}
			perHost[cl.Host]++
		}
		if perHost[0] != 2 || perHost[1] != 1 || perHost[2] != 1 {
			t.Fatalf("%s: tasks per host %v", policy, perHost)
		}
	}
	// Without the search (no budget) first-fit's greedy orders fail: the
	// case exercises the search, not the orders.
	defer func(b int) { searchBudget = b }(searchBudget)
	searchBudget = 0
	if _, x := place(t, "first-fit", l, j); x == nil {
		t.Fatal("placed without the search: the case no longer needs it")
	}
}

// TestCPUOnlyGangOnHostWithoutGPUs: hosts without GPUs are not in the
// ledger's GPU indexes, but a CPU-only gang required in one host may need
// one of them: here the only host with the cores free. Every policy finds
// it.
func TestCPUOnlyGangOnHostWithoutGPUs(t *testing.T) {
	_, h100, _ := topology.MachineTemplate("dgx-h100")
	gpuT, _, _ := topology.MachineTemplate("dgx-h100")
	gpuT.Name = "gpu"
	cpuT := topology.HostTemplate{Name: "cpu", CPUMilli: 64000, MemoryMiB: 262144}
	c, err := topology.Build(topology.Spec{
		Version: topology.SpecVersion, Name: "mixed",
		Accelerators: []topology.AcceleratorSpec{h100},
		Templates:    []topology.HostTemplate{gpuT, cpuT},
		Hosts:        []topology.HostGroup{{Name: "gpu[1-2]", Template: "gpu"}, {Name: "cpu1", Template: "cpu"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := topology.NewLedger(c)
	for h := topology.HostID(0); h < 2; h++ {
		if err := l.Allocate(topology.Claim{Host: h, CPUMilli: l.CPUFree(h) - 8000}); err != nil {
			t.Fatal(err)
		}
	}
	j := job("cpu", 2, workload.TaskGroup{CPUMilli: 16000}, req("host"))
	for _, policy := range PolicyNames() {
		p, x := place(t, policy, l, j)
		if x != nil {
			t.Fatalf("%s: %s", policy, x)
		}
		if hs := p.Hosts(); len(hs) != 1 || c.HostName(hs[0]) != "cpu1" {
			t.Fatalf("%s: on %v", policy, hs)
		}
	}
}

// TestUnrecordRestoresOverlay: taking back tentative tasks one by one, in
// the reverse order of placing them, restores what the overlay showed
// before each (free GPUs, CPU and memory per host; whole, share and MIG
// state per GPU; the GPUs usable whole), for every kind of task.
func TestUnrecordRestoresOverlay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := randomCluster(t)
		l := topology.NewLedger(c)
		randomFill(t, l)
		r, err := NewRequest(c, randomJob(t, c, "u", []TaskKind{TaskWhole, TaskShare, TaskMIG, TaskCPU}))
		if err != nil {
			return // a MIG profile no pinned model has
		}
		e := &engine{}
		var p Placement
		e.bind(l, r, &p)
		for range r.Groups {
			p.Placed = append(p.Placed, 0)
		}
		e.s = scope{lv: c.LevelCluster(), dom: c.Root(), fabric: topology.NoDomain, hosts: c.DomainHostList(c.Root())}
		e.newEpoch()
		view := func() string {
			var b strings.Builder
			for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
				taken, cpu, mem := e.ovHost(h)
				fmt.Fprintf(&b, "h%d:%d/%d/%d/%d/%v ", h, e.freeGPUs(h), taken, cpu, mem, e.wholeAvail(h))
			}
			for g := topology.GPUID(0); int(g) < c.NumGPUs(); g++ {
				f, partly := e.shareFree(g)
				m, ok := e.migSlots(g)
				fmt.Fprintf(&b, "g%d:%v/%d/%v/%d/%v ", g, e.ovGPU(g), f, partly, m, ok)
			}
			return b.String()
		}
		var before []string
		for i, n := 0, rapid.IntRange(1, 12).Draw(t, "tasks"); i < n; i++ {
			gi := rapid.IntRange(0, len(r.Groups)-1).Draw(t, "group")
			h := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "host"))
			v := view()
			if e.tryTask(TaskRef{Group: int32(gi), Index: int32(p.Placed[gi])}, h) {
				before = append(before, v)
			}
		}
		for k := len(before) - 1; k >= 0; k-- {
			e.unrecord()
			if got := view(); got != before[k] {
				t.Fatalf("after taking back task %d:\n got %s\nwant %s", k, got, before[k])
			}
		}
		if p.Len() != 0 {
			t.Fatalf("%d claims left", p.Len())
		}
	})
}

// twoToRs is a cluster of 8 dgx-h100 hosts, 4 to a ToR.
func twoToRs(t testing.TB) *topology.Cluster {
	s, err := topology.Generator{Name: "two-tors", Machine: "dgx-h100", Hosts: 8, HostsPerToR: 4}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDomainsIndependent checks that whether a gang fits in a domain
// depends on that domain alone, with the search budget binding: a gang
// required in one ToR (of two, four dgx-h100 hosts each, with drawn free
// cores and GPUs) fits the cluster exactly when it fits with the hosts of
// some one ToR allowed (AllowHost). A search budget shared by
// the domains broke this (a domain that spent it left none to the next),
// and with it the monotonicity the root Scheduler's failure cache relies
// on.
func TestDomainsIndependent(t *testing.T) {
	defer func(b int) { searchBudget = b }(searchBudget)
	c := twoToRs(t)
	tor := topology.LevelHost + 1
	// The case a shared budget failed: the first ToR spends 21 host
	// checks in vain, the second needs its own to find the fit.
	searchBudget = 21
	l := topology.NewLedger(c)
	for h, cores := range []int64{8, 8, 64, 16, 8, 16, 64, 64} {
		cl := topology.Claim{Host: topology.HostID(h), CPUMilli: l.CPUFree(topology.HostID(h)) - cores*1000}
		if h == 3 || h == 7 {
			first, _ := c.HostGPUs(topology.HostID(h))
			cl.GPUs = []topology.GPUClaim{{GPU: first}}
		}
		if err := l.Allocate(cl); err != nil {
			t.Fatal(err)
		}
	}
	mpi := &workload.Job{ID: "mpi", Topology: []workload.Constraint{req(c.LevelName(tor))}, Groups: []workload.TaskGroup{
		{Name: "small", Count: 1, CPUMilli: 4000},
		{Name: "launcher", Count: 1, CPUMilli: 60000},
		{Name: "worker", Count: 3, GPUs: 4, CPUMilli: 16000},
	}}
	if _, x := place(t, "best-fit", l, mpi); x != nil {
		t.Fatalf("best-fit: %s", x)
	}
	for _, name := range []string{"best-fit", "first-fit", "worst-fit", "topology"} {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				searchBudget = rapid.IntRange(1, 400).Draw(t, "budget")
				l := topology.NewLedger(c)
				for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
					first, _ := c.HostGPUs(h)
					cl := topology.Claim{Host: h, CPUMilli: l.CPUFree(h) - rapid.SampledFrom([]int64{8, 16, 40, 64, 100}).Draw(t, "cores")*1000}
					for k := rapid.IntRange(0, 8).Draw(t, "busy"); k > 0; k-- {
						cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(k-1)})
					}
					if err := l.Allocate(cl); err != nil {
						t.Fatal(err)
					}
				}
				j := &workload.Job{ID: "j", Topology: []workload.Constraint{req(c.LevelName(tor))}}
				for i, n := 0, rapid.IntRange(2, 3).Draw(t, "groups"); i < n; i++ {
					j.Groups = append(j.Groups, workload.TaskGroup{
						Name:     fmt.Sprintf("g%d", i),
						Count:    rapid.IntRange(1, 3).Draw(t, "count"),
						GPUs:     rapid.SampledFrom([]int{0, 1, 2, 4, 8}).Draw(t, "gpus"),
						CPUMilli: rapid.SampledFrom([]int64{4, 8, 16, 30, 60}).Draw(t, "taskCores") * 1000,
					})
				}
				pl := newPolicy(t, name, c)
				var p Placement
				fits := pl.Place(l, mustRequest(t, c, j), &p) == nil
				some := false
				for _, d := range c.DomainsAt(tor) {
					lo, hi := c.DomainHosts(d)
					r := mustRequest(t, c, j)
					r.AllowHost = func(h topology.HostID) bool { return h >= lo && h < hi }
					some = some || pl.Place(l, r, &p) == nil
				}
				if fits != some {
					t.Fatalf("fits the cluster %v, fits one ToR alone %v", fits, some)
				}
			})
		})
	}
}

// TestGroupAllowHost (issue 26, defect 4): a gang of two 8-GPU groups
// whose own host filters share no host (group a on host 0 only, group b
// on host 2 only; three empty DGX hosts) is placed by every policy, each
// task on its group's host, though the whole request allows every host;
// with group b restricted to host 0 as well (no room for both), no
// policy places it.
func TestGroupAllowHost(t *testing.T) {
	l := hostsWithCores(t, "dgx-h100", 100, 100, 100)
	c := l.Cluster()
	job := &workload.Job{ID: "split", Groups: []workload.TaskGroup{{Name: "a", Count: 1, GPUs: 8}, {Name: "b", Count: 1, GPUs: 8}}}
	only := func(want topology.HostID) func(topology.HostID) bool {
		return func(h topology.HostID) bool { return h == want }
	}
	for _, name := range PolicyNames() {
		t.Run(name, func(t *testing.T) {
			r, err := NewRequest(c, job)
			if err != nil {
				t.Fatal(err)
			}
			r.Groups[0].AllowHost, r.Groups[1].AllowHost = only(0), only(2)
			var p Placement
			if x := newPolicy(t, name, c).Place(l, r, &p); x != nil {
				t.Fatalf("not placed: %s", x)
			}
			for i, cl := range p.Claims {
				if want := topology.HostID(2 * p.Tasks[i].Group); cl.Host != want {
					t.Errorf("task %v on host %d, want %d", p.Tasks[i], cl.Host, want)
				}
			}
			r.Groups[1].AllowHost = only(0)
			if x := newPolicy(t, name, c).Place(l, r, &p); x == nil {
				t.Errorf("placed %v with both groups confined to host 0 (room for one)", p.Claims)
			}
		})
	}
}
