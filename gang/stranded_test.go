package gang

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// naiveStranded is Stranded's documented rule written the plain way: for
// every level, every free GPU and every request, look at the GPU's host
// and at the domain around it (at the level, or at the request's own
// required level when that is tighter), and count the domain's hosts from
// scratch. No deduplication, stamps or snapshots.
func naiveStranded(l *topology.Ledger, pending []*Request) []LevelFragmentation {
	c := l.Cluster()
	out := make([]LevelFragmentation, c.NumLevels())
	for lv := range out {
		f := LevelFragmentation{Level: topology.Level(lv), Name: c.LevelName(topology.Level(lv))}
		for x := topology.GPUID(0); int(x) < c.NumGPUs(); x++ {
			if !l.GPUIsFree(x) {
				continue
			}
			f.Free++
			if !naiveUsable(l, pending, topology.Level(lv), x) {
				f.Stranded++
			}
		}
		out[lv] = f
	}
	return out
}

// naiveUsable reports whether some pending request could use the free GPU
// x at level lv, by the rule of Stranded.
func naiveUsable(l *topology.Ledger, pending []*Request, lv topology.Level, x topology.GPUID) bool {
	c := l.Cluster()
	// fits reports whether h could take one task of some GPU group of r.
	fits := func(r *Request, h topology.HostID) bool {
		for i := range r.Groups {
			if g := &r.Groups[i]; g.Kind != TaskCPU && plainReason(l, r, h, g) == reasonNone {
				return true
			}
		}
		return false
	}
	// in returns the GPUs of h that lie in domain d at level lv.
	in := func(h topology.HostID, d topology.DomainID, lv topology.Level) []topology.GPUID {
		var out []topology.GPUID
		first, n := c.HostGPUs(h)
		for x := first; x < first+topology.GPUID(n); x++ {
			if lv == topology.LevelFabric && c.GPUFabric(x) == d || lv != topology.LevelFabric && c.HostAt(h, lv) == d {
				out = append(out, x)
			}
		}
		return out
	}
	holds := func(r *Request, d topology.DomainID, lv topology.Level) bool {
		need := r.MinDemand()
		free, milli := 0, int64(0)
		slots := make([]int, len(r.Groups))
		for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
			gs := in(h, d, lv)
			if len(gs) == 0 || !fits(r, h) {
				continue
			}
			hfree := 0
			for _, x := range gs {
				if l.GPUIsFree(x) {
					hfree++
				}
				milli += int64(l.GPUFreeMilli(x))
			}
			free += hfree
			for i := range r.Groups {
				g := &r.Groups[i]
				if g.Kind != TaskWhole {
					continue
				}
				if why := plainReason(l, r, h, g); why != reasonNone && why != ReasonGPU {
					continue
				}
				n := hfree / g.GPUs
				if g.CPUMilli > 0 {
					n = min(n, int(l.CPUFree(h)/g.CPUMilli))
				}
				if g.MemoryMiB > 0 {
					n = min(n, int(l.MemoryFree(h)/g.MemoryMiB))
				}
				slots[i] += n
			}
		}
		if free < need.GPUs || milli < need.Milli {
			return false
		}
		for i := range r.Groups {
			if g := &r.Groups[i]; g.Kind == TaskWhole && slots[i] < g.Min {
				return false
			}
		}
		return true
	}
	h := c.GPUHost(x)
	for _, r := range pending {
		at := min(lv, r.Within())
		d := c.GPUFabric(x)
		if at != topology.LevelFabric {
			d = c.HostAt(h, at)
		}
		if d != topology.NoDomain && fits(r, h) && holds(r, d, at) {
			return true
		}
	}
	return false
}

// TestStrandedMatchesNaive compares Stranded with the plain rule on random
// clusters, fills and sets of pending requests (whole GPUs, shares,
// CPU-only tasks, CPU and memory, model pins, required levels, host
// filters).
func TestStrandedMatchesNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := randomCluster(t)
		l := topology.NewLedger(c)
		randomFill(t, l)
		var pending []*Request
		for i, n := 0, rapid.IntRange(1, 4).Draw(t, "requests"); i < n; i++ {
			r, err := NewRequest(c, randomJob(t, c, fmt.Sprint("p", i), []TaskKind{TaskWhole, TaskWhole, TaskShare, TaskCPU}))
			if err != nil {
				t.Fatal(err)
			}
			if rapid.IntRange(0, 4).Draw(t, "filter") == 0 {
				banned := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "banned"))
				r.AllowHost = func(h topology.HostID) bool { return h != banned }
			}
			pending = append(pending, r)
			if rapid.IntRange(0, 3).Draw(t, "twin") == 0 {
				pending = append(pending, r) // duplicates change nothing
			}
		}
		before := snap(l)
		got, want := Stranded(l, pending), naiveStranded(l, pending)
		if d := before.diff(snap(l)); d != "" {
			t.Fatalf("Stranded changed the ledger: %s", d)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Stranded %+v\nnaive    %+v", got, want)
		}
	})
}

// TestStrandedNeverCountsUsedGPUs: whatever a request actually places when
// it must fit in one domain of a level, the free GPUs it takes are usable
// at that level by Stranded's rule, and Stranded leaves at least that many
// free GPUs usable (it is a lower bound on stranded capacity).
func TestStrandedNeverCountsUsedGPUs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := randomCluster(t)
		l := topology.NewLedger(c)
		randomFill(t, l)
		j := randomJob(t, c, "r", []TaskKind{TaskWhole, TaskWhole, TaskShare, TaskCPU})
		j.Topology = nil
		base := mustRequest(t, c, j)
		frag := Stranded(l, []*Request{base})
		policy := rapid.SampledFrom([]string{"best-fit", "topology", "first-fit"}).Draw(t, "policy")
		for lv := topology.Level(0); int(lv) < c.NumLevels(); lv++ {
			jl := *j
			jl.Topology = []workload.Constraint{{Level: c.LevelName(lv), Required: true}}
			r := mustRequest(t, c, &jl)
			var p Placement
			if x := newPolicy(t, policy, c).Place(l, r, &p); x != nil {
				continue
			}
			used := map[topology.GPUID]bool{}
			for _, cl := range p.Claims {
				for _, gc := range cl.GPUs {
					if l.GPUIsFree(gc.GPU) {
						used[gc.GPU] = true
						if !naiveUsable(l, []*Request{base}, lv, gc.GPU) {
							t.Fatalf("level %s: placed on GPU %s, which the rule strands", c.LevelName(lv), c.GPUName(gc.GPU))
						}
					}
				}
			}
			if f := frag[lv]; f.Free-f.Stranded < len(used) {
				t.Fatalf("level %s: %d free GPUs usable, but a placement uses %d", f.Name, f.Free-f.Stranded, len(used))
			}
		}
	})
}
