package gang

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// recount is an explanation's host counts and verdict recounted the plain
// way, from the documented rules, host by host and group by group on the
// ledger itself: no census, no engine, no overlay.
type recount struct {
	excluded        [NumReasons]int
	usable, allowed int
	verdict         Verdict
	limit           Reason
	group           int
	room            int
	scanned         bool // host counts are meaningful (not a gang too large by domain sizes)
}

// plainReason is why host h cannot take one task of g, or reasonNone.
func plainReason(l *topology.Ledger, r *Request, h topology.HostID, g *Group) Reason {
	c := l.Cluster()
	if g.Kind != TaskCPU && (c.HostModel(h) == topology.NoModel || !g.Accepts(c.HostModel(h))) {
		return ReasonModel
	}
	if l.HostHealth(h) != topology.Healthy {
		return ReasonHealth
	}
	if r.AllowHost != nil && !r.AllowHost(h) {
		return ReasonQuota
	}
	if l.CPUFree(h) < g.CPUMilli {
		return ReasonCPU
	}
	if l.MemoryFree(h) < g.MemoryMiB {
		return ReasonMemory
	}
	first, n := c.HostGPUs(h)
	ok := func(x topology.GPUID) bool { return r.AllowGPU == nil || r.AllowGPU(x) }
	switch g.Kind {
	case TaskWhole:
		free := 0
		for x := first; x < first+topology.GPUID(n); x++ {
			if l.GPUIsFree(x) && ok(x) {
				free++
			}
		}
		if free < g.GPUs {
			return ReasonGPU
		}
	case TaskShare:
		for x := first; x < first+topology.GPUID(n); x++ {
			st := l.GPU(x)
			if st.Health == topology.Healthy && (st.Mode == topology.ModeFree || st.Mode == topology.ModeShared) && ok(x) && 1000-st.UsedMilli >= g.Milli {
				return reasonNone
			}
		}
		return ReasonGPU
	}
	return reasonNone
}

func plainRecount(l *topology.Ledger, r *Request) recount {
	c := l.Cluster()
	d := r.MinDemand()
	rc := recount{limit: ReasonGPU, group: -1, room: -1}
	largest := 0
	for _, dm := range c.DomainsAt(r.Within()) {
		largest = max(largest, len(c.DomainGPUs(dm)))
	}
	if d.GPUs > 0 && largest > 0 && d.GPUs > largest || d.GPUs > c.NumGPUs() {
		rc.verdict = VerdictTooLarge
		return rc
	}
	rc.scanned = true
	// A task larger than every host it may run on: GPUs, then CPU, then
	// memory; the first group in the request's order.
	tooLarge := false
	for _, lim := range []Reason{ReasonGPU, ReasonCPU, ReasonMemory} {
		for i := range r.Groups {
			g := &r.Groups[i]
			var hosts int
			var gpus int
			var cpu, mem int64
			for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
				if m := c.HostModel(h); g.Kind != TaskCPU && (m == topology.NoModel || !g.Accepts(m)) {
					continue
				}
				info := c.Host(h)
				hosts++
				gpus, cpu, mem = max(gpus, info.NumGPUs), max(cpu, info.CPUMilli), max(mem, info.MemoryMiB)
			}
			if hosts == 0 || tooLarge {
				continue
			}
			switch {
			case lim == ReasonGPU && g.Kind == TaskWhole && g.GPUs > gpus,
				lim == ReasonCPU && g.CPUMilli > cpu,
				lim == ReasonMemory && g.MemoryMiB > mem:
				rc.limit, rc.group, tooLarge = lim, i, true
			}
		}
	}
	fits := make([]bool, len(r.Groups))
	short := make([][NumReasons]int, len(r.Groups))
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		worst, fit := reasonNone, false
		usable, allowed := false, false
		for i := range r.Groups {
			g := &r.Groups[i]
			why := plainReason(l, r, h, g)
			if g.Kind != TaskCPU && why != ReasonModel && why != ReasonHealth {
				usable = true
				allowed = allowed || why != ReasonQuota
			}
			if why == reasonNone {
				fit, fits[i] = true, true
				continue
			}
			if why > ReasonQuota {
				short[i][why]++
			}
			if worst == reasonNone || why > worst {
				worst = why
			}
		}
		if d.Milli > 0 && usable {
			rc.usable += l.HostFreeGPUs(h)
			if allowed {
				rc.allowed += l.HostFreeGPUs(h)
			}
		}
		if !fit {
			rc.excluded[worst]++
		}
	}
	if d.Milli == 0 {
		rc.usable, rc.allowed = l.FreeGPUs(c.Root()), l.FreeGPUs(c.Root())
	}
	switch {
	case tooLarge:
		rc.verdict = VerdictTooLarge
	case d.GPUs > 0 && rc.usable < d.GPUs, d.GPUs == 0 && l.FreeMilli(c.Root()) < d.Milli:
		rc.verdict = VerdictCapacity
	case d.GPUs > 0 && rc.allowed < d.GPUs:
		rc.verdict = VerdictQuota
	default:
		rc.verdict = VerdictFragmentation
	short:
		for _, lim := range []Reason{ReasonCPU, ReasonMemory} {
			for i := range r.Groups {
				g, s := &r.Groups[i], short[i]
				if g.Min == 0 || fits[i] || s[ReasonGPU] > 0 || s[ReasonCPU]+s[ReasonMemory] == 0 {
					continue
				}
				// CPU when every host the group may use lacks the cores;
				// else memory when every one lacks the memory; else CPU.
				allCPU, allMem := true, true
				for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
					if why := plainReason(l, r, h, g); why > ReasonQuota {
						allCPU = allCPU && l.CPUFree(h) < g.CPUMilli
						allMem = allMem && l.MemoryFree(h) < g.MemoryMiB
					}
				}
				gl := ReasonCPU
				if !allCPU && allMem {
					gl = ReasonMemory
				}
				if gl == lim {
					rc.verdict, rc.group, rc.limit = VerdictCapacity, i, lim
					break short
				}
			}
		}
		if rc.verdict == VerdictFragmentation {
			plainRoom(l, r, &rc)
		}
	}
	return rc
}

