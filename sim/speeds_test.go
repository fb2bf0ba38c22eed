package sim_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/data"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// twoModels is two 8-GPU hosts: one of the pcie-8gpu machine's model, one
// of a copy of it named K80.
func twoModels(t *testing.T) *topology.Cluster {
	sp, err := topology.Generator{Machine: "pcie-8gpu", Hosts: 1}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	acc := sp.Accelerators[0]
	acc.Model = "K80"
	sp.Accelerators = append(sp.Accelerators, acc)
	tpl := sp.Templates[0]
	tpl.Name, tpl.Accelerator = "k80-box", "K80"
	sp.Templates = append(sp.Templates, tpl)
	sp.Hosts = append(sp.Hosts, topology.HostGroup{Name: "k80-1", Template: "k80-box"})
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGPUSpeeds: with a table giving K80 a factor of 0.25, two 1-hour
// 8-GPU jobs, one on each host, take 1 h (a model the table does not
// name runs at 1) and 4 h (on the K80).
func TestGPUSpeeds(t *testing.T) {
	c := twoModels(t)
	tab, err := sim.ReadSpeedTable(strings.NewReader("reference: V100\nmodels: {K80: 0.25, V100: 1}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	jobs := []trace.Job{tj("a", 0, time.Hour, 0, gpus(8)), tj("b", 0, time.Hour, 0, gpus(8))}
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), GPUSpeeds: tab, Audit: true}, jobs)
	var jcts []float64
	for _, j := range r.Jobs {
		jcts = append(jcts, j.End-j.Submit)
	}
	slices.Sort(jcts)
	if !slices.Equal(jcts, []float64{3600, 4 * 3600}) {
		t.Errorf("JCTs %v, want 1 h and 4 h", jcts)
	}
	if tab.Factor("K80", "nosuchclass") != 0.25 || tab.Factor("T4", "") != 1 {
		t.Error("Factor: class fallback or unknown model")
	}
}

// TestSpeedTableFile: the embedded Gavel table reads, with its source and
// per-class factors; bad tables get errors naming file, line and field.
func TestSpeedTableFile(t *testing.T) {
	tab, err := sim.ReadSpeedTable(data.GPUSpeedsGavel(), data.GPUSpeedsGavelName)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Reference != "V100" || !strings.Contains(tab.Source, "Gavel") || tab.Factor("K80", "resnet50-bs64") != 0.141 || tab.Factor("P100", "") != 0.792 {
		t.Errorf("embedded table: %+v", tab)
	}
	for _, tc := range []struct{ in, want string }{
		{"models: {K80: -1}\n", "s.yaml:1: bad GPU speed table: models.K80"},
		{"models:\n  K80: 0.5\nclasses:\n  x: {P100: zero}\n", "s.yaml:4: bad GPU speed table: classes.x.P100"},
		{"modles: {K80: 1}\n", "field modles not found"},
		{"reference: V100\nmodels: {V100: 2}\n", "reference model's factor is 2"},
		{"source: nothing\n", "no models and no classes"},
		{"", "empty"},
	} {
		_, err := sim.ReadSpeedTable(strings.NewReader(tc.in), "s.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, sim.ErrSpeedTable) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

// FuzzReadSpeedTable: any input gives a table or an error, never a panic;
// a table's factors are positive.
func FuzzReadSpeedTable(f *testing.F) {
	f.Add("reference: V100\nmodels: {K80: 0.265, V100: 1}\nclasses:\n  a: {K80: 2}\n")
	f.Add("models: {K80: .nan}\n")
	f.Add("classes: {x: {y: 1e400}}\n")
	f.Fuzz(func(t *testing.T, in string) {
		tab, err := sim.ReadSpeedTable(strings.NewReader(in), "f.yaml")
		if err != nil {
			return
		}
		for m, x := range tab.Models {
			if !(x > 0) {
				t.Fatalf("model %s factor %g accepted", m, x)
			}
		}
	})
}

// TestSpeedTableHetero: the embedded Gavel table drives the Gavel-style
// allocator. One V100 and one K80; a resnet50 job runs at 0.141 on a K80,
// a recommendation job at 1.398: max-min gives resnet50 the V100 and the
// recommendation job the K80, each better than an equal split.
func TestSpeedTableHetero(t *testing.T) {
	tab, err := sim.ReadSpeedTable(data.GPUSpeedsGavel(), "gavel")
	if err != nil {
		t.Fatal(err)
	}
	c := fairshare.HeteroCluster{Models: []string{"V100", "K80"}, GPUs: []int{1, 1}}
	jobs := []fairshare.HeteroJob{
		{ID: "resnet", GPUs: 1, Throughput: tab.Throughputs("resnet50-bs64", c.Models)},
		{ID: "rec", GPUs: 1, Throughput: tab.Throughputs("recommendation-bs2048", c.Models)},
	}
	a, err := fairshare.HeteroMaxMin(jobs, c)
	if err != nil {
		t.Fatal(err)
	}
	if p := a.Preferred(0); len(p) != 1 || p[0] != 0 {
		t.Errorf("resnet50 prefers %v, want the V100 only", p)
	}
	if p := a.Preferred(1); len(p) != 1 || p[0] != 1 {
		t.Errorf("recommendation prefers %v, want the K80 only", p)
	}
	if a.MinNormalised <= 1 {
		t.Errorf("min normalised %.3f, want above an equal split's 1", a.MinNormalised)
	}
}
