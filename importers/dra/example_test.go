package dra_test

import (
	"fmt"
	"log"

	"github.com/gpusched/gpusched/importers/dra"
	"github.com/gpusched/gpusched/topology"
)

// Build a cluster from the ResourceSlices and Nodes of two DGX H100, one
// with a GPU tainted NoExecute by the driver, and carry the taint into a
// ledger as GPU health.
func Example() {
	objs, err := dra.ReadFiles("testdata/dgx-h100.yaml")
	if err != nil {
		log.Fatal(err)
	}
	res, err := dra.Build(objs, dra.Options{NetworkLabels: []string{"network.topology.kubernetes.io/rack"}})
	if err != nil {
		log.Fatal(err)
	}
	c, err := topology.Build(res.Spec)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d hosts, %d GPUs of %s\n", c.NumHosts(), c.NumGPUs(), res.Spec.Accelerators[0].Model)
	fmt.Println("GPU 0 and 7 of a host:", c.Link(0, 7).Kind)
	l := topology.NewLedger(c)
	if err := res.ApplyHealth(c, l); err != nil {
		log.Fatal(err)
	}
	for _, g := range res.GPUs {
		if g.Health != topology.Healthy {
			fmt.Printf("%s %s (%s): %s, taint %s=%s:%s\n", g.Host, g.Device, g.UUID[:12], g.Health, g.Taints[0].Key, g.Taints[0].Value, g.Taints[0].Effect)
		}
	}
	fmt.Println("allocatable GPUs:", l.FreeGPUs(c.Root()))
	// Output:
	// 2 hosts, 16 GPUs of H100-SXM5-80GB
	// GPU 0 and 7 of a host: NV
	// dgx-h100-002 gpu-5 (GPU-bea4ae1d): failed, taint gpu.nvidia.com/xid=79:NoExecute
	// allocatable GPUs: 15
}
