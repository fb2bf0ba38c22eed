package topology

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// Benchmarks of the hot paths at 1k, 10k and 100k GPUs (the presets
// h100-1k, h100-10k and h100-100k: dgx-h100 hosts, 32 to a ToR, 16 ToRs to
// a spine). Fixtures are built outside the timed loop; every benchmark
// checks its result.

var benchSizes = []struct{ name, preset string }{
	{"1k", "h100-1k"},
	{"10k", "h100-10k"},
	{"100k", "h100-100k"},
}

var (
	benchMu       sync.Mutex
	benchClusters = map[string]*Cluster{}
)

// benchCluster builds a preset once per test binary.
func benchCluster(b *testing.B, preset string) *Cluster {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if c, ok := benchClusters[preset]; ok {
		return c
	}
	c := presetCluster(b, preset)
	benchClusters[preset] = c
	return c
}

// halfFull returns a ledger of c with about half the GPUs allocated whole,
// each with probability 1/2 from a fixed seed, so hosts have 0 to 8 free
// GPUs, and the list of the free ones.
func halfFull(b *testing.B, c *Cluster) (*Ledger, []GPUID) {
	b.Helper()
	l := NewLedger(c)
	rng := rand.New(rand.NewPCG(1, 2))
	var free []GPUID
	for g := GPUID(0); int(g) < c.NumGPUs(); g++ {
		if rng.IntN(2) == 0 {
			if err := l.AllocateGPU(g); err != nil {
				b.Fatal(err)
			}
		} else {
			free = append(free, g)
		}
	}
	return l, free
}

// eachSize runs f as one sub-benchmark per size, on a half-full ledger of
// the size's preset (see halfFull), built outside the timer.
func eachSize(b *testing.B, f func(b *testing.B, c *Cluster, l *Ledger, free []GPUID)) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			c := benchCluster(b, sz.preset)
			l, free := halfFull(b, c)
			f(b, c, l, free)
		})
	}
}

// BenchmarkAllocRelease allocates one whole GPU and releases it, all
// counters (GPU, its switches, bridge, NUMA node, host, ToR, spine, root,
// NVSwitch domain) updated both ways. Target at 100k GPUs: ≤ 300 ns/op,
// 0 allocs/op.
func BenchmarkAllocRelease(b *testing.B) {
	eachSize(b, func(b *testing.B, c *Cluster, l *Ledger, free []GPUID) {
		want := l.FreeGPUs(c.Root())
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			g := free[i%len(free)]
			i++
			if err := l.AllocateGPU(g); err != nil {
				b.Fatal(err)
			}
			if err := l.ReleaseGPU(g); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if l.FreeGPUs(c.Root()) != want {
			b.Fatalf("%d free GPUs after the loop, want %d", l.FreeGPUs(c.Root()), want)
		}
	})
}

// BenchmarkAllocReleaseClaim is AllocRelease through a one-claim
// transaction that also takes CPU and memory on the host.
func BenchmarkAllocReleaseClaim(b *testing.B) {
	eachSize(b, func(b *testing.B, c *Cluster, l *Ledger, free []GPUID) {
		want := l.FreeGPUs(c.Root())
		var gpu [1]GPUClaim
		var claim [1]Claim
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			g := free[i%len(free)]
			i++
			gpu[0] = GPUClaim{GPU: g}
			claim[0] = Claim{Host: c.GPUHost(g), CPUMilli: 8000, MemoryMiB: 65536, GPUs: gpu[:]}
			if err := l.Allocate(claim[:]...); err != nil {
				b.Fatal(err)
			}
			if err := l.Release(claim[:]...); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if l.FreeGPUs(c.Root()) != want || l.CPUFree(0) != c.CPUMilli(0) {
			b.Fatal("ledger not back where it started")
		}
	})
}

