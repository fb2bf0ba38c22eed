package gang

import (
	"fmt"

	"github.com/gpusched/gpusched/frag"
	"slices"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// newPolicy returns the named placer, with the workload distribution fgd
// needs.
func newPolicy(t rapid.TB, name string, c *topology.Cluster) Placer {
	t.Helper()
	opts := Options{}
	if name == "fgd" {
		opts.Frag.Distribution = testDistribution(t, c)
	}
	pl, err := New(name, opts)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return pl
}

func mustPreset(t rapid.TB, name string) *topology.Cluster {
	t.Helper()
	c, err := topology.LoadPreset(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustRequest(t rapid.TB, c *topology.Cluster, j *workload.Job) *Request {
	t.Helper()
	r, err := NewRequest(c, j)
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	return r
}

// job is a shorthand for a one-group job.
func job(id string, tasks int, g workload.TaskGroup, cons ...workload.Constraint) *workload.Job {
	g.Count = tasks
	return &workload.Job{ID: id, Groups: []workload.TaskGroup{g}, Topology: cons}
}

func req(level string) workload.Constraint  { return workload.Constraint{Level: level, Required: true} }
func pref(level string) workload.Constraint { return workload.Constraint{Level: level} }

// takeGPUs allocates the named GPUs whole.
func takeGPUs(t rapid.TB, l *topology.Ledger, gpus ...topology.GPUID) {
	t.Helper()
	for _, g := range gpus {
		if err := l.AllocateGPU(g); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot is everything Place must leave as it found it.
type snapshot struct {
	gen  uint64
	gpus []topology.GPUStatus
	cpu  []int64
	mem  []int64
	free []int
}

func snap(l *topology.Ledger) snapshot {
	c := l.Cluster()
	s := snapshot{gen: l.Generation()}
	for g := topology.GPUID(0); int(g) < c.NumGPUs(); g++ {
		s.gpus = append(s.gpus, l.GPU(g))
	}
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		s.cpu = append(s.cpu, l.CPUFree(h))
		s.mem = append(s.mem, l.MemoryFree(h))
	}
	for d := topology.DomainID(0); int(d) < c.NumDomains(); d++ {
		s.free = append(s.free, l.FreeGPUs(d))
	}
	return s
}

func (s snapshot) diff(o snapshot) string {
	switch {
	case s.gen != o.gen:
		return fmt.Sprintf("generation %d → %d", s.gen, o.gen)
	case !slices.Equal(s.gpus, o.gpus):
		return "GPU states differ"
	case !slices.Equal(s.cpu, o.cpu) || !slices.Equal(s.mem, o.mem):
		return "host CPU or memory differ"
	case !slices.Equal(s.free, o.free):
		return "domain counters differ"
	}
	return ""
}

// checkPlacement verifies a placement against its request on the ledger it
// was made for (before Commit): counts, per-task demand, filters, required
// levels.
func checkPlacement(t rapid.TB, l *topology.Ledger, r *Request, p *Placement) {
	t.Helper()
	c := l.Cluster()
	if len(p.Claims) != len(p.Tasks) || len(p.Placed) != len(r.Groups) {
		t.Fatalf("placement shape: %d claims, %d tasks, %d groups", len(p.Claims), len(p.Tasks), len(p.Placed))
	}
	count := make([]int, len(r.Groups))
	seenTask := map[TaskRef]bool{}
	whole := map[topology.GPUID]bool{}
	milli := map[topology.GPUID]int{}
	for i, cl := range p.Claims {
		ref := p.Tasks[i]
		if ref.Group < 0 || int(ref.Group) >= len(r.Groups) || seenTask[ref] {
			t.Fatalf("task %v invalid or repeated", ref)
		}
		seenTask[ref] = true
		count[ref.Group]++
		g := &r.Groups[ref.Group]
		if cl.CPUMilli != g.CPUMilli || cl.MemoryMiB != g.MemoryMiB {
			t.Fatalf("task %v: claim CPU/memory %d/%d, group wants %d/%d", ref, cl.CPUMilli, cl.MemoryMiB, g.CPUMilli, g.MemoryMiB)
		}
		if r.AllowHost != nil && !r.AllowHost(cl.Host) {
			t.Fatalf("task %v on host %s that AllowHost rejects", ref, c.HostName(cl.Host))
		}
		if !g.AllowsHost(cl.Host) {
			t.Fatalf("task %v on host %s that its group's AllowHost rejects", ref, c.HostName(cl.Host))
		}
		if g.Kind != TaskCPU && !g.Accepts(c.HostModel(cl.Host)) {
			t.Fatalf("task %v on host %s of a model the group does not accept", ref, c.HostName(cl.Host))
		}
		for _, gc := range cl.GPUs {
			if c.GPUHost(gc.GPU) != cl.Host {
				t.Fatalf("task %v: GPU %d not on its host", ref, gc.GPU)
			}
			if r.AllowGPU != nil && !r.AllowGPU(gc.GPU) {
				t.Fatalf("task %v: GPU %s that AllowGPU rejects", ref, c.GPUName(gc.GPU))
			}
			if whole[gc.GPU] {
				t.Fatalf("GPU %s given twice", c.GPUName(gc.GPU))
			}
			switch gc.Kind {
			case topology.ClaimWhole:
				if milli[gc.GPU] > 0 {
					t.Fatalf("GPU %s both whole and shared", c.GPUName(gc.GPU))
				}
				whole[gc.GPU] = true
			case topology.ClaimShare:
				milli[gc.GPU] += int(gc.Milli)
				if milli[gc.GPU] > 1000 {
					t.Fatalf("GPU %s shared beyond 1000 milli", c.GPUName(gc.GPU))
				}
			}
		}
		switch g.Kind {
		case TaskWhole:
			if len(cl.GPUs) != g.GPUs {
				t.Fatalf("task %v: %d GPUs, wants %d", ref, len(cl.GPUs), g.GPUs)
			}
		case TaskShare:
			if len(cl.GPUs) != 1 || cl.GPUs[0].Kind != topology.ClaimShare || int(cl.GPUs[0].Milli) != g.Milli {
				t.Fatalf("task %v: share claim %+v", ref, cl.GPUs)
			}
		case TaskMIG:
			if len(cl.GPUs) != 1 || cl.GPUs[0].Kind != topology.ClaimMIG || cl.GPUs[0].Profile != g.mig[c.HostModel(cl.Host)] {
				t.Fatalf("task %v: MIG claim %+v", ref, cl.GPUs)
			}
		case TaskCPU:
			if len(cl.GPUs) != 0 {
				t.Fatalf("task %v: CPU-only task with GPUs", ref)
			}
		}
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		if count[i] != p.Placed[i] || count[i] < g.Min || count[i] > g.Count {
			t.Fatalf("group %d: %d tasks placed (Placed says %d), want %d..%d", i, count[i], p.Placed[i], g.Min, g.Count)
		}
	}
	for _, lv := range r.Required {
		if !holds(c, p, lv) {
			t.Fatalf("required level %s broken", c.LevelName(lv))
		}
	}
	for _, lv := range p.Relaxed {
		if holds(c, p, lv) || !slices.Contains(r.Preferred, lv) {
			t.Fatalf("level %s reported relaxed but holds or was not preferred", c.LevelName(lv))
		}
	}
	if p.Domain != topology.NoDomain {
		for i := range p.Claims {
			if !inDomain(c, p.Claims[i], p.Domain) {
				t.Fatalf("claim %d outside the placement's domain %s", i, c.DomainName(p.Domain))
			}
		}
	}
}

func inDomain(c *topology.Cluster, cl topology.Claim, d topology.DomainID) bool {
	if c.DomainKindOf(d) == topology.KindFabric {
		for _, gc := range cl.GPUs {
			if c.GPUFabric(gc.GPU) != d {
				return false
			}
		}
		return true
	}
	lo, hi := c.DomainHosts(d)
	return cl.Host >= lo && cl.Host < hi
}

// randomCluster draws a small cluster: one to three host templates (two
// accelerator models, one with MIG; NUMA nodes, PCIe switches, in-host
// fabric domains of various shapes; small CPU and memory so they bind),
// one to six host groups (some joined in a multi-host NVLink domain), and
// zero, one or two network levels.
func randomCluster(t *rapid.T) *topology.Cluster {
	_, h100, _ := topology.MachineTemplate("dgx-h100")
	_, l40s, _ := topology.MachineTemplate("pcie-8gpu")
	spec := topology.Spec{Version: topology.SpecVersion, Name: "rand", Accelerators: []topology.AcceleratorSpec{h100, l40s}}
	nT := rapid.IntRange(1, 3).Draw(t, "templates")
	for i := 0; i < nT; i++ {
		n := rapid.SampledFrom([]int{0, 1, 2, 4, 4, 8, 8, 72}).Draw(t, "gpus")
		tp := topology.HostTemplate{
			Name:      fmt.Sprintf("t%d", i),
			CPUMilli:  rapid.SampledFrom([]int64{4000, 16000, 64000}).Draw(t, "cpu"),
			MemoryMiB: rapid.SampledFrom([]int64{16384, 65536, 262144}).Draw(t, "mem"),
			GPUs:      n,
		}
		if n > 0 {
			tp.Accelerator = rapid.SampledFrom([]string{h100.Model, l40s.Model}).Draw(t, "model")
			numa := 1
			if n >= 2 {
				numa = rapid.IntRange(1, 2).Draw(t, "numa")
			}
			per := n / numa
			for k := 0; k < numa; k++ {
				ids := make([]int, 0, per)
				for g := k * per; g < (k+1)*per; g++ {
					ids = append(ids, g)
				}
				var pcie []topology.PCIeSpec
				switch rapid.IntRange(0, 2).Draw(t, "pcie") {
				case 0: // all under one bridge
					pcie = []topology.PCIeSpec{{GPUs: ids}}
				case 1: // one switch per GPU
					for _, g := range ids {
						pcie = append(pcie, topology.PCIeSpec{Switches: []topology.PCIeSpec{{GPUs: []int{g}}}})
					}
				case 2: // pairs behind switches under one bridge switch
					var sw []topology.PCIeSpec
					for j := 0; j < len(ids); j += 2 {
						sw = append(sw, topology.PCIeSpec{GPUs: ids[j:min(j+2, len(ids))]})
					}
					pcie = []topology.PCIeSpec{{Switches: []topology.PCIeSpec{{Switches: sw}}}}
				}
				tp.NUMA = append(tp.NUMA, topology.NUMASpec{ID: k, PCIe: pcie})
			}
			switch rapid.IntRange(0, 2).Draw(t, "fabric") {
			case 1:
				all := make([]int, n)
				for g := range all {
					all[g] = g
				}
				tp.Fabrics = []topology.HostFabricSpec{{Kind: topology.FabricNVSwitch, GPUs: all}}
			case 2:
				if n >= 2 {
					var a, b []int
					for g := 0; g < n; g++ {
						if g < n/2 {
							a = append(a, g)
						} else {
							b = append(b, g)
						}
					}
					tp.Fabrics = []topology.HostFabricSpec{{Kind: topology.FabricHCCS, GPUs: a}, {Kind: topology.FabricHCCS, GPUs: b}}
				}
			}
		}
		spec.Templates = append(spec.Templates, tp)
	}
	nG := rapid.IntRange(1, 6).Draw(t, "hostGroups")
	levels := rapid.IntRange(0, 2).Draw(t, "levels")
	if levels == 2 && nG < 2 {
		levels = 1
	}
	switch levels {
	case 1:
		spec.Levels = []topology.LevelSpec{{Name: "tor"}}
		spec.Switches = []topology.SwitchGroup{{Name: fmt.Sprintf("tor[1-%d]", nG), Level: "tor"}}
	case 2:
		spec.Levels = []topology.LevelSpec{{Name: "spine"}, {Name: "tor"}}
		spec.Switches = []topology.SwitchGroup{
			{Name: "spine[1-2]", Level: "spine"},
			{Name: fmt.Sprintf("tor[1-%d]", nG), Level: "tor", Parent: "spine[1-2]", PerParent: (nG + 1) / 2},
		}
	}
	for i := 0; i < nG; i++ {
		n := rapid.IntRange(1, 4).Draw(t, "hosts")
		hg := topology.HostGroup{Name: fmt.Sprintf("g%d-[1-%d]", i, n), Template: fmt.Sprintf("t%d", rapid.IntRange(0, nT-1).Draw(t, "template"))}
		if n == 1 {
			hg.Name = fmt.Sprintf("g%d-1", i)
		}
		if levels > 0 {
			hg.Parent = fmt.Sprintf("tor%d", i+1)
		}
		spec.Hosts = append(spec.Hosts, hg)
		// Now and then the group's hosts form one multi-host NVLink
		// domain (as a GB200 NVL72 rack does).
		if tp := spec.Templates[hg.Template[1]-'0']; n > 1 && tp.GPUs > 0 && len(tp.Fabrics) == 0 && rapid.IntRange(0, 3).Draw(t, "mnnvl") == 0 {
			spec.Fabrics = append(spec.Fabrics, topology.FabricGroup{Name: fmt.Sprintf("mn%d", i), Kind: topology.FabricMNNVL, Hosts: hg.Name})
		}
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatalf("random spec does not build: %v", err)
	}
	return c
}

// randomFill takes GPUs whole, shares and MIG slices at random, and marks
// a host or GPU unhealthy now and then.
func randomFill(t *rapid.T, l *topology.Ledger) {
	c := l.Cluster()
	if c.NumGPUs() == 0 {
		return
	}
	n := rapid.IntRange(0, c.NumGPUs()).Draw(t, "fill")
	for i := 0; i < n; i++ {
		g := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "gpu"))
		h := c.GPUHost(g)
		switch rapid.IntRange(0, 3).Draw(t, "how") {
		case 0, 1:
			_ = l.Allocate(topology.Claim{Host: h, CPUMilli: 1000, GPUs: []topology.GPUClaim{{GPU: g}}})
		case 2:
			_ = l.Allocate(topology.Claim{Host: h, GPUs: []topology.GPUClaim{{GPU: g, Kind: topology.ClaimShare, Milli: int32(rapid.IntRange(1, 9).Draw(t, "share") * 100)}}})
		case 3:
			_ = l.Allocate(topology.Claim{Host: h, GPUs: []topology.GPUClaim{{GPU: g, Kind: topology.ClaimMIG, Profile: 0, Start: int8(rapid.IntRange(0, 6).Draw(t, "slot"))}}})
		}
	}
	if rapid.IntRange(0, 4).Draw(t, "sick") == 0 {
		_ = l.SetHostHealth(topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "sickHost")), topology.Draining)
	}
	if rapid.IntRange(0, 4).Draw(t, "sickGPU") == 0 {
		_ = l.SetGPUHealth(topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "sickGPUID")), topology.Failed)
	}
}

