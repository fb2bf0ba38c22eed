package gang_test

import (
	"fmt"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// A 16-GPU training job that must stay inside one ToR, placed
// topology-tiered on 125 DGX H100 hosts (32 to a ToR) where half of every
// host is busy: it does not fit, and the explanation says why. Once some
// hosts free up, it places on two whole hosts of one ToR.
func Example() {
	c, _ := topology.LoadPreset("h100-1k")
	l := topology.NewLedger(c)
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		first, _ := c.HostGPUs(h)
		for g := first; g < first+4; g++ {
			l.AllocateGPU(g)
		}
	}
	job := &workload.Job{
		ID:       "train",
		Groups:   []workload.TaskGroup{{Count: 2, GPUs: 8}},
		Topology: []workload.Constraint{{Level: "tor", Required: true}},
	}
	r, err := gang.NewRequest(c, job)
	if err != nil {
		panic(err)
	}
	placer, _ := gang.New("topology", gang.Options{})
	var p gang.Placement
	if why := placer.Place(l, r, &p); why != nil {
		fmt.Println(why)
	}

	// Hosts 40 and 41 (in tor2) finish their work.
	for _, h := range []topology.HostID{40, 41} {
		first, _ := c.HostGPUs(h)
		for g := first; g < first+4; g++ {
			l.ReleaseGPU(g)
		}
	}
	if why := placer.Place(l, r, &p); why != nil {
		fmt.Println(why)
		return
	}
	tx, _ := gang.Commit(l, &p)
	fmt.Println("placed in", c.DomainName(p.Domain))
	for _, cl := range p.Claims {
		fmt.Println(" ", c.HostName(cl.Host), len(cl.GPUs), "GPUs")
	}
	tx.Undo()
	fmt.Println("free after undo:", l.FreeGPUs(c.Root()))
	// Output:
	// job train: needs 16 GPUs (2 tasks) in one tor; best tor1 has 128 free but fits 0 of 2 tasks; cluster has 500 free GPUs: fragmentation; hosts excluded by gpu 125
	// placed in tor2
	//   dgx-h100-041 8 GPUs
	//   dgx-h100-042 8 GPUs
	// free after undo: 508
}

// Stranded GPUs per level: with 4 free GPUs on every host, a pending
// 8-GPU task can use none of them, and a pending pair of 4-GPU tasks that
// must share a host cannot either, though it could at any level above.
func ExampleStranded() {
	c, _ := topology.LoadPreset("h100-1k")
	l := topology.NewLedger(c)
	for g := topology.GPUID(0); int(g) < c.NumGPUs(); g += 2 {
		l.AllocateGPU(g)
	}
	pair := &workload.Job{ID: "pair", Groups: []workload.TaskGroup{{Count: 2, GPUs: 4}}}
	r, _ := gang.NewRequest(c, pair)
	for _, f := range gang.Stranded(l, []*gang.Request{r}) {
		fmt.Printf("%-8s %d of %d free GPUs stranded\n", f.Name, f.Stranded, f.Free)
	}
	// Output:
	// nvlink   500 of 500 free GPUs stranded
	// host     500 of 500 free GPUs stranded
	// tor      0 of 500 free GPUs stranded
	// cluster  0 of 500 free GPUs stranded
}