// plainRoom counts, host by host, how many tasks the free CPU and memory
// of the hosts the request may use hold: per group (with Min > 0 and a CPU
// or memory demand), then for the gang at its smallest per-task demand
// over the hosts some such group may use; the first count short of what
// is needed makes the verdict capacity (cpu, or memory when only the
// memory count is short), groups short of CPU before groups short of
// memory, then the gang.
func plainRoom(l *topology.Ledger, r *Request, rc *recount) {
	c := l.Cluster()
	count := func(h topology.HostID, cpu, mem int64) (kc, km int) {
		kc, km = 1<<20, 1<<20
		if cpu > 0 {
			kc = int(l.CPUFree(h) / cpu)
		}
		if mem > 0 {
			km = int(l.MemoryFree(h) / mem)
		}
		return kc, km
	}
	mayUse := func(h topology.HostID, g *Group) bool {
		why := plainReason(l, r, h, g)
		return why != ReasonModel && why != ReasonHealth && why != ReasonQuota
	}
	type short struct {
		group int
		limit Reason
		room  int
	}
	var found []short
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Min == 0 || g.CPUMilli == 0 && g.MemoryMiB == 0 {
			continue
		}
		hosts, sc, sm, sb := 0, 0, 0, 0
		for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
			if !mayUse(h, g) {
				continue
			}
			kc, km := count(h, g.CPUMilli, g.MemoryMiB)
			hosts, sc, sm, sb = hosts+1, sc+kc, sm+km, sb+min(kc, km)
		}
		if hosts > 0 && sb < g.Min {
			lim := ReasonCPU
			if sc >= g.Min && sm < g.Min {
				lim = ReasonMemory
			}
			found = append(found, short{i, lim, sb})
		}
	}
	for _, lim := range []Reason{ReasonCPU, ReasonMemory} {
		for _, f := range found {
			if f.limit == lim {
				rc.verdict, rc.group, rc.limit, rc.room = VerdictCapacity, f.group, lim, f.room
				return
			}
		}
	}
	var minCPU, minMem int64 = 1 << 62, 1 << 62
	total := 0
	for i := range r.Groups {
		if g := &r.Groups[i]; g.Min > 0 {
			minCPU, minMem, total = min(minCPU, g.CPUMilli), min(minMem, g.MemoryMiB), total+g.Min
		}
	}
	if total == 0 || minCPU == 0 && minMem == 0 {
		return
	}
	hosts, sc, sm, sb := 0, 0, 0, 0
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		use := false
		for i := range r.Groups {
			if g := &r.Groups[i]; g.Min > 0 && mayUse(h, g) {
				use = true
			}
		}
		if !use {
			continue
		}
		kc, km := count(h, minCPU, minMem)
		hosts, sc, sm, sb = hosts+1, sc+kc, sm+km, sb+min(kc, km)
	}
	if hosts > 0 && sb < total {
		rc.verdict, rc.limit, rc.room = VerdictCapacity, ReasonCPU, sb
		if sc >= total && sm < total {
			rc.limit = ReasonMemory
		}
	}
}

