package gavel_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/data"
	"github.com/gpusched/gpusched/sim/gavel"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// cluster builds one 1-GPU host of each named model, in order.
func cluster(t *testing.T, models ...string) *topology.Cluster {
	t.Helper()
	sp := topology.Spec{Version: 1, Name: "t"}
	for _, m := range models {
		sp.Accelerators = append(sp.Accelerators, topology.AcceleratorSpec{Model: m})
		sp.Templates = append(sp.Templates, topology.HostTemplate{Name: m + "-box", CPUMilli: 8000, MemoryMiB: 64000, Accelerator: m, GPUs: 1})
		sp.Hosts = append(sp.Hosts, topology.HostGroup{Name: strings.ToLower(m), Template: m + "-box"})
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func speeds(t *testing.T) *sim.SpeedTable {
	t.Helper()
	tab, err := sim.ReadSpeedTable(data.GPUSpeedsGavel(), data.GPUSpeedsGavelName)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// placeModel places job on an empty ledger through the policy's placer
// and returns the model of the host it lands on.
func placeModel(t *testing.T, c *topology.Cluster, p *gavel.Policy, job string) string {
	t.Helper()
	base, err := gang.New("first-fit", gang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := gang.NewRequest(c, &workload.Job{ID: job, Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	var pl gang.Placement
	if e := p.Placer(base).Place(topology.NewLedger(c), r, &pl); e != nil {
		t.Fatalf("%s does not place: %v", job, e)
	}
	return c.Model(c.HostModel(pl.Claims[0].Host)).Model
}

// TestGavelModelChoice: one V100 and one K80; a resnet50 job (K80 at
// 0.141 of a V100) and a recommendation job (K80 at 1.398). The aware
// allocation gives resnet50 the V100 and recommendation the K80 (each
// better than an equal split), and the placer follows it though first-fit
// alone would put both on the V100, the first host; the agnostic
// allocation is blind to the difference.
func TestGavelModelChoice(t *testing.T) {
	c := cluster(t, "V100", "K80")
	types := map[string]string{"res": "resnet50-bs64", "rec": "recommendation-bs2048"}
	jobs := []policy.Job{{ID: "rec", GPUs: 1}, {ID: "res", GPUs: 1}}
	p, err := gavel.New(gavel.Config{Cluster: c, Speeds: speeds(t), Types: types})
	if err != nil {
		t.Fatal(err)
	}
	prio, err := p.Enqueued(0, jobs)
	if err != nil {
		t.Fatal(err)
	}
	// Neither has run: both in the top band, by their largest share (1).
	if prio[0] != prio[1] || prio[0] < 1<<30 {
		t.Errorf("priorities %v, want equal, in the top band", prio)
	}
	for id, want := range map[string][]float64{"res": {1, 0}, "rec": {0, 1}} {
		x, ok := p.Allocation(id)
		if !ok || math.Abs(x[0]-want[0]) > 1e-6 || math.Abs(x[1]-want[1]) > 1e-6 {
			t.Errorf("%s: allocation %v, want %v over %v", id, x, want, p.Models())
		}
	}
	if got := placeModel(t, c, p, "rec"); got != "K80" {
		t.Errorf("rec placed on %s, want K80", got)
	}
	if got := placeModel(t, c, p, "res"); got != "V100" {
		t.Errorf("res placed on %s, want V100", got)
	}
	ag, err := gavel.New(gavel.Config{Cluster: c, Speeds: speeds(t), Types: types, Agnostic: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ag.Enqueued(0, jobs); err != nil {
		t.Fatal(err)
	}
	xr, _ := ag.Allocation("rec")
	xs, _ := ag.Allocation("res")
	if xr[0]+xr[1] < 1-1e-6 || xs[0]+xs[1] < 1-1e-6 {
		t.Errorf("agnostic allocations %v %v, want each job the whole of its time", xr, xs)
	}
}

// TestGavelRounds: two jobs of one type share one V100. The one that ran
// the first round has had its share (1/2) for all its time, the other
// none: at the next round the waiting one ranks above the running one,
// and priorities stay put within a round. When a ends, b gets the whole
// V100 from the next round.
func TestGavelRounds(t *testing.T) {
	p, err := gavel.New(gavel.Config{Cluster: cluster(t, "V100"), Speeds: speeds(t), Round: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Enqueued(0, []policy.Job{{ID: "a", GPUs: 1}, {ID: "b", GPUs: 1}}); err != nil {
		t.Fatal(err)
	}
	p.Started(0, "a", "V100")
	run, err := p.Running(30*time.Second, []policy.Job{{ID: "a", GPUs: 1, Running: true}})
	if err != nil {
		t.Fatal(err)
	}
	if run[0] < 1<<30 {
		t.Errorf("within the first round a's priority %d changed from the top band", run[0])
	}
	run, err = p.Running(time.Minute, []policy.Job{{ID: "a", GPUs: 1, Running: true}})
	if err != nil {
		t.Fatal(err)
	}
	// a: X = 1/2 over f = 1 (ran all its minute): ratio 1/2, one halving
	// below the middle band.
	if want := int32(1<<29 - 1<<20); run[0] != want {
		t.Errorf("a's priority after a round %d, want %d", run[0], want)
	}
	p.Ended(90*time.Second, "a")
	if _, err := p.Running(100*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if x, _ := p.Allocation("b"); math.Abs(x[0]-0.5) > 1e-6 {
		t.Errorf("b within the round a ended: allocation %v, want the round's 1/2", x)
	}
	if _, err := p.Running(2*time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Allocation("a"); ok {
		t.Error("an ended job still has an allocation")
	}
	if x, _ := p.Allocation("b"); math.Abs(x[0]-1) > 1e-6 {
		t.Errorf("b alone: allocation %v, want the whole V100", x)
	}
}

func TestGavelConfigErrors(t *testing.T) {
	if _, err := gavel.New(gavel.Config{}); err == nil {
		t.Error("no cluster accepted")
	}
	if _, err := gavel.New(gavel.Config{Cluster: cluster(t, "V100"), Round: -time.Second}); err == nil {
		t.Error("a negative round accepted")
	}
	if _, err := gavel.New(gavel.Config{Cluster: cluster(t, "V100@vc1")}); err == nil || !strings.Contains(err.Error(), "hard partition") {
		t.Errorf("a hard partition's model: %v", err)
	}
}

// badAllocator returns fixed rows.
type badAllocator [][]float64

func (b badAllocator) Allocate([]fairshare.HeteroJob, fairshare.HeteroCluster) ([][]float64, error) {
	return b, nil
}

// TestGavelAllocatorChecked: an Allocator's rows are used when they fit,
// and refused, naming the problem, when they do not.
func TestGavelAllocatorChecked(t *testing.T) {
	c := cluster(t, "V100", "K80")
	jobs := []policy.Job{{ID: "a", GPUs: 1}}
	for _, tc := range []struct {
		rows badAllocator
		want string
	}{
		{badAllocator{{0.25, 0.5}}, ""},
		{badAllocator{{0.5, 0.6}}, "sum to 1.1"},
		{badAllocator{{-0.5, 0}}, "outside [0, 1]"},
		{badAllocator{{1}}, "1 shares for 2 models"},
		{badAllocator{}, "0 rows for 1 job groups"},
	} {
		p, err := gavel.New(gavel.Config{Cluster: c, Allocator: tc.rows})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Enqueued(0, jobs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.rows, err)
		case tc.want == "":
			if x, _ := p.Allocation("a"); x[0] != 0.25 || x[1] != 0.5 {
				t.Errorf("allocation %v, want the allocator's", x)
			}
		case err == nil || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%v: error %v, want %q", tc.rows, err, tc.want)
		}
	}
	// Capacity: two 1-GPU jobs of one group with the whole V100 each.
	p, _ := gavel.New(gavel.Config{Cluster: c, Allocator: badAllocator{{1, 0}}})
	if _, err := p.Enqueued(0, []policy.Job{{ID: "a", GPUs: 1}, {ID: "b", GPUs: 1}}); err == nil || !strings.Contains(err.Error(), "model V100: 2 GPUs allocated, 1 exist") {
		t.Errorf("over capacity: %v", err)
	}
}
