package gang

import (
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestMIGEveryModelWithTheProfile: a MIG task that names no model accepts
// every model with its profile, not only the first: on a cluster of DGX
// A100 and DGX H100 hosts (both with 3g.40gb), a gang of MIG tasks larger
// than the A100 hosts take lands on both models, and with every A100 GPU
// taken it lands on the H100s.
func TestMIGEveryModelWithTheProfile(t *testing.T) {
	at, aa, _ := topology.MachineTemplate("dgx-a100")
	ht, ha, _ := topology.MachineTemplate("dgx-h100")
	c, err := topology.Build(topology.Spec{
		Version: topology.SpecVersion, Name: "a100-h100",
		Accelerators: []topology.AcceleratorSpec{aa, ha},
		Templates:    []topology.HostTemplate{at, ht},
		Hosts:        []topology.HostGroup{{Name: "a1", Template: at.Name}, {Name: "h1", Template: ht.Name}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := mustRequest(t, c, job("m", 1, workload.TaskGroup{MIGProfile: "3g.40gb"}))
	for m := range c.Models() {
		if !r.Groups[0].Accepts(topology.ModelID(m)) {
			t.Errorf("a 3g.40gb task refuses model %s, which has the profile", c.Model(topology.ModelID(m)).Model)
		}
	}
	for _, policy := range PolicyNames() {
		l := topology.NewLedger(c)
		p, x := place(t, policy, l, job("both", 24, workload.TaskGroup{MIGProfile: "3g.40gb"}))
		if x != nil {
			t.Fatalf("%s: 24 3g.40gb on 16 GPUs of two models: %v", policy, x)
		}
		models := map[string]bool{}
		for _, cl := range p.Claims {
			models[c.Model(c.HostModel(cl.Host)).Model] = true
		}
		if len(models) != 2 {
			t.Errorf("%s: 24 instances on models %v, want both", policy, models)
		}
		l = topology.NewLedger(c)
		first, _ := c.HostGPUs(0)
		takeGPUs(t, l, first, first+1, first+2, first+3, first+4, first+5, first+6, first+7)
		if _, x := place(t, policy, l, job("h", 1, workload.TaskGroup{MIGProfile: "3g.40gb"})); x != nil {
			t.Errorf("%s: a 3g.40gb with the A100 full: %v", policy, x)
		}
	}
}