// checkRecount compares an explanation with the plain recount.
func checkRecount(t rapid.TB, l *topology.Ledger, r *Request, x *Explanation) {
	t.Helper()
	rc := plainRecount(l, r)
	if x.Verdict != rc.verdict || x.Limit != rc.limit || x.Group != rc.group || x.Room != rc.room {
		t.Fatalf("verdict %v/%v/group %d/room %d, recount %v/%v/group %d/room %d: %s", x.Verdict, x.Limit, x.Group, x.Room, rc.verdict, rc.limit, rc.group, rc.room, x)
	}
	if !rc.scanned {
		return
	}
	if x.Excluded != rc.excluded || x.Usable != rc.usable || x.Allowed != rc.allowed {
		t.Fatalf("excluded %v usable %d allowed %d; recount %v usable %d allowed %d: %s", x.Excluded, x.Usable, x.Allowed, rc.excluded, rc.usable, rc.allowed, x)
	}
}

// explainJob draws a job of 1–3 groups (whole GPUs, shares, CPU-only),
// now and then large ones, with CPU and memory that now and then exceed
// what hosts have free or in all, and a required level now and then.
func explainJob(t *rapid.T, c *topology.Cluster) *workload.Job {
	j := &workload.Job{ID: "x"}
	for i, n := 0, rapid.IntRange(1, 3).Draw(t, "groups"); i < n; i++ {
		g := workload.TaskGroup{Name: fmt.Sprintf("g%d", i), Count: rapid.IntRange(1, 4).Draw(t, "count")}
		if rapid.IntRange(0, 5).Draw(t, "big") == 0 {
			g.Count = rapid.IntRange(40, 130).Draw(t, "bigCount")
		}
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0, 1:
			g.GPUs = rapid.SampledFrom([]int{1, 2, 4, 8, 8, 8, 8, 8, 9}).Draw(t, "gpus")
		case 2:
			g.GPUMilli = rapid.IntRange(1, 9).Draw(t, "milli") * 100
		}
		g.CPUMilli = rapid.SampledFrom([]int64{0, 0, 0, 8000, 100000, 100000, 200000, 1 << 30}).Draw(t, "cpu")
		g.MemoryMiB = rapid.SampledFrom([]int64{0, 0, 0, 65536, 1 << 20, 1 << 20, 1 << 40}).Draw(t, "mem")
		if g.Count > 1 && rapid.IntRange(0, 3).Draw(t, "elastic") == 0 {
			g.MinCount = rapid.IntRange(1, g.Count-1).Draw(t, "min")
		}
		j.Groups = append(j.Groups, g)
	}
	if lv := rapid.IntRange(-1, int(c.LevelCluster())).Draw(t, "level"); lv >= 0 {
		j.Topology = []workload.Constraint{{Level: c.LevelName(topology.Level(lv)), Required: true}}
	}
	return j
}

