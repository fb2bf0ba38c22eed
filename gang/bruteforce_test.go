package gang

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// The brute-force oracle decides whether a gang fits at all: it tries
// every assignment of tasks to hosts inside every domain at the gang's
// required level and checks each host's capacity (usable free whole GPUs,
// free CPU and memory, model, health). It knows nothing of orders,
// indexes or overlays. On tiny clusters (2–4 hosts, 2–3 task groups,
// at most 6 tasks) every policy must place a gang exactly when the oracle
// finds an assignment.
//
// Exempt: buddy, which gives each task a wholly free buddy cell (a
// 2-GPU task on a DGX H100 takes a free NUMA node of 4), a stricter rule
// than capacity; for it the test checks only that what it places fits.
// Share and MIG tasks (where a host's capacity is not one number) and a
// required NVLink level are not generated.

// tinyCluster draws 2–4 hosts, each of its own template: 0 or 8 GPUs of
// one of two models, 16–64 cores, 64–256 GiB; and no network level, or
// ToRs of two hosts.
func tinyCluster(t *rapid.T) *topology.Cluster {
	h100T, h100, _ := topology.MachineTemplate("dgx-h100")
	pcieT, pcie, _ := topology.MachineTemplate("pcie-8gpu")
	spec := topology.Spec{Version: topology.SpecVersion, Name: "tiny", Accelerators: []topology.AcceleratorSpec{h100, pcie}}
	n := rapid.IntRange(2, 4).Draw(t, "hosts")
	tors := rapid.Bool().Draw(t, "tors")
	if tors {
		spec.Levels = []topology.LevelSpec{{Name: "tor"}}
		spec.Switches = []topology.SwitchGroup{{Name: fmt.Sprintf("tor[1-%d]", (n+1)/2), Level: "tor"}}
	}
	for i := 0; i < n; i++ {
		var tp topology.HostTemplate
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			tp = topology.HostTemplate{}
		case 1:
			tp = pcieT
		default:
			tp = h100T
		}
		tp.Name = fmt.Sprintf("t%d", i)
		tp.CPUMilli = rapid.SampledFrom([]int64{16000, 32000, 64000}).Draw(t, "cpu")
		tp.MemoryMiB = rapid.SampledFrom([]int64{65536, 262144}).Draw(t, "mem")
		spec.Templates = append(spec.Templates, tp)
		hg := topology.HostGroup{Name: fmt.Sprintf("h%d", i), Template: tp.Name}
		if tors {
			hg.Parent = fmt.Sprintf("tor%d", i/2+1)
		}
		spec.Hosts = append(spec.Hosts, hg)
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatalf("tiny spec: %v", err)
	}
	return c
}

// tinyFill takes random GPUs whole and random CPU and memory, and drains
// a host now and then.
func tinyFill(t *rapid.T, l *topology.Ledger) {
	c := l.Cluster()
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		cl := topology.Claim{Host: h}
		cl.CPUMilli = int64(rapid.IntRange(0, 4).Draw(t, "takeCPU")) * c.Host(h).CPUMilli / 8
		cl.MemoryMiB = int64(rapid.IntRange(0, 2).Draw(t, "takeMem")) * c.Host(h).MemoryMiB / 4
		first, n := c.HostGPUs(h)
		take := rapid.IntRange(0, n).Draw(t, "takeGPUs")
		for k := 0; k < take; k++ {
			g := first + topology.GPUID(rapid.IntRange(0, n-1).Draw(t, "gpu"))
			dup := false
			for _, x := range cl.GPUs {
				dup = dup || x.GPU == g
			}
			if !dup {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: g})
			}
		}
		if err := l.Allocate(cl); err != nil {
			t.Fatal(err)
		}
	}
	if rapid.IntRange(0, 5).Draw(t, "drain") == 0 {
		_ = l.SetHostHealth(topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "drained")), topology.Draining)
	}
}

