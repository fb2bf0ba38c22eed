package benchmarks

import (
	"fmt"
	"testing"

	"github.com/gpusched/gpusched/topology"
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
	}}
}

// liveLedger returns a private copy of the half-full h100-100k ledger.
func liveLedger(b *testing.B) *topology.Ledger {
	c := preset(b, "h100-100k")
	return fragmented(b, "h100-100k/4", c, 4).Clone()
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
	if c.NumHosts() != 12500+i || l.HostFreeGPUs(topology.HostID(c.NumHosts()-1)) != 8 {
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