// explainFill loads the hosts: a share of them busy, each taking at least
// a drawn floor of its CPU and memory, and its GPUs whole or shared with a
// drawn probability; it drains a host now and then.
func explainFill(t *rapid.T, l *topology.Ledger) {
	c := l.Cluster()
	busy := rapid.IntRange(0, 10).Draw(t, "busy")
	cpuMin := rapid.IntRange(0, 8).Draw(t, "cpuMin")
	memMin := rapid.IntRange(0, 4).Draw(t, "memMin")
	load := rapid.IntRange(0, 8).Draw(t, "gpuLoad")
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		if rapid.IntRange(0, 9).Draw(t, "hostBusy") >= busy {
			continue
		}
		info := c.Host(h)
		cl := topology.Claim{Host: h}
		cl.CPUMilli = int64(rapid.IntRange(cpuMin, 8).Draw(t, "cpuEighths")) * info.CPUMilli / 8
		cl.MemoryMiB = int64(rapid.IntRange(memMin, 4).Draw(t, "memQuarters")) * info.MemoryMiB / 4
		for k := 0; k < info.NumGPUs; k++ {
			g := info.FirstGPU + topology.GPUID(k)
			switch x := rapid.IntRange(0, 8).Draw(t, "gpuUse"); {
			case x < load:
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: g})
			case x == 8:
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: g, Kind: topology.ClaimShare, Milli: 600})
			}
		}
		if err := l.Allocate(cl); err != nil {
			t.Fatal(err)
		}
	}
	if rapid.IntRange(0, 3).Draw(t, "drain") == 0 {
		_ = l.SetHostHealth(topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "drained")), topology.Draining)
	}
}

// TestExplanationRecount checks explanations on the 125-host h100-1k
// preset (and the one-host dgx-h100) against the plain recount, and that
// they do not depend on the order of the job's groups: the same verdict,
// host counts and usable GPUs for every permutation.
func TestExplanationRecount(t *testing.T) {
	for _, preset := range []string{"h100-1k", "dgx-h100"} {
		c := mustPreset(t, preset)
		t.Run(preset, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				l := topology.NewLedger(c)
				explainFill(t, l)
				j := explainJob(t, c)
				policy := rapid.SampledFrom([]string{"topology", "best-fit", "first-fit"}).Draw(t, "policy")
				pl := newPolicy(t, policy, c)
				r := mustRequest(t, c, j)
				if rapid.IntRange(0, 4).Draw(t, "filter") == 0 {
					cut := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "cut"))
					r.AllowHost = func(h topology.HostID) bool { return h >= cut }
				}
				var p Placement
				x := pl.Place(l, r, &p)
				if x == nil {
					return
				}
				checkExplanation(t, l, r, x, &p)
				checkRecount(t, l, r, x)
				// Every permutation of the groups that does not fit either
				// (a different order may find a fit) explains the same.
				for k := 0; k < 3 && len(j.Groups) > 1; k++ {
					jp := *j
					jp.Groups = rapid.Permutation(j.Groups).Draw(t, "perm")
					rp := mustRequest(t, c, &jp)
					rp.AllowHost = r.AllowHost
					y := pl.Place(l, rp, &p)
					if y == nil {
						continue
					}
					if y.Verdict != x.Verdict || y.Limit != x.Limit || y.Excluded != x.Excluded || y.Usable != x.Usable || y.Allowed != x.Allowed {
						t.Fatalf("group order changes the explanation:\n%s\n%s", x, y)
					}
				}
			})
		})
	}
}

// TestExplanationOrderIndependent is the review's case: on h100-1k with 4
// GPUs taken on every host, a launcher (CPU only) and two 4-GPU workers
// required in one host. Whatever the order of the groups, the verdict is
// fragmentation (500 free GPUs, all usable; no host has 8), not capacity.
func TestExplanationOrderIndependent(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	l := topology.NewLedger(c)
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		first, _ := c.HostGPUs(h)
		takeGPUs(t, l, first, first+1, first+2, first+3)
	}
	la := workload.TaskGroup{Name: "launcher", Count: 1, CPUMilli: 1000}
	wk := workload.TaskGroup{Name: "worker", Count: 2, GPUs: 4}
	for _, groups := range [][]workload.TaskGroup{{la, wk}, {wk, la}} {
		for _, policy := range PolicyNames() {
			_, x := place(t, policy, l, &workload.Job{ID: "j", Groups: groups, Topology: []workload.Constraint{req("host")}})
			if x == nil {
				t.Fatalf("%s: placed 8 GPUs in one host with 4 free per host", policy)
			}
			if x.Verdict != VerdictFragmentation || x.Usable != 500 || x.FreeGPUs != 500 {
				t.Fatalf("%s, %s first: %s", policy, groups[0].Name, x)
			}
		}
	}
}

