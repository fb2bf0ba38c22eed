package gang

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// nvl72Cluster builds racks GB200 NVL72 racks (18 trays of 4 GPUs each,
// one NVLink domain per rack), with perToR trays to a ToR (0: no ToRs).
func nvl72Cluster(t rapid.TB, racks, perToR int) *topology.Cluster {
	t.Helper()
	sp, err := topology.Generator{Name: "nvl72", Machine: "gb200-nvl72", Hosts: 18 * racks, HostsPerToR: perToR}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rackOf names the rack of p's first task (18 trays to a rack).
func rackOf(_ *topology.Cluster, p *Placement) string {
	return fmt.Sprintf("nvl72-%d", p.Claims[0].Host/18+1)
}

func placeWith(t *testing.T, name string, opts Options, l *topology.Ledger, j *workload.Job) (*Placement, *Explanation) {
	t.Helper()
	pl, err := New(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := mustRequest(t, l.Cluster(), j)
	p := &Placement{}
	x := pl.Place(l, r, p)
	if x == nil {
		checkPlacement(t, l, r, p)
	}
	return p, x
}

// TestProtectedNVL72: two GB200 NVL72 racks (no ToRs); rack 1 (trays
// 0–17) is wholly free, rack 2 has one GPU in use on tray 18. Small jobs
// stay out of rack 1 with protection (the topology policy's default) and
// go there without it; a 16-GPU gang (8 × 16 > 72) is not small.
func TestProtectedNVL72(t *testing.T) {
	c := nvl72Cluster(t, 2, 0)
	first18, _ := c.HostGPUs(18)
	cases := []struct {
		name      string
		job       *workload.Job
		protected string // rack (and host) with default protection
		host      topology.HostID
		off       string // rack with ProtectOff
	}{
		// CPU-only: before, first fit by host ID (tray 0, rack 1); now the
		// host with the fewest free GPUs (tray 18: 3 free) in rack 2.
		{"cpu-only", job("cpu", 1, workload.TaskGroup{CPUMilli: 8000, MemoryMiB: 1024}), "nvl72-2", 18, "nvl72-1"},
		// 1 GPU: best fit is tray 18 (3 free) with or without protection.
		{"1gpu", job("g1", 1, workload.TaskGroup{GPUs: 1}), "nvl72-2", 18, "nvl72-2"},
		// 4 GPUs (one tray): rack 2 is the best-fit NVLink domain either way.
		{"4gpu", job("g4", 1, workload.TaskGroup{GPUs: 4}), "nvl72-2", 19, "nvl72-2"},
		// 4 × 1 GPU spread anywhere: at most 3 fit on tray 18, then
		// best fit among 4-free trays is tray 0 without protection.
		{"4x1gpu", job("g4x1", 4, workload.TaskGroup{GPUs: 1}), "nvl72-2", 18, "nvl72-2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := topology.NewLedger(c)
			takeGPUs(t, l, first18)
			p, x := placeWith(t, "topology", Options{}, l, tc.job)
			if x != nil {
				t.Fatalf("not placed: %v", x)
			}
			if got := rackOf(c, p); got != tc.protected || p.Claims[0].Host != tc.host {
				t.Fatalf("protected: placed on %s host %d, want %s host %d", got, p.Claims[0].Host, tc.protected, tc.host)
			}
			for _, cl := range p.Claims {
				if got := fmt.Sprintf("nvl72-%d", cl.Host/18+1); got != tc.protected {
					t.Fatalf("a task landed in %s", got)
				}
			}
			p, x = placeWith(t, "topology", Options{Protect: ProtectOff}, l, tc.job)
			if x != nil {
				t.Fatalf("not placed without protection: %v", x)
			}
			if got := rackOf(c, p); tc.name != "4x1gpu" && got != tc.off {
				t.Fatalf("unprotected: placed in %s, want %s", got, tc.off)
			}
		})
	}
}

// TestProtectedCPUOnlyKeptOutOfFreeRack is the scenario (marin
// #8249): a CPU-only job on a cluster of NVL72 racks, one rack in use.
// With protection it lands on a tray whose GPUs are in use and leaves both
// idle racks whole for the 72-GPU gangs that need them; without, it
// lands on tray 0 and a rack-sized gang then has one rack fewer.
func TestProtectedCPUOnlyKeptOutOfFreeRack(t *testing.T) {
	c := nvl72Cluster(t, 3, 0)
	l := topology.NewLedger(c)
	// Rack 2 (trays 18–35) runs a 64-GPU job: 16 trays full.
	for h := topology.HostID(18); h < 34; h++ {
		first, n := c.HostGPUs(h)
		for k := 0; k < n; k++ {
			takeGPUs(t, l, first+topology.GPUID(k))
		}
	}
	// Whole-rack CPU: the CPU-only job asks for most of a tray's cores,
	// so a tray it lands on cannot also host a gang task that needs CPU.
	cpuJob := job("etl", 1, workload.TaskGroup{CPUMilli: 100000, MemoryMiB: 1024})
	rack := workload.TaskGroup{GPUs: 4, CPUMilli: 64000}
	for _, tc := range []struct {
		opts      Options
		wantRack  string
		rackGangs int
	}{
		{Options{}, "nvl72-2", 2},
		{Options{Protect: ProtectOff}, "nvl72-1", 1},
	} {
		l := l.Clone()
		p, x := placeWith(t, "topology", tc.opts, l, cpuJob)
		if x != nil {
			t.Fatal(x)
		}
		if got := rackOf(c, p); got != tc.wantRack {
			t.Fatalf("%+v: CPU-only job on %s in %s, want rack %s", tc.opts, c.HostName(p.Claims[0].Host), got, tc.wantRack)
		}
		if err := l.Allocate(p.Claims...); err != nil {
			t.Fatal(err)
		}
		// Now count how many 18 × 4-GPU gangs (a whole rack each) place.
		n := 0
		for i := 0; i < 3; i++ {
			p, x := placeWith(t, "topology", Options{}, l, job(fmt.Sprint("rack", i), 18, rack, req("nvlink")))
			if x != nil {
				break
			}
			if err := l.Allocate(p.Claims...); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != tc.rackGangs {
			t.Fatalf("%+v: %d whole-rack gangs placed after the CPU-only job, want %d", tc.opts, n, tc.rackGangs)
		}
	}
}

// TestProtectedFallsBack: when only wholly free domains have room, a
// small job still places there (protection is a preference).
func TestProtectedFallsBack(t *testing.T) {
	c := nvl72Cluster(t, 2, 0)
	l := topology.NewLedger(c)
	for h := topology.HostID(18); h < 36; h++ {
		first, n := c.HostGPUs(h)
		for k := 0; k < n; k++ {
			takeGPUs(t, l, first+topology.GPUID(k))
		}
	}
	for _, j := range []*workload.Job{
		job("g1", 1, workload.TaskGroup{GPUs: 1}),
		job("g2x2", 2, workload.TaskGroup{GPUs: 2}),
	} {
		p, x := placeWith(t, "topology", Options{}, l, j)
		if x != nil {
			t.Fatalf("%s: %v", j.ID, x)
		}
		if got := rackOf(c, p); got != "nvl72-1" {
			t.Fatalf("%s: placed in %s", j.ID, got)
		}
	}
}

// TestProtectedToR: h100-1k (32 hosts to a ToR, 4 ToRs); ToR 1 wholly
// free, a GPU in use in each other ToR on a host that otherwise is free.
// A 1-GPU job goes to a host with 7 free either way; an 8-GPU job (a
// whole host) would go to host 0 by best fit (ties to the lowest ID) and
// goes to the first wholly free host outside ToR 1 with protection.
func TestProtectedToR(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	l := topology.NewLedger(c)
	for _, h := range []topology.HostID{40, 70, 100} {
		first, _ := c.HostGPUs(h)
		takeGPUs(t, l, first)
	}
	p, x := placeWith(t, "topology", Options{}, l, job("g8", 1, workload.TaskGroup{GPUs: 8}))
	if x != nil {
		t.Fatal(x)
	}
	if h := p.Claims[0].Host; h != 32 {
		t.Fatalf("protected: 8-GPU job on host %d, want 32 (first wholly free host of ToR 2)", h)
	}
	p, x = placeWith(t, "topology", Options{Protect: ProtectOff}, l, job("g8", 1, workload.TaskGroup{GPUs: 8}))
	if x != nil {
		t.Fatal(x)
	}
	if h := p.Claims[0].Host; h != 0 {
		t.Fatalf("unprotected: 8-GPU job on host %d, want 0", h)
	}
	// A 64-GPU job (8 × 8) anywhere: not small (8 × 64 > 256), but best
	// fit at the ToR tier keeps it out of ToR 1 anyway (ToR 4, 231 free,
	// is the best fit).
	p, x = placeWith(t, "topology", Options{}, l, job("g64", 8, workload.TaskGroup{GPUs: 8}))
	if x != nil {
		t.Fatal(x)
	}
	for _, cl := range p.Claims {
		if cl.Host < 32 {
			t.Fatalf("64-GPU job put a task on host %d in the wholly free ToR 1", cl.Host)
		}
	}
	// A ratio of 64 makes the 8-GPU job too big to protect against
	// (64 × 8 > 256): plain best fit, host 0. (Default 8: 8 × 8 ≤ 256.)
	p, x = placeWith(t, "topology", Options{ProtectRatio: 64}, l, job("g8", 1, workload.TaskGroup{GPUs: 8}))
	if x != nil {
		t.Fatal(x)
	}
	if h := p.Claims[0].Host; h != 0 {
		t.Fatalf("ratio 64: 8-GPU job on host %d, want 0", h)
	}
}

func TestProtectOptionsValidated(t *testing.T) {
	if _, err := New("topology", Options{Protect: 9}); err == nil {
		t.Fatal("unknown protection accepted")
	}
	if _, err := New("topology", Options{ProtectRatio: -1}); err == nil {
		t.Fatal("negative ratio accepted")
	}
}

// TestPropertyPassShielded: a best- or worst-fit walk that passes over a
// protected domain's domains at once (passShielded) places and explains
// exactly as the walk that steps through them one by one, on random
// clusters some of whose ToRs are wholly free (failed GPUs, cordons and
// host filters included).
func TestPropertyPassShielded(t *testing.T) {
	defer func(v bool) { passShieldedOff = v }(passShieldedOff)
	rapid.Check(t, func(t *rapid.T) {
		c := randomCluster(t)
		l := topology.NewLedger(c)
		if c.NumGPUs() == 0 {
			return
		}
		for _, tor := range c.DomainsAt(topology.LevelHost + 1) {
			if rapid.Bool().Draw(t, "busyToR") {
				for _, h := range c.DomainHostList(tor) {
					first, n := c.HostGPUs(h)
					for k := 0; k < n; k++ {
						if rapid.IntRange(0, 2).Draw(t, "take") == 0 {
							_ = l.AllocateGPU(first + topology.GPUID(k))
						}
					}
				}
			}
		}
		if rapid.IntRange(0, 3).Draw(t, "sickGPU") == 0 {
			_ = l.SetGPUHealth(topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "sickGPUID")), topology.Failed)
		}
		if rapid.IntRange(0, 3).Draw(t, "cordon") == 0 {
			_ = l.SetHostCordoned(topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "cordonHost")), true)
		}
		name := rapid.SampledFrom([]string{"topology", "best-fit", "worst-fit"}).Draw(t, "policy")
		opts := Options{Protect: ProtectOn, ProtectRatio: rapid.SampledFrom([]int{1, 2, 8}).Draw(t, "ratio")}
		for i := 0; i < 4; i++ {
			j := randomJob(t, c, fmt.Sprintf("j%d", i), []TaskKind{TaskWhole, TaskWhole, TaskShare, TaskCPU})
			r := mustRequest(t, c, j)
			if rapid.IntRange(0, 3).Draw(t, "filter") == 0 {
				skip := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "filtered"))
				r.AllowHost = func(h topology.HostID) bool { return h != skip }
			}
			var got [2]*Placement
			var why [2]*Explanation
			for k, off := range []bool{true, false} {
				passShieldedOff = off
				pl, err := New(name, opts)
				if err != nil {
					t.Fatal(err)
				}
				got[k] = &Placement{}
				why[k] = pl.Place(l, r, got[k])
			}
			if !reflect.DeepEqual(got[0], got[1]) || !reflect.DeepEqual(why[0], why[1]) {
				t.Fatalf("%s %+v, job %+v:\nstepping: %+v %+v\npassing:  %+v %+v", name, opts, j, got[0], why[0], got[1], why[1])
			}
		}
	})
}
