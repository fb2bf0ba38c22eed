package benchmarks

import (
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// topologyCases: building clusters and loading cluster files (issue 2).
func topologyCases() []Case {
	cs := []Case{{
		Name: "Topology/load-file/100k",
		Doc:  "parse and build a templated YAML cluster file of 12,500 dgx-h100 hosts (h100-100k written with host ranges)",
		Size: "100k", BenchTime: "5x",
		Figures: []Figure{fig("s/op", 1, 2)},
		F:       benchLoadFile,
	}}
	for _, sz := range sizes {
		cs = append(cs, Case{
			Name: "Topology/build/" + sz.name,
			Doc:  "build the " + sz.preset + " preset from its spec",
			Size: sz.name, BenchTime: "5x",
			F: func(b *testing.B) { benchBuild(b, sz.preset) },
		})
	}
	return cs
}

func benchLoadFile(b *testing.B) {
	data := cached(b, "file/h100-100k.yaml", func() ([]byte, error) {
		s, err := topology.Preset("h100-100k")
		if err != nil {
			return nil, err
		}
		return topology.Marshal(s, topology.FormatYAML)
	})
	b.ReportAllocs()
	for b.Loop() {
		c, err := topology.Load(data, "h100-100k.yaml", topology.FormatYAML)
		if err != nil {
			fatal(b, err)
		}
		if c.NumHosts() != 12500 || c.NumGPUs() != 100000 {
			fatalf(b, "%d hosts, %d GPUs", c.NumHosts(), c.NumGPUs())
		}
	}
	b.ReportMetric(float64(len(data)), "file-bytes")
}

func benchBuild(b *testing.B, name string) {
	s, err := topology.Preset(name)
	if err != nil {
		fatal(b, err)
	}
	b.ReportAllocs()
	var c *topology.Cluster
	for b.Loop() {
		if c, err = topology.Build(s); err != nil {
			fatal(b, err)
		}
	}
	if c == nil || c.NumGPUs() < 1000 {
		fatalf(b, "built %v", c)
	}
}

// ledgerCases: the occupancy ledger's hot paths (issue 2).
func ledgerCases() []Case {
	var cs []Case
	for _, sz := range sizes {
		var allocFig, hostFig []Figure
		if sz.name == "100k" {
			allocFig = []Figure{fig("ns/op", 300, 2), fig("allocs/op", 0, 2)}
			hostFig = []Figure{fig("ns/op", 1000, 2)}
		}
		cs = append(cs,
			Case{
				Name: "Ledger/alloc-release/" + sz.name,
				Doc:  "allocate one whole GPU and release it, every counter and index entry updated both ways (" + sz.preset + ", half full)",
				Size: sz.name, BenchTime: "1s", Figures: allocFig,
				F: func(b *testing.B) { benchAllocRelease(b, sz.preset) },
			},
			Case{
				Name: "Ledger/best-host-tor/" + sz.name,
				Doc:  "best-fit host with at least 3 free GPUs under a ToR, ToRs in turn (" + sz.preset + ", fragmented)",
				Size: sz.name, BenchTime: "1s", Figures: hostFig,
				F: func(b *testing.B) { benchBestHost(b, sz.preset) },
			},
			Case{
				Name: "Ledger/best-domain-tor/" + sz.name,
				Doc:  "best-fit ToR with at least k free GPUs, k = 1..160 (" + sz.preset + ", fragmented)",
				Size: sz.name, BenchTime: "1s",
				F: func(b *testing.B) { benchBestDomain(b, sz.preset) },
			},
			Case{
				Name: "Ledger/clone/" + sz.name,
				Doc:  "copy a fragmented ledger into another (CopyFrom, as what-if planning does)",
				Size: sz.name, BenchTime: "1s",
				F: func(b *testing.B) { benchCopyFrom(b, sz.preset) },
			},
		)
	}
	return cs
}

// freeGPUs lists the free GPUs of l.
func freeGPUs(l *topology.Ledger) []topology.GPUID {
	var free []topology.GPUID
	for g := topology.GPUID(0); int(g) < l.Cluster().NumGPUs(); g++ {
		if l.GPUIsFree(g) {
			free = append(free, g)
		}
	}
	return free
}

func benchAllocRelease(b *testing.B, name string) {
	c := preset(b, name)
	l := fragmented(b, name, c, 0)
	free := cached(b, "free/"+name, func() ([]topology.GPUID, error) { return freeGPUs(l), nil })
	want := l.FreeGPUs(c.Root())
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		g := free[i%len(free)]
		i++
		if err := l.AllocateGPU(g); err != nil {
			fatal(b, err)
		}
		if err := l.ReleaseGPU(g); err != nil {
			fatal(b, err)
		}
	}
	if got := l.FreeGPUs(c.Root()); got != want {
		fatalf(b, "%d free GPUs after the loop, want %d", got, want)
	}
}

func benchBestHost(b *testing.B, name string) {
	c := preset(b, name)
	l := fragmented(b, name, c, 0)
	tor, _ := c.LevelByName("tor")
	tors := c.DomainsAt(tor)
	const k = 3
	b.ReportAllocs()
	i, found := 0, 0
	for b.Loop() {
		d := tors[i%len(tors)]
		i++
		if h, ok := l.BestHost(d, k, topology.NoModel); ok {
			if l.HostFreeGPUs(h) < k {
				fatalf(b, "host %s has %d free", c.HostName(h), l.HostFreeGPUs(h))
			}
			found++
		}
	}
	if found == 0 {
		fatal(b, "no host found")
	}
}

func benchBestDomain(b *testing.B, name string) {
	c := preset(b, name)
	l := fragmented(b, name, c, 0)
	tor, _ := c.LevelByName("tor")
	b.ReportAllocs()
	i, found := 0, 0
	for b.Loop() {
		k := 1 + i%160
		i++
		if d, ok := l.BestDomain(tor, k); ok {
			if l.FreeGPUs(d) < k {
				fatalf(b, "ToR %s has %d free", c.DomainName(d), l.FreeGPUs(d))
			}
			found++
		}
	}
	if found == 0 {
		fatal(b, "no ToR found")
	}
}

func benchCopyFrom(b *testing.B, name string) {
	c := preset(b, name)
	l := fragmented(b, name, c, 0)
	dst := topology.NewLedger(c)
	b.ReportAllocs()
	for b.Loop() {
		dst.CopyFrom(l)
	}
	if dst.FreeGPUs(c.Root()) != l.FreeGPUs(c.Root()) || dst.Generation() != l.Generation() {
		fatal(b, "copy differs")
	}
}