// TestTaskTooLarge: a task larger than every host (9 GPUs on 8-GPU hosts,
// more cores or memory than any host has) is too large, on a multi-host
// cluster too, whatever the gang's total; a task that fits a host but
// finds none with the free cores is capacity (cpu), not fragmentation.
func TestTaskTooLarge(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	l := topology.NewLedger(c)
	cores := c.Host(0).CPUMilli
	for _, tc := range []struct {
		g     workload.TaskGroup
		limit Reason
		text  string
	}{
		{workload.TaskGroup{GPUs: 9}, ReasonGPU, "a task needs 9 GPUs, the largest host has 8 GPUs"},
		{workload.TaskGroup{GPUs: 1, CPUMilli: 999999999}, ReasonCPU, "a task needs 999999.999 cores, the largest host has"},
		{workload.TaskGroup{GPUs: 1, MemoryMiB: 99999999999}, ReasonMemory, "a task needs 99999999999 MiB memory"},
		{workload.TaskGroup{CPUMilli: cores + 1}, ReasonCPU, "a task needs"},
	} {
		for _, policy := range PolicyNames() {
			_, x := place(t, policy, l, job("big", 1, tc.g))
			if x == nil || x.Verdict != VerdictTooLarge || x.Limit != tc.limit || x.Group != 0 {
				t.Fatalf("%s %+v: %v", policy, tc.g, x)
			}
			if s := x.String(); !strings.Contains(s, tc.text) || !strings.HasSuffix(s, ": too large; hosts excluded by "+tc.limit.String()+" 125") {
				t.Fatalf("%s: %s", policy, s)
			}
		}
	}
	// Leave every host 10 cores: a 16-core task is capacity (cpu).
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		if err := l.Allocate(topology.Claim{Host: h, CPUMilli: cores - 10000}); err != nil {
			t.Fatal(err)
		}
	}
	for _, policy := range PolicyNames() {
		_, x := place(t, policy, l, &workload.Job{ID: "mpi", Groups: []workload.TaskGroup{
			{Name: "worker", Count: 2, GPUs: 8, CPUMilli: 1000},
			{Name: "launcher", Count: 1, CPUMilli: 16000},
		}})
		if x == nil || x.Verdict != VerdictCapacity || x.Limit != ReasonCPU || x.Group != 1 || x.TaskNeeds != 16000 || x.HostHas != 10000 {
			t.Fatalf("%s: %v", policy, x)
		}
		if s := x.String(); !strings.Contains(s, "no host has 16 cores free for a task (most: 10 cores)") || !strings.Contains(s, ": capacity") {
			t.Fatalf("%s: %s", policy, s)
		}
	}
}

