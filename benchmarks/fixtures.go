package benchmarks

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// Fixtures are built once per process and shared by every case that needs
// them (a case that changes a shared fixture puts it back before it
// returns). Building them is never timed.

var (
	fixMu    sync.Mutex
	fixCache = map[string]*fixture{}
)

// fixture is one cached fixture, built once.
type fixture struct {
	once sync.Once
	v    any
	err  error
}

// cached returns the fixture named key, building it with build the first
// time (build may use other fixtures). A build error is remembered and
// reported on every later call.
func cached[T any](b testing.TB, key string, build func() (T, error)) T {
	b.Helper()
	fixMu.Lock()
	f := fixCache[key]
	if f == nil {
		f = &fixture{}
		fixCache[key] = f
	}
	fixMu.Unlock()
	f.once.Do(func() { f.v, f.err = build() })
	if f.err != nil {
		fatalf(b, "fixture %s: %v", key, f.err)
	}
	v, ok := f.v.(T)
	if !ok {
		fatalf(b, "fixture %s failed to build", key)
	}
	return v
}

// DropFixtures forgets every cached fixture, so that the memory they hold
// can be collected (the memory-measuring simulator case calls it first).
func DropFixtures() {
	fixMu.Lock()
	defer fixMu.Unlock()
	clear(fixCache)
}

// preset returns the built preset cluster.
func preset(b testing.TB, name string) *topology.Cluster {
	return cached(b, "preset/"+name, func() (*topology.Cluster, error) { return topology.LoadPreset(name) })
}

// Tor64 is the honest variant of the issues' "512-GPU gang in one ToR at
// 100k GPUs": the 12,500 dgx-h100 hosts of h100-100k with 64 hosts
// (512 GPUs) per ToR instead of 32 (256 GPUs, which no 512-GPU gang fits
// in), 8 ToRs per spine: 196 ToRs, the last one holding 20 hosts.
var Tor64 = topology.Generator{Name: "h100-100k-tor64", Machine: "dgx-h100", Hosts: 12500, HostsPerToR: 64, ToRsPerSpine: 8}

// tor64 returns the built Tor64 cluster.
func tor64(b testing.TB) *topology.Cluster {
	return cached(b, "tor64", func() (*topology.Cluster, error) {
		s, err := Tor64.Spec()
		if err != nil {
			return nil, err
		}
		return topology.Build(s)
	})
}

// fragmented returns the placement fixture of a cluster: a ledger half full
// and fragmented. Each host is, at random (PCG seed 1, 2), busy (40%: all
// its GPUs taken), idle (40%) or partly used (20%: each GPU taken with
// probability ½), so free GPUs are scattered both across ToRs and inside
// hosts — the fixture the placement issue describes, built the same way as
// package gang's own benchmarks. With idleEvery > 0, one ToR in idleEvery
// is left wholly idle (the "emptier ToRs" that whole-ToR gangs need; the
// middle ToR on clusters with fewer ToRs).
func fragmented(b testing.TB, key string, c *topology.Cluster, idleEvery int) *topology.Ledger {
	return cached(b, "fragmented/"+key, func() (*topology.Ledger, error) {
		tor, hasToR := c.LevelByName("tor")
		rng := rand.New(rand.NewPCG(1, 2))
		l := topology.NewLedger(c)
		idle := map[topology.DomainID]bool{}
		if hasToR && idleEvery > 0 {
			tors := c.DomainsAt(tor)
			for i, d := range tors {
				if i%idleEvery == idleEvery/2 || len(tors) <= idleEvery/2 && i == len(tors)/2 {
					idle[d] = true
				}
			}
		}
		for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
			first, n := c.HostGPUs(h)
			x := rng.IntN(10)
			if hasToR && idle[c.HostAt(h, tor)] {
				continue
			}
			for g := first; g < first+topology.GPUID(n); g++ {
				if x < 4 || x >= 8 && rng.IntN(2) == 0 {
					if err := l.AllocateGPU(g); err != nil {
						return nil, err
					}
				}
			}
		}
		return l, nil
	})
}

// spareGPU returns a free GPU of l (for cases that bump the ledger's
// generation by allocating and releasing it).
func spareGPU(b testing.TB, l *topology.Ledger) topology.GPUID {
	c := l.Cluster()
	for g := topology.GPUID(0); int(g) < c.NumGPUs(); g++ {
		if l.GPUIsFree(g) {
			return g
		}
	}
	fatal(b, "no free GPU")
	return -1
}
