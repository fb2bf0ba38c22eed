package policy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/sim/simcli"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// smallestFirst is an ordering: jobs asking for fewer GPUs go first.
type smallestFirst struct{}

func (smallestFirst) Enqueued(_ time.Duration, jobs []policy.Job) ([]int32, error) {
	p := make([]int32, len(jobs))
	for i, j := range jobs {
		p[i] = -int32(j.GPUs)
	}
	return p, nil
}

// spread is a node picker: each task on the emptiest host (frag's
// worst-fit), behind gang's topology-aware gang placement.
func spread(*topology.Cluster, []trace.Job, uint64) (gang.Placer, error) {
	node, err := frag.NewPolicy(frag.WorstFit, frag.Options{})
	if err != nil {
		return nil, err
	}
	return gang.New(frag.GPUPacking, gang.Options{Node: node})
}

// Register a placer, an ordering and a demotion by name, and compare them
// against the built-ins with the sim command, as `gpusched sim compare`
// would: --policies and --orderings take the registered names beside the
// built-ins, and so do run, sweep (--param ordering=…) and --seeds.
func Example() {
	reg := &policy.Registry{}
	must(reg.Placer("spread", spread))
	must(reg.Ordering("smallest-first-go", func(arg string, seed uint64) (policy.Ordering, error) { return smallestFirst{}, nil }))
	// A demotion: two levels, the second after 2 GPU-hours of service.
	must(reg.Demotion("two-level", func(arg string, seed uint64) (queue.Demotion, error) {
		return queue.LAS{Thresholds: []float64{2 * 3600}}, nil
	}))

	dir, _ := os.MkdirTemp("", "policy-example")
	defer os.RemoveAll(dir)
	cmd := simcli.Command(simcli.Options{Registry: reg})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"compare", "--preset", "h100-1k", "--trace", "synthetic:200", "--load", "1.3",
		"--policies", "best-fit,spread", "--orderings", "fifo,smallest-first-go,two-level",
		"--ckpt-interval", "1h", "--no-plots", "--out", dir})
	must(cmd.Execute())

	b, _ := os.ReadFile(filepath.Join(dir, "compare.json"))
	var sums []sim.Summary
	must(json.Unmarshal(b, &sums))
	for _, s := range sums {
		fmt.Printf("%-9s %-17s %d jobs completed\n", s.Policy, s.Ordering, s.Jobs.Completed)
	}
	// Output:
	// best-fit  fifo              200 jobs completed
	// best-fit  smallest-first-go 200 jobs completed
	// best-fit  two-level         200 jobs completed
	// spread    fifo              200 jobs completed
	// spread    smallest-first-go 200 jobs completed
	// spread    two-level         200 jobs completed
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
