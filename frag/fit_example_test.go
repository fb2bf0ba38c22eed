package frag_test

import (
	"errors"
	"fmt"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/topology"
)

// Check tasks against a cluster before replaying them: a task no host
// could ever take is bad input, whatever the policy.
func ExampleFitChecker() {
	c, _ := topology.Build(topology.Spec{
		Version:      topology.SpecVersion,
		Name:         "demo",
		Accelerators: []topology.AcceleratorSpec{{Model: "T4"}, {Model: "V100"}},
		Templates: []topology.HostTemplate{
			{Name: "t4", CPUMilli: 32000, MemoryMiB: 131072, Accelerator: "T4", GPUs: 2},
			{Name: "v100", CPUMilli: 96000, MemoryMiB: 393216, Accelerator: "V100", GPUs: 8},
		},
		Hosts: []topology.HostGroup{{Name: "t[0-1]", Template: "t4"}, {Name: "v0", Template: "v100"}},
	})
	t4, _ := c.ModelByName("T4")
	fc := frag.NewFitChecker(c)
	for _, t := range []frag.Task{
		{GPUs: 8, CPUMilli: 64000},
		{GPUs: 4, Models: []topology.ModelID{t4}},
		{GPUs: 16},
		{GPUs: 8, CPUMilli: 128000},
	} {
		var fe *frag.FitError
		if err := fc.Check(t); errors.As(err, &fe) {
			fmt.Printf("%s: need %d, most %d\n", fe.Field, fe.Need, fe.Most)
			continue
		}
		fmt.Println("fits")
	}
	// Output:
	// fits
	// gpus: need 4, most 2
	// gpus: need 16, most 8
	// cpu: need 128000, most 96000
}
