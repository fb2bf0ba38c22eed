package gpusched_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// A cluster that changes under a running Scheduler: a 16-GPU job waits
// while one of two hosts is busy, until a third host joins; then the busy
// host leaves, its job drained by the recovery rules first.
func ExampleScheduler_AddHosts() {
	spec, _ := topology.Generator{Name: "lab", Machine: "dgx-h100", Hosts: 2, HostsPerToR: 2}.Spec()
	cluster, _ := topology.Build(spec)
	s, err := gpusched.New(gpusched.Config{Cluster: cluster,
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "ml"}}}}})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)
	for _, j := range []workload.Job{
		{ID: "small", Queue: "ml", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}},
		{ID: "big", Queue: "ml", Groups: []workload.TaskGroup{{Count: 2, GPUs: 8}}},
	} {
		if err := s.Submit(j, now); err != nil {
			panic(err)
		}
	}
	d := s.Schedule(now)
	fmt.Println("09:00", d.Bindings[0].Job, "on", gpusched.FormatPlacement(s.Cluster(), d.Bindings[0].Placement), "-", d.Pending[0].Job, "waits:", d.Pending[0].Reason.Code)
	_ = s.Started("small", now)

	// A host joins the ToR of the others.
	tor := cluster.DomainName(cluster.HostAt(0, topology.LevelHost+1))
	if err := s.AddHosts(topology.Change{Hosts: []topology.HostGroup{{Name: "dgx-h100-3", Template: cluster.Host(0).Template, Parent: tor}}}, now); err != nil {
		panic(err)
	}
	now = now.Add(time.Minute)
	d = s.Schedule(now)
	fmt.Println("09:01", d.Bindings[0].Job, "on", gpusched.FormatPlacement(s.Cluster(), d.Bindings[0].Placement))
	_ = s.Started("big", now)

	// The busy host leaves: its job is drained first.
	jobs, err := s.RemoveHosts([]string{"dgx-h100-1"}, now)
	fmt.Println("09:01 dgx-h100-1 leaving; jobs to move:", jobs, err)
	now = now.Add(time.Minute)
	d = s.Schedule(now)
	fmt.Println("09:02", d.Recoveries[0].Job, d.Recoveries[0].Action)
	_ = s.Requeue("small", now)
	now = now.Add(time.Minute)
	s.Schedule(now)
	_, still := s.Cluster().HostByName("dgx-h100-1")
	fmt.Println("09:03 dgx-h100-1 still there:", still, "-", s.Cluster())
	// Output:
	// 09:00 small on dgx-h100-1[0-7] - big waits: capacity
	// 09:01 big on dgx-h100-2[0-7] dgx-h100-3[0-7]
	// 09:01 dgx-h100-1 leaving; jobs to move: [small] <nil>
	// 09:02 small drain
	// 09:03 dgx-h100-1 still there: false - cluster lab: 3 hosts (1 removed), 24 GPUs, 62 domains
}
