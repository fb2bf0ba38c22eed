package plugin_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
	"github.com/gpusched/gpusched/topology"
)

// ExampleBuildTopology turns labelled GPU nodes into the gpusched cluster the
// plugin places pods on.
func ExampleBuildTopology() {
	args := &plugin.Args{TopologyLevels: []plugin.TopologyLevel{
		{Name: "tor", NodeLabel: "network.example.com/tor"},
	}}
	args.SetDefaults()
	gpuNode := func(name, tor string) *v1.Node {
		res := v1.ResourceList{
			"nvidia.com/gpu":  resource.MustParse("8"),
			v1.ResourceCPU:    resource.MustParse("224"),
			v1.ResourceMemory: resource.MustParse("2Ti"),
		}
		return &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				"nvidia.com/gpu.product":  "NVIDIA-H100-80GB-HBM3",
				"nvidia.com/gpu.count":    "8",
				"network.example.com/tor": tor,
			}},
			Status: v1.NodeStatus{Allocatable: res},
		}
	}
	topo, err := plugin.BuildTopology([]*v1.Node{gpuNode("dgx-a", "tor1"), gpuNode("dgx-b", "tor1"), gpuNode("dgx-c", "tor2")}, args)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := topo.Cluster
	tor, _ := c.LevelByName("tor")
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		first, n := c.HostGPUs(h)
		fmt.Printf("%s: %d GPUs in %s, GPU0-GPU7 link %v\n", c.HostName(h), n, c.DomainName(c.HostAt(h, tor)), c.Link(first, first+7).Kind)
	}
	// Output:
	// dgx-a: 8 GPUs in tor1, GPU0-GPU7 link NV
	// dgx-b: 8 GPUs in tor1, GPU0-GPU7 link NV
	// dgx-c: 8 GPUs in tor2, GPU0-GPU7 link NV
}
