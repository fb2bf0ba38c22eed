package snapshot_test

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/snapshot"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// A host captures its Scheduler's state, writes it, and a tool (here the
// same program; `gpusched explain` in practice) loads it and runs the
// cycle the host would run.
func Example() {
	c, _ := topology.LoadPreset("dgx-h100") // one host, 8 GPUs
	cfg := gpusched.Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "train"}}}}}
	s, _ := gpusched.New(cfg)
	t0 := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	_ = s.Submit(workload.Job{ID: "big", Queue: "train", Groups: []workload.TaskGroup{{Count: 1, GPUs: 6}}}, t0)
	_ = s.Submit(workload.Job{ID: "next", Queue: "train", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}, t0.Add(time.Minute))
	for _, b := range s.Schedule(t0.Add(time.Minute)).Bindings {
		_ = s.Started(b.Job, t0.Add(time.Minute))
	}

	now := t0.Add(10 * time.Minute)
	st, err := snapshot.Capture(s, now, snapshot.CaptureOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var file bytes.Buffer
	_ = snapshot.Encode(&file, st, "")
	os.Stdout.Write(file.Bytes())

	l, err := snapshot.Load(file.Bytes(), "state.yaml", snapshot.Options{NoPreemption: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range l.Scheduler.Schedule(l.State.Now).Pending {
		fmt.Println(p.Job, "waits:", p.Reason)
	}
	// Output:
	// version: 9
	// now: 2025-01-01T09:10:00Z
	// cluster:
	//   preset: dgx-h100
	// hosts: 1
	// maxClockSkew: 24h0m0s
	// queues:
	//   root:
	//     children:
	//       - name: train
	// fresh:
	//   - big
	// jobs:
	//   - id: big
	//     queue: train
	//     groups: [{count: 1, gpus: 6}]
	//     submitted: 2025-01-01T09:00:00Z
	//     state: running
	//     started: 2025-01-01T09:01:00Z
	//     admitted: 2025-01-01T09:01:00Z
	//     domain: dgx-h100-1/nvswitch0
	//     placement:
	//       - {host: dgx-h100-1, gpus: [0, 1, 2, 3, 4, 5]}
	//   - id: next
	//     queue: train
	//     groups: [{count: 1, gpus: 4}]
	//     submitted: 2025-01-01T09:01:00Z
	// # sealed: bytes=555 crc32c=77c6b69f jobs=2 fresh=1
	// next waits: capacity: needs 4 GPUs (1 task); cluster has 2 free GPUs: capacity; hosts excluded by gpu 1
}