// BenchmarkAllocReleaseHosts allocates 32 whole hosts (256 GPUs, a ToR's
// worth, each claim with CPU and memory) in one call and releases them:
// the ledger's share of committing and undoing a ToR gang.
func BenchmarkAllocReleaseHosts(b *testing.B) {
	eachSize(b, func(b *testing.B, c *Cluster, _ *Ledger, _ []GPUID) {
		l := NewLedger(c)
		n := min(32, c.NumHosts())
		claims := make([]Claim, n)
		for h := range claims {
			first, ng := c.HostGPUs(HostID(h))
			claims[h] = Claim{Host: HostID(h), CPUMilli: 1000, MemoryMiB: 1024}
			for g := 0; g < ng; g++ {
				claims[h].GPUs = append(claims[h].GPUs, GPUClaim{GPU: first + GPUID(g)})
			}
		}
		want := l.FreeGPUs(c.Root())
		b.ReportAllocs()
		for b.Loop() {
			if err := l.Allocate(claims...); err != nil {
				b.Fatal(err)
			}
			if err := l.Release(claims...); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if l.FreeGPUs(c.Root()) != want {
			b.Fatalf("%d free GPUs after the loop, want %d", l.FreeGPUs(c.Root()), want)
		}
		if err := l.Check(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkBestHostToR asks for the best-fit host with at least 3 free GPUs
// under each ToR in turn. Target at 100k GPUs: ≤ 1 µs/op.
func BenchmarkBestHostToR(b *testing.B) {
	eachSize(b, func(b *testing.B, c *Cluster, l *Ledger, _ []GPUID) {
		tor, _ := c.LevelByName("tor")
		tors := c.DomainsAt(tor)
		const k = 3
		b.ReportAllocs()
		i, found := 0, 0
		for b.Loop() {
			d := tors[i%len(tors)]
			i++
			if h, ok := l.BestHost(d, k, NoModel); ok {
				if l.HostFreeGPUs(h) < k {
					b.Fatalf("host %s has %d free", c.HostName(h), l.HostFreeGPUs(h))
				}
				found++
			}
		}
		b.StopTimer()
		if found == 0 {
			b.Fatal("no host found")
		}
	})
}

// BenchmarkAllocBestHostRelease is one decision of a scheduler loop:
// allocate a GPU, ask for the best host under its ToR (refreshing the index
// entries the allocation changed), release it.
func BenchmarkAllocBestHostRelease(b *testing.B) {
	eachSize(b, func(b *testing.B, c *Cluster, l *Ledger, free []GPUID) {
		tor, _ := c.LevelByName("tor")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			g := free[i%len(free)]
			i++
			if err := l.AllocateGPU(g); err != nil {
				b.Fatal(err)
			}
			if _, ok := l.BestHost(c.GPUAt(g, tor), 1, NoModel); !ok {
				b.Fatal("no host")
			}
			if err := l.ReleaseGPU(g); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBestDomainToR asks for the best-fit ToR with at least k free
// GPUs, k cycling through 1..160 (a ToR has 256 GPUs, about half free).
func BenchmarkBestDomainToR(b *testing.B) {
	eachSize(b, func(b *testing.B, c *Cluster, l *Ledger, _ []GPUID) {
		tor, _ := c.LevelByName("tor")
		b.ReportAllocs()
		i, found := 0, 0
		for b.Loop() {
			k := 1 + i%160
			i++
			if d, ok := l.BestDomain(tor, k); ok {
				if l.FreeGPUs(d) < k {
					b.Fatalf("ToR %s has %d free", c.DomainName(d), l.FreeGPUs(d))
				}
				found++
			}
		}
		b.StopTimer()
		if found == 0 {
			b.Fatal("no ToR found")
		}
	})
}

// BenchmarkLink classifies GPU pairs spread over the cluster.
func BenchmarkLink(b *testing.B) {
	c := benchCluster(b, "h100-100k")
	n := c.NumGPUs()
	b.ReportAllocs()
	i, net := 1, 0 // i = 0 would compare GPU 0 with itself
	for b.Loop() {
		a, z := GPUID(i*7919%n), GPUID(i*104729%n)
		i++
		if c.Link(a, z).Kind == LinkNetwork {
			net++
		}
	}
	b.StopTimer()
	if net == 0 {
		b.Fatal("no network links")
	}
}

// BenchmarkBuild builds the presets from their specs (12,500 hosts at
// 100k).
func BenchmarkBuild(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			s, err := Preset(sz.preset)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var c *Cluster
			for b.Loop() {
				if c, err = Build(s); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if c.NumGPUs() < 1000 {
				b.Fatalf("%d GPUs", c.NumGPUs())
			}
		})
	}
}

// BenchmarkOpenB parses the embedded openb node list and builds it.
func BenchmarkOpenB(b *testing.B) {
	b.ReportAllocs()
	var c *Cluster
	for b.Loop() {
		var err error
		if c, err = LoadPreset("openb"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if c.NumGPUs() != 6212 {
		b.Fatalf("%d GPUs", c.NumGPUs())
	}
}

// BenchmarkClone copies a half-full ledger.
func BenchmarkClone(b *testing.B) {
	eachSize(b, func(b *testing.B, c *Cluster, l *Ledger, _ []GPUID) {
		b.ReportAllocs()
		var cl *Ledger
		for b.Loop() {
			cl = l.Clone()
		}
		b.StopTimer()
		if cl.FreeGPUs(c.Root()) != l.FreeGPUs(c.Root()) {
			b.Fatal("clone differs")
		}
	})
}

// BenchmarkCopyFrom copies a half-full ledger into an existing one.
func BenchmarkCopyFrom(b *testing.B) {
	eachSize(b, func(b *testing.B, c *Cluster, l *Ledger, _ []GPUID) {
		dst := NewLedger(c)
		b.ReportAllocs()
		for b.Loop() {
			dst.CopyFrom(l)
		}
		b.StopTimer()
		if dst.FreeGPUs(c.Root()) != l.FreeGPUs(c.Root()) || dst.Generation() != l.Generation() {
			b.Fatal("copy differs")
		}
	})
}

// BenchmarkCheck recomputes every counter and index from scratch.
func BenchmarkCheck(b *testing.B) {
	eachSize(b, func(b *testing.B, c *Cluster, l *Ledger, _ []GPUID) {
		b.ReportAllocs()
		for b.Loop() {
			if err := l.Check(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
