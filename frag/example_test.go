package frag_test

import (
	"fmt"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/topology"
)

// Learn a workload from a trace, measure fragmentation and place a task
// with FGD.
func Example() {
	c, _ := topology.Build(topology.Spec{
		Version:      topology.SpecVersion,
		Name:         "demo",
		Accelerators: []topology.AcceleratorSpec{{Model: "T4"}},
		Templates:    []topology.HostTemplate{{Name: "box", CPUMilli: 32000, MemoryMiB: 131072, Accelerator: "T4", GPUs: 2}},
		Hosts:        []topology.HostGroup{{Name: "n[0-1]", Template: "box"}},
	})
	l := topology.NewLedger(c)
	// n0's first GPU runs a half-GPU task.
	g, _ := c.HostGPUs(0)
	_ = l.Allocate(topology.Claim{Host: 0, GPUs: []topology.GPUClaim{{GPU: g, Kind: topology.ClaimShare, Milli: 500}}})

	// The workload: as many half-GPU tasks as whole-GPU ones.
	trace := []frag.Task{{GPUMilli: 500}, {GPUs: 1}, {GPUMilli: 500}, {GPUs: 1}}
	dist, _ := frag.Learn(trace, frag.LearnOptions{Coverage: 1})
	m, _ := frag.NewMeasure(c, dist)
	// n0 has 500 + 1000 free; whole-GPU tasks cannot use the 500.
	fmt.Println("n0 fragmentation:", m.Node(l, 0), "milli-GPU")

	p, _ := frag.NewPolicy(frag.FGD, frag.Options{Distribution: dist})
	cl, ok := p.Pick(l, frag.Task{GPUMilli: 500}, frag.Scope{})
	fmt.Println(ok, c.HostName(cl.Host), c.GPUName(cl.GPUs[0].GPU), cl.GPUs[0].Milli)
	_ = l.Allocate(cl)
	fmt.Println("n0 fragmentation:", m.Node(l, 0), "milli-GPU")
	// Output:
	// n0 fragmentation: 250 milli-GPU
	// true n0 n0/gpu0 500
	// n0 fragmentation: 0 milli-GPU
}

// The baselines by name, on the same state.
func ExampleNewPolicy() {
	c, _ := topology.Build(topology.Spec{
		Version:      topology.SpecVersion,
		Name:         "demo",
		Accelerators: []topology.AcceleratorSpec{{Model: "A"}},
		Templates: []topology.HostTemplate{
			{Name: "big", CPUMilli: 64000, MemoryMiB: 262144, Accelerator: "A", GPUs: 8},
			{Name: "small", CPUMilli: 16000, MemoryMiB: 65536, Accelerator: "A", GPUs: 2},
		},
		Hosts: []topology.HostGroup{{Name: "big0", Template: "big"}, {Name: "small0", Template: "small"}},
	})
	l := topology.NewLedger(c)
	task := frag.Task{GPUs: 1, CPUMilli: 4000}
	for _, name := range []string{frag.BestFit, frag.WorstFit, frag.FirstFit, frag.GPUPacking} {
		p, _ := frag.NewPolicy(name, frag.Options{})
		cl, _ := p.Pick(l, task, frag.Scope{})
		fmt.Printf("%-11s %s\n", name, c.GPUName(cl.GPUs[0].GPU))
	}
	// Output:
	// best-fit    small0/gpu0
	// worst-fit   big0/gpu0
	// first-fit   big0/gpu0
	// gpu-packing small0/gpu0
}

// The paper's experiment on a toy cluster: one seed, one policy.
func ExampleRunInflation() {
	c, _ := topology.Build(topology.Spec{
		Version:      topology.SpecVersion,
		Name:         "toy",
		Accelerators: []topology.AcceleratorSpec{{Model: "A"}},
		Templates:    []topology.HostTemplate{{Name: "box", CPUMilli: 32000, MemoryMiB: 65536, Accelerator: "A", GPUs: 4}},
		Hosts:        []topology.HostGroup{{Name: "n[0-3]", Template: "box"}},
	})
	trace := []frag.Task{{GPUs: 2, CPUMilli: 8000}, {GPUMilli: 700, CPUMilli: 2000}, {GPUMilli: 300, CPUMilli: 2000}, {CPUMilli: 4000}}
	run, err := frag.RunInflation(c, trace, frag.FGD, 42, frag.InflationOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d arrivals, %d placed; unallocated at 100%%: %.1f%%, at 130%%: %.1f%%\n",
		run.Arrivals, run.Placed, run.Unallocated[100], run.Unallocated[130])
	// Output:
	// 18 arrivals, 16 placed; unallocated at 100%: 6.9%, at 130%: 2.5%
}
