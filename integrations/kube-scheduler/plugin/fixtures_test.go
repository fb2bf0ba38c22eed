package plugin

import (
	"math/rand/v2"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// node builds a GPU node with allocatable GPUs, CPU and memory and the given
// labels; gpus < 0 makes a node without the GPU resource.
func node(name string, gpus int, labels map[string]string) *v1.Node {
	l := map[string]string{"kubernetes.io/hostname": name}
	for k, v := range labels {
		l[k] = v
	}
	alloc := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("64"),
		v1.ResourceMemory: resource.MustParse("512Gi"),
	}
	if gpus >= 0 {
		alloc[DefaultGPUResource] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Status: v1.NodeStatus{Allocatable: alloc, Capacity: alloc}}
}

// gpuNode is node with a product and a GPU count label.
func gpuNode(name string, gpus int, product string, labels map[string]string) *v1.Node {
	l := map[string]string{DefaultGPUProductLabel: product, DefaultGPUCountLabel: strconv.Itoa(gpus)}
	for k, v := range labels {
		l[k] = v
	}
	return node(name, gpus, l)
}

// pod builds a pod requesting gpus whole GPUs and cpu milli-cores; node != ""
// binds it.
func pod(name, nodeName string, gpus int, cpuMilli int64) *v1.Pod {
	req := v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI)}
	if gpus > 0 {
		req[DefaultGPUResource] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: req, Limits: req}}}},
	}
}

// defaultArgs returns defaulted args with the given network levels
// (outermost first), each read from the label "net/<name>".
func defaultArgs(levels ...string) *Args {
	a := &Args{}
	for _, l := range levels {
		a.TopologyLevels = append(a.TopologyLevels, TopologyLevel{Name: l, NodeLabel: "net.example.com/" + l})
	}
	a.SetDefaults()
	return a
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }
