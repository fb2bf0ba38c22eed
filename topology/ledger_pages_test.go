package topology

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// slice returns a copy of the entries, for comparisons in tests.
func (a *pages[I, T]) slice() []T {
	out := make([]T, a.n)
	for i := range out {
		out[i] = a.at(I(i))
	}
	return out
}

// cowSet is a family of ledgers made from one another by Clone and
// CopyFrom, so that they share state pages, each with the naive model
// (full copies, nothing shared) of what it must hold.
type cowSet struct {
	c     *Cluster
	l     []*Ledger
	n     []*naiveLedger
	claim [][]Claim // per ledger: claims granted and not released
}

// TestCopyOnWriteAgainstFullCopies drives several ledgers that share
// pages through random allocations, releases, health changes, clones and
// copies, on generated clusters of up to a few thousand GPUs (tens of
// pages per array), and checks after every step that each holds exactly
// what its naive model — a full copy — holds: a change to one ledger never
// shows through another, and none is lost.
func TestCopyOnWriteAgainstFullCopies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		machine := rapid.SampledFrom([]string{"dgx-h100", "dgx-a100", "gb200-nvl72", "pcie-8gpu"}).Draw(t, "machine")
		hosts := rapid.IntRange(1, 300).Draw(t, "hosts")
		if machine == "gb200-nvl72" {
			hosts = 18 * rapid.IntRange(1, 16).Draw(t, "racks") // trays come in racks of 18
		}
		spec, err := Generator{Name: "cow", Machine: machine, Hosts: hosts, HostsPerToR: rapid.IntRange(0, 40).Draw(t, "hosts per tor")}.Spec()
		if err != nil {
			t.Fatal(err)
		}
		c, err := Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		s := &cowSet{c: c, l: []*Ledger{NewLedger(c)}, n: []*naiveLedger{newNaiveLedger(c)}, claim: [][]Claim{nil}}
		for step := range rapid.IntRange(1, 60).Draw(t, "steps") {
			i := rapid.IntRange(0, len(s.l)-1).Draw(t, "ledger")
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); {
			case op <= 4:
				s.allocate(t, i)
			case op <= 6:
				s.release(t, i)
			case op == 7:
				h := HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "host"))
				hh := rapid.SampledFrom([]Health{Healthy, Draining, Failed}).Draw(t, "health")
				if err := s.l[i].SetHostHealth(h, hh); err != nil {
					t.Fatal(err)
				}
				s.n[i].hostHealth[h] = hh
			case op == 8 && len(s.l) < 5:
				s.l = append(s.l, s.l[i].Clone())
				s.n = append(s.n, s.n[i].clone())
				s.claim = append(s.claim, slices.Clone(s.claim[i]))
			default:
				j := rapid.IntRange(0, len(s.l)-1).Draw(t, "into")
				s.l[j].CopyFrom(s.l[i])
				s.n[j] = s.n[i].clone()
				s.claim[j] = slices.Clone(s.claim[i])
			}
			for k := range s.l {
				if got, want := ledgerState(s.l[k]), s.n[k].state(); got != want {
					t.Fatalf("step %d: ledger %d and its full copy differ: %s", step, k, firstDiff(got, want))
				}
			}
		}
		for k, l := range s.l {
			if got, want := answers(l), s.n[k].answers(); got != want {
				t.Fatalf("ledger %d answers differently from its full copy: %s", k, firstDiff(got, want))
			}
			if err := l.Check(); err != nil {
				t.Fatalf("ledger %d: %v", k, err)
			}
		}
	})
}

// allocate draws a claim on a random host of ledger i: whole GPUs or a
// share, some CPU and memory; the ledger and its model must agree.
func (s *cowSet) allocate(t *rapid.T, i int) {
	c, n := s.c, s.n[i]
	h := HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "host"))
	cl := Claim{Host: h, CPUMilli: int64(rapid.IntRange(0, int(min(n.cpu[h], 64000))).Draw(t, "cpu"))}
	first, nGPU := c.HostGPUs(h)
	for k := rapid.IntRange(0, min(4, nGPU)).Draw(t, "gpus"); k > 0; k-- {
		gc := GPUClaim{GPU: first + GPUID(rapid.IntRange(0, nGPU-1).Draw(t, "gpu"))}
		if rapid.IntRange(0, 3).Draw(t, "share") == 0 {
			gc.Kind, gc.Milli = ClaimShare, rapid.SampledFrom([]int32{100, 250, 500}).Draw(t, "milli")
		}
		cl.GPUs = append(cl.GPUs, gc)
	}
	err := s.l[i].Allocate(cl)
	if want := n.allocate([]Claim{cl}); (err == nil) != (want == nil) {
		t.Fatalf("Allocate %+v on ledger %d: %v, model %v", cl, i, err, want)
	}
	if err == nil {
		s.claim[i] = append(s.claim[i], cl)
	}
}

// release gives back a random claim of ledger i.
func (s *cowSet) release(t *rapid.T, i int) {
	if len(s.claim[i]) == 0 {
		return
	}
	k := rapid.IntRange(0, len(s.claim[i])-1).Draw(t, "claim")
	cl := s.claim[i][k]
	if err := s.l[i].Release(cl); err != nil {
		t.Fatalf("Release on ledger %d: %v", i, err)
	}
	if want := s.n[i].release([]Claim{cl}); want != nil {
		t.Fatalf("model release: %v", want)
	}
	s.claim[i] = slices.Delete(s.claim[i], k, k+1)
}
