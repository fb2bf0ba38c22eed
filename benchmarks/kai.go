package benchmarks

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// KAI315 is the cluster of the KAI-Scheduler report (issue #315 of
// kai-scheduler/KAI-Scheduler: 2.35 s scheduling cycles at 4,000 nodes and
// 140,000 pods, most of it spent building a snapshot) with a GPU on every
// host: 4,000 DGX H100 hosts (32,000 GPUs), 32 to a ToR, 8 ToRs to a spine.
var KAI315 = topology.Generator{Name: "kai315", Machine: "dgx-h100", Hosts: 4000, HostsPerToR: 32, ToRsPerSpine: 8}

// KAI315 fixture sizes: 100,000 running jobs and 40,000 pending, as in
// the report's 140,000 pods.
const (
	kaiRunning = 100000
	kaiPending = 40000
)

// kaiCases: full and incremental cycles on the KAI #315 cluster (issue 14).
func kaiCases() []Case {
	const doc = " on " + "kai315 (4,000 DGX H100 hosts, 32,000 GPUs, 90% of them held by about 2,500 GPU jobs of the scheduling mix, and CPU-only jobs — 1 to 4 cores, 4 to 16 GiB — up to 100,000 running jobs, as most pods of the report are) with 40,000 pending jobs of the mix in 20 queues"
	return []Case{
		{
			Name: "Schedule/kai315/full", BenchTime: "5x", Figures: []Figure{fig("ms/op", 50, 14)},
			Doc: "one cycle with cold caches" + doc + "; the Scheduler is rebuilt outside the timer for every op",
			F:   func(b *testing.B) { benchFullOf(b, kaiWorld(b), kaiPending) },
		},
		{
			Name: "Schedule/kai315/incremental", BenchTime: "1s", Figures: []Figure{fig("ms/op", 2, 14)},
			Doc: "the cycle after the running job that ends first finishes" + doc + " (each job bound is replaced by a new pending one outside the timer); Config.OmitPending, as a host of this size would set: Decision.Pending does not list the 40,000 waiting jobs every cycle (Job(id).Reason answers for any)",
			F:   func(b *testing.B) { benchIncrementalOf(b, kaiWorld(b), kaiPending, true) },
		},
		{
			Name: "Schedule/kai315/incremental-listed", BenchTime: "1s", Figures: []Figure{fig("ms/op", 2, 14)},
			Doc: "Schedule/kai315/incremental with every waiting job listed in Decision.Pending (OmitPending off): the rows of leaves whose jobs, stop and explanations did not change are kept from the last cycle and patched where a class's reason changed, so the listing costs a copy of every row plus the rows that changed; the host hands each Decision back when done (Scheduler.Recycle), so the array of rows is reused",
			F:   func(b *testing.B) { benchIncrementalOf(b, kaiWorld(b), kaiPending, false) },
		},
	}
}

// kaiWorld is the world of KAI315: the scheduling world (GPU jobs of the
// mix on 90% of the GPUs), then CPU-only jobs spread over the hosts,
// round-robin with random sizes (PCG stream of the world), until
// kaiRunning jobs run. Their claims are made directly on the ledger: a
// CPU-only task may go on any host with the CPU and memory.
func kaiWorld(b testing.TB) *schedWorld {
	return cached(b, "world/kai315", func() (*schedWorld, error) {
		s, err := KAI315.Spec()
		if err != nil {
			return nil, err
		}
		c, err := topology.Build(s)
		if err != nil {
			return nil, err
		}
		w, l, r, err := newWorld(c, false)
		if err != nil {
			return nil, err
		}
		h := 0
		for k := 0; len(w.running) < kaiRunning; k++ {
			cpu, mem := int64(1+r.IntN(4))*1000, int64(4+r.IntN(13))<<10
			cl := topology.Claim{CPUMilli: cpu, MemoryMiB: mem}
			for tries := 0; ; tries++ {
				if tries == c.NumHosts() {
					return nil, fmt.Errorf("no host has %d milli-CPU and %d MiB left", cpu, mem)
				}
				cl.Host = topology.HostID(h)
				h = (h + 1) % c.NumHosts()
				if l.CPUFree(cl.Host) >= cpu && l.MemoryFree(cl.Host) >= mem {
					break
				}
			}
			if err := l.Allocate(cl); err != nil {
				return nil, err
			}
			j := workload.Job{ID: "cpu" + strconv.Itoa(k), Queue: w.leaves[r.IntN(len(w.leaves))], Priority: int32(r.IntN(4)),
				Runtime: time.Duration(1+r.IntN(48)) * 30 * time.Minute, Groups: []workload.TaskGroup{{Count: 1, CPUMilli: cpu, MemoryMiB: mem}}}
			start := w.t0.Add(-time.Duration(r.IntN(int(j.Runtime/time.Second))) * time.Second)
			w.running = append(w.running, running{spec: j, tasks: [][]topology.Claim{{cl}}, start: start})
		}
		return w, nil
	})
}
