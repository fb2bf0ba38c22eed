package gang

import (
	"slices"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// TestPartBandKeepsTheOrder: for a gang of no whole GPU that needs GPU
// capacity (shares, MIG, with or without CPU-only groups), the host walk
// with the band of partly used hosts (domOrder.partBand) yields exactly
// the hosts the plain index walk yields and placeAt keeps (those with the
// gang's milli-GPU free), in the same order, on random clusters and
// ledgers.
func TestPartBandKeepsTheOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := randomCluster(t)
		l := topology.NewLedger(c)
		randomFill(t, l)
		j := randomJob(t, c, "j", []TaskKind{TaskShare, TaskMIG, TaskCPU})
		r, err := NewRequest(c, j)
		if err != nil {
			t.Skip(err)
		}
		pl, err := New("topology", Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := pl.(*policy)
		var out Placement
		p.e.bind(l, r, &out)
		p.dom.kind = ordBest
		for _, min := range []bool{false, true} {
			d := r.demand(min)
			if d.GPUs != 0 || d.Milli == 0 {
				continue
			}
			g0 := &r.Groups[r.order[0]]
			walk := func(milli int64) []topology.DomainID {
				var got []topology.DomainID
				p.dom.begin(&p.e, topology.LevelHost, 0, milli, g0)
				for {
					dom, ok := p.dom.next()
					if !ok {
						return got
					}
					if l.FreeMilli(dom) >= d.Milli {
						got = append(got, dom)
					}
				}
			}
			plain, band := walk(0), walk(d.Milli)
			if !slices.Equal(plain, band) {
				t.Fatalf("demand %+v: index walk %v, with the band %v", d, names(c, plain), names(c, band))
			}
		}
	})
}

func names(c *topology.Cluster, ds []topology.DomainID) []string {
	var out []string
	for _, d := range ds {
		out = append(out, c.DomainName(d))
	}
	return out
}
