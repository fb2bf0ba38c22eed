package topology_test

import (
	"fmt"

	"github.com/gpusched/gpusched/topology"
)

// A host joins a ToR in the middle of a running cluster and another
// leaves: each change is a new Cluster version, and the ledger follows it
// without a rebuild. Existing IDs stay; the new host takes the next ones.
func ExampleCluster_Apply() {
	c, _ := topology.LoadPreset("h100-1k") // 125 DGX H100, 32 to a ToR
	l := topology.NewLedger(c)
	h0, _ := c.HostByName("dgx-h100-001")
	first, _ := c.HostGPUs(h0)
	if err := l.AllocateGPU(first); err != nil { // a job runs on host 1
		panic(err)
	}
	tor := c.HostAt(h0, topology.LevelHost+1)

	next, err := c.Apply(topology.Change{
		Remove: []string{"dgx-h100-002"},
		Hosts:  []topology.HostGroup{{Name: "dgx-h100-new", Template: c.Host(h0).Template, Parent: c.DomainName(tor)}},
	})
	if err != nil {
		panic(err)
	}
	if err := l.Follow(next); err != nil {
		panic(err)
	}
	h, _ := next.HostByName("dgx-h100-new")
	hosts := next.DomainHostList(tor)
	fmt.Println(next)
	fmt.Printf("new host %d; ToR %s has %d hosts, the last %d; %d GPUs free there\n",
		h, next.DomainName(tor), len(hosts), hosts[len(hosts)-1], l.FreeGPUs(tor))
	fmt.Println("host 1 still runs its job:", !l.GPUIsFree(first), "; the old version is unchanged:", c)

	// Cordoned: keeps its job, takes nothing new.
	if err := l.SetHostCordoned(h0, true); err != nil {
		panic(err)
	}
	fmt.Println("cordoned host usable:", l.HostUsable(h0), "; ToR free:", l.FreeGPUs(tor))
	// Output:
	// cluster h100-1k: 126 hosts (1 removed), 1008 GPUs, 2525 domains
	// new host 125; ToR tor1 has 32 hosts, the last 125; 255 GPUs free there
	// host 1 still runs its job: true ; the old version is unchanged: cluster h100-1k: 125 hosts, 1000 GPUs, 2505 domains
	// cordoned host usable: false ; ToR free: 248
}
