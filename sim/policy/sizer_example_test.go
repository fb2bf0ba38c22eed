package policy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/sim/simcli"
)

// threshold is a sizer: each job at its minimum, then, in arrival order,
// grown while its speedup gains at least half a GPU's worth per GPU
// added (a simple efficiency threshold instead of Pollux's objective).
type threshold struct{}

func (threshold) Size(jobs []policy.SizeJob, gpus int, speedup func(string, int) float64) ([]int, error) {
	out := make([]int, len(jobs))
	for i, j := range jobs {
		if j.Min <= gpus {
			out[i], gpus = j.Min, gpus-j.Min
		}
	}
	for i, j := range jobs {
		for out[i] > 0 && out[i] < j.Max && gpus > 0 && speedup(j.Type, out[i]+1)-speedup(j.Type, out[i]) >= 0.5 {
			out[i]++
			gpus--
		}
	}
	return out, nil
}

// Register a sizing policy for the goodput ordering and compare it with
// the built-in search: --goodput-sizer names it; the goodput runs of a
// compare, sweep or --seeds use it.
func ExampleRegistry_Sizer() {
	reg := &policy.Registry{}
	must(reg.Sizer("threshold", func(arg string, seed uint64) (policy.Sizer, error) { return threshold{}, nil }))

	dir, _ := os.MkdirTemp("", "sizer-example")
	defer os.RemoveAll(dir)
	for _, sizer := range []string{"", "threshold"} {
		cmd := simcli.Command(simcli.Options{Registry: reg})
		cmd.SetOut(&bytes.Buffer{})
		out := filepath.Join(dir, "run"+sizer)
		cmd.SetArgs([]string{"run", "--file", "../../testdata/clusters/pollux-16x4.yaml", "--max-gpus-per-task", "4",
			"--trace", "synthetic:60", "--load", "1.5", "--throughput-model", "pollux", "--job-types", "uniform",
			"--ordering", "goodput", "--goodput-sizer", sizer, "--ckpt-interval", "10m", "--no-plots", "--out", out})
		must(cmd.Execute())
		b, _ := os.ReadFile(filepath.Join(out, "summary.json"))
		var s sim.Summary
		must(json.Unmarshal(b, &s))
		fmt.Printf("sizer %-9q %d jobs completed\n", sizer, s.Jobs.Completed)
	}
	// Output:
	// sizer ""        60 jobs completed
	// sizer "threshold" 60 jobs completed
}
