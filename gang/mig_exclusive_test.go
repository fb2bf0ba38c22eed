package gang

import (
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestMIGMediaExtensions: a GPU holds one 1g.10gb+me instance at a time
// (its one set of media extensions), so a gang of three lands on three
// GPUs under every policy, beside 1g.10gb instances on the same GPU, and
// the ledger accepts the placement.
func TestMIGMediaExtensions(t *testing.T) {
	c := mustPreset(t, "dgx-h100")
	for _, policy := range []string{"best-fit", "topology", "first-fit", "fgd"} {
		l := topology.NewLedger(c)
		p, x := place(t, policy, l, job("base", 2, workload.TaskGroup{MIGProfile: "1g.10gb"}))
		if x != nil {
			t.Fatal(x)
		}
		if _, err := Commit(l, p); err != nil {
			t.Fatal(err)
		}
		p, x = place(t, policy, l, job("me", 3, workload.TaskGroup{MIGProfile: "1g.10gb+me"}))
		if x != nil {
			t.Fatalf("%s: %v", policy, x)
		}
		perGPU := map[topology.GPUID]int{}
		for _, cl := range p.Claims {
			perGPU[cl.GPUs[0].GPU]++
		}
		if len(perGPU) != 3 {
			t.Errorf("%s: three 1g.10gb+me over %d GPUs, want 3", policy, len(perGPU))
		}
		if _, err := Commit(l, p); err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		if err := l.Check(); err != nil {
			t.Fatal(err)
		}
	}
}