// TestExplanationRoom is the review's case: on two idle dgx-h100 hosts
// with 62 free cores each, gangs of three 60-core tasks (whole GPUs,
// elastic, shares, MIG, CPU-only, launchers beside an 8-GPU worker) are
// short of cores in the cluster as a whole, though every host has the
// cores for one task: capacity (cpu), not fragmentation, whatever the
// free GPUs.
func TestExplanationRoom(t *testing.T) {
	l := hostsWithCores(t, "dgx-h100", 62, 62)
	for _, tc := range []struct {
		j    *workload.Job
		text string
	}{
		{&workload.Job{ID: "gpus", Groups: []workload.TaskGroup{{Name: "w", Count: 4, GPUs: 1, CPUMilli: 60000}}},
			"free cores hold 2 of the 4 tasks of group 0, 60 cores each (most free on a host: 62 cores)"},
		{&workload.Job{ID: "launchers", Groups: []workload.TaskGroup{{Name: "l", Count: 3, CPUMilli: 60000}, {Name: "w", Count: 1, GPUs: 8, CPUMilli: 1000}}},
			"free cores hold 2 of the 3 tasks of group 0"},
		{&workload.Job{ID: "elastic", Groups: []workload.TaskGroup{{Name: "w", Count: 8, MinCount: 3, GPUs: 1, CPUMilli: 60000}}},
			"free cores hold 2 of the 3 tasks of group 0"},
		{&workload.Job{ID: "share", Groups: []workload.TaskGroup{{Name: "w", Count: 3, GPUMilli: 500, CPUMilli: 60000}}},
			"free cores hold 2 of the 3 tasks"},
		{&workload.Job{ID: "mig", Groups: []workload.TaskGroup{{Name: "w", Count: 3, MIGProfile: "1g.10gb", CPUMilli: 60000}}},
			"free cores hold 2 of the 3 tasks"},
		{&workload.Job{ID: "cpu", Groups: []workload.TaskGroup{{Name: "w", Count: 3, CPUMilli: 60000}}},
			"free cores hold 2 of the 3 tasks"},
		// Each group alone fits (two 40-core and two 35-core tasks), the
		// gang does not: four tasks of at least 35 cores, two per host.
		{&workload.Job{ID: "joint", Groups: []workload.TaskGroup{{Name: "a", Count: 2, GPUs: 1, CPUMilli: 40000}, {Name: "b", Count: 2, CPUMilli: 35000}}},
			"free cores hold 2 of the 4 tasks, at least 35 cores each (most free on a host: 62 cores)"},
	} {
		for _, policy := range PolicyNames() {
			_, x := place(t, policy, l, tc.j)
			if x == nil {
				t.Fatalf("%s %s: placed", policy, tc.j.ID)
			}
			if x.Verdict != VerdictCapacity || x.Limit != ReasonCPU || x.Room != 2 {
				t.Fatalf("%s: %s", policy, x)
			}
			if s := x.String(); !strings.Contains(s, tc.text) || !strings.HasSuffix(s, ": capacity") {
				t.Fatalf("%s: %s", policy, s)
			}
		}
	}
	// Memory: 3 tasks of 1.5 TiB on hosts with 2 TiB each.
	mem := l.Cluster().Host(0).MemoryMiB
	_, x := place(t, "best-fit", l, &workload.Job{ID: "mem", Groups: []workload.TaskGroup{{Name: "w", Count: 3, GPUs: 1, MemoryMiB: mem * 3 / 4}}})
	if x == nil || x.Verdict != VerdictCapacity || x.Limit != ReasonMemory || x.Room != 2 || x.RoomNeeds != 3 {
		t.Fatalf("memory: %v", x)
	}
}

// TestElasticExplanationCountsOnePass: an elastic gang that fits at
// neither Count nor Min is explained by its Min pass alone: the domains
// tried and the best candidate's tasks are those of the same gang asked
// at Min, not the two passes added up or mixed.
func TestElasticExplanationCountsOnePass(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	l := topology.NewLedger(c)
	// 27 idle hosts in every ToR of 32 (the last has fewer): no host
	// takes two of the gang's tasks, 28 are needed.
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		if h%32 < 5 {
			first, n := c.HostGPUs(h)
			for g := first; g < first+topology.GPUID(n); g++ {
				takeGPUs(t, l, g)
			}
		}
	}
	tor := []workload.Constraint{req("tor")}
	at := func(count, min int) *workload.Job {
		return &workload.Job{ID: "x", Topology: tor, Groups: []workload.TaskGroup{
			{Name: "a", Count: count, MinCount: min, GPUs: 8, CPUMilli: 10000},
			{Name: "b", Count: 16, GPUs: 1, CPUMilli: 150000},
		}}
	}
	for _, policy := range []string{"best-fit", "first-fit", "topology"} {
		_, x := place(t, policy, l, at(14, 12))
		_, y := place(t, policy, l, at(12, 0))
		if x == nil || y == nil {
			t.Fatalf("%s: placed", policy)
		}
		if x.Tried != y.Tried || x.Best != y.Best || x.Tasks != 28 {
			t.Fatalf("%s: elastic %+v\nat Min %+v", policy, x, y)
		}
		if x.Tried > x.Domains || x.Best.Tasks > x.Tasks {
			t.Fatalf("%s: %s", policy, x)
		}
	}
}