// tinyJob draws 2–3 groups of whole-GPU or CPU-only tasks, at most 6
// tasks in all, with CPU, memory, a model pin now and then, an elastic
// minimum now and then, and a required level (host, tor, cluster or none).
func tinyJob(t *rapid.T, c *topology.Cluster) *workload.Job {
	j := &workload.Job{ID: "tiny"}
	left := 6
	ng := rapid.IntRange(2, 3).Draw(t, "groups")
	for i := 0; i < ng && left > 0; i++ {
		g := workload.TaskGroup{Name: fmt.Sprintf("g%d", i), Count: rapid.IntRange(1, min(3, left)).Draw(t, "count")}
		left -= g.Count
		if rapid.IntRange(0, 2).Draw(t, "cpuOnly") > 0 {
			g.GPUs = rapid.SampledFrom([]int{1, 2, 3, 4, 8}).Draw(t, "gpus")
		}
		g.CPUMilli = rapid.SampledFrom([]int64{0, 2000, 8000, 16000, 30000, 60000}).Draw(t, "taskCPU")
		g.MemoryMiB = rapid.SampledFrom([]int64{0, 16384, 65536, 131072}).Draw(t, "taskMem")
		if g.GPUs > 0 && rapid.IntRange(0, 3).Draw(t, "pin") == 0 {
			g.Models = []string{c.Models()[rapid.IntRange(0, len(c.Models())-1).Draw(t, "model")].Model}
		}
		if g.Count > 1 && rapid.IntRange(0, 3).Draw(t, "elastic") == 0 {
			g.MinCount = rapid.IntRange(1, g.Count-1).Draw(t, "min")
		}
		j.Groups = append(j.Groups, g)
	}
	var levels []string
	for lv := topology.LevelHost; lv <= c.LevelCluster(); lv++ {
		levels = append(levels, c.LevelName(lv))
	}
	if k := rapid.IntRange(-1, len(levels)-1).Draw(t, "require"); k >= 0 {
		j.Topology = []workload.Constraint{{Level: levels[k], Required: true}}
	}
	return j
}

// drawGroupFilters gives now and then each group of r a filter of its own
// (Group.AllowHost) allowing a random set of hosts, on a copy of r's
// groups.
func drawGroupFilters(t *rapid.T, r *Request) {
	if rapid.IntRange(0, 2).Draw(t, "groupFilters") != 0 {
		return
	}
	r.Groups = slices.Clone(r.Groups)
	n := r.Cluster().NumHosts()
	for i := range r.Groups {
		if rapid.Bool().Draw(t, "groupFiltered") {
			mask := rapid.Uint64Range(0, 1<<min(n, 63)-1).Draw(t, "groupHosts")
			r.Groups[i].AllowHost = func(h topology.HostID) bool { return mask>>uint(h)&1 == 1 }
		}
	}
}

// bruteFeasible reports whether the Min tasks of every group of r can be
// assigned to the hosts of one domain at r's required level (the cluster
// when none), host capacities permitting.
func bruteFeasible(l *topology.Ledger, r *Request) bool {
	c := l.Cluster()
	var tasks []*Group
	for i := range r.Groups {
		for n := 0; n < r.Groups[i].Min; n++ {
			tasks = append(tasks, &r.Groups[i])
		}
	}
	type room struct {
		gpus     int
		cpu, mem int64
	}
	for _, d := range c.DomainsAt(r.Within()) {
		lo, hi := c.DomainHosts(d)
		rooms := map[topology.HostID]*room{}
		for h := lo; h < hi; h++ {
			first, n := c.HostGPUs(h)
			free := 0
			for g := first; g < first+topology.GPUID(n); g++ {
				if l.GPUIsFree(g) {
					free++
				}
			}
			rooms[h] = &room{free, l.CPUFree(h), l.MemoryFree(h)}
		}
		var assign func(k int) bool
		assign = func(k int) bool {
			if k == len(tasks) {
				return true
			}
			g := tasks[k]
			for h := lo; h < hi; h++ {
				if l.HostHealth(h) != topology.Healthy || g.Kind == TaskWhole && !g.Accepts(c.HostModel(h)) {
					continue
				}
				if r.AllowHost != nil && !r.AllowHost(h) || !g.AllowsHost(h) {
					continue
				}
				rm := rooms[h]
				if rm.gpus < g.GPUs || rm.cpu < g.CPUMilli || rm.mem < g.MemoryMiB {
					continue
				}
				rm.gpus -= g.GPUs
				rm.cpu -= g.CPUMilli
				rm.mem -= g.MemoryMiB
				ok := assign(k + 1)
				rm.gpus += g.GPUs
				rm.cpu += g.CPUMilli
				rm.mem += g.MemoryMiB
				if ok {
					return true
				}
			}
			return false
		}
		if assign(0) {
			return true
		}
	}
	return false
}

func TestEveryPolicyPlacesWhatBruteForceFits(t *testing.T) {
	for _, name := range PolicyNames() {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				c := tinyCluster(t)
				l := topology.NewLedger(c)
				tinyFill(t, l)
				r := mustRequest(t, c, tinyJob(t, c))
				if rapid.IntRange(0, 4).Draw(t, "filter") == 0 {
					banned := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "banned"))
					r.AllowHost = func(h topology.HostID) bool { return h != banned }
				}
				drawGroupFilters(t, r)
				r.Seed = rapid.Uint64().Draw(t, "seed")
				var p Placement
				x := newPolicy(t, name, c).Place(l, r, &p)
				fits := bruteFeasible(l, r)
				if x == nil {
					checkPlacement(t, l, r, &p)
					if !fits {
						t.Fatalf("placed a gang the brute force finds no room for")
					}
					return
				}
				checkExplanation(t, l, r, x, &p)
				if fits && name != "buddy" {
					t.Fatalf("a task → host assignment exists, but: %s", x)
				}
			})
		})
	}
}
