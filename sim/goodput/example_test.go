package goodput_test

import (
	"fmt"

	"github.com/gpusched/gpusched/sim/goodput"
)

// Pollux's throughput model: a job scales non-linearly, and less well
// spread over hosts than packed in one; the allocator shares a cluster's
// GPUs by the jobs' marginal speedups.
func Example() {
	m := goodput.Pollux()
	for _, k := range []int{1, 4, 8} {
		fmt.Printf("imagenet on %d GPUs in one host: speedup %.2f\n", k, m.Speedup("imagenet", k, goodput.OneHost))
	}
	packed, spread := m.Throughput("imagenet", 8, goodput.Packed(8, 8)), m.Throughput("imagenet", 8, goodput.CrossSwitch)
	fmt.Println("8 GPUs packed faster than spread over switches:", packed > spread)

	a := goodput.Allocator{Model: m, HostGPUs: 4}
	sizes := a.Allocate([]goodput.Demand{
		{Type: "imagenet", Min: 1, Max: 8},
		{Type: "cifar10", Min: 1, Max: 8},
	}, 8)
	fmt.Println("sizes sum to at most 8 GPUs:", sizes[0]+sizes[1] <= 8, "each runs:", sizes[0] >= 1 && sizes[1] >= 1)
	// Output:
	// imagenet on 1 GPUs in one host: speedup 1.00
	// imagenet on 4 GPUs in one host: speedup 3.96
	// imagenet on 8 GPUs in one host: speedup 7.63
	// 8 GPUs packed faster than spread over switches: true
	// sizes sum to at most 8 GPUs: true each runs: true
}