// randomJob draws a job of one or two groups of whole-GPU, share, MIG or
// CPU-only tasks with random constraints over the cluster's levels.
func randomJob(t *rapid.T, c *topology.Cluster, id string, kinds []TaskKind) *workload.Job {
	j := &workload.Job{ID: id}
	ng := rapid.IntRange(1, 2).Draw(t, "groups")
	for i := 0; i < ng; i++ {
		g := workload.TaskGroup{Name: fmt.Sprintf("g%d", i), Count: rapid.IntRange(1, 5).Draw(t, "count")}
		if rapid.IntRange(0, 3).Draw(t, "elastic") == 0 {
			g.MinCount = rapid.IntRange(1, g.Count).Draw(t, "min")
		}
		switch rapid.SampledFrom(kinds).Draw(t, "kind") {
		case TaskWhole:
			g.GPUs = rapid.SampledFrom([]int{1, 1, 2, 3, 4, 8}).Draw(t, "gpusPerTask")
		case TaskShare:
			g.GPUMilli = rapid.IntRange(1, 9).Draw(t, "milli") * 100
		case TaskMIG:
			g.MIGProfile = rapid.SampledFrom([]string{"1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"}).Draw(t, "profile")
		}
		g.CPUMilli = rapid.SampledFrom([]int64{0, 0, 1000, 4000}).Draw(t, "taskCPU")
		g.MemoryMiB = rapid.SampledFrom([]int64{0, 0, 8192}).Draw(t, "taskMem")
		if g.MIGProfile == "" && rapid.IntRange(0, 3).Draw(t, "pinModel") == 0 && len(c.Models()) > 0 {
			g.Models = []string{c.Models()[rapid.IntRange(0, len(c.Models())-1).Draw(t, "modelIdx")].Model}
		}
		j.Groups = append(j.Groups, g)
	}
	for lv := topology.Level(0); lv <= c.LevelCluster(); lv++ {
		switch rapid.IntRange(0, 5).Draw(t, "constraint") {
		case 0:
			j.Topology = append(j.Topology, workload.Constraint{Level: c.LevelName(lv), Required: true})
		case 1:
			j.Topology = append(j.Topology, workload.Constraint{Level: c.LevelName(lv)})
		}
	}
	return j
}

// testDistribution is a small target workload for fgd: whole GPUs of
// common sizes and half a GPU.
func testDistribution(t rapid.TB, c *topology.Cluster) frag.Distribution {
	t.Helper()
	d := frag.Distribution{Classes: []frag.Class{
		{Task: frag.Task{GPUs: 1, CPUMilli: 1000}, Weight: 4},
		{Task: frag.Task{GPUs: 2}, Weight: 1},
		{Task: frag.Task{GPUs: 8}, Weight: 1},
		{Task: frag.Task{GPUMilli: 500}, Weight: 2},
	}}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	return d
}
