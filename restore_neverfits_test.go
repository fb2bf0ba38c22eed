package gpusched

import (
	"errors"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestRestoreKeepsJobThatNoLongerFits: a live change (a quota lowered, a
// host shrunk) can leave a waiting job that can never fit any more; the
// live Scheduler keeps it waiting, saying why. Its State must restore:
// a restart refused it ("job can never fit"), so a service crash-looped
// on its own saved state (found by TestLiveChangesProperty). The restored
// Scheduler decides as the original.
func TestRestoreKeepsJobThatNoLongerFits(t *testing.T) {
	max := int64(16)
	cfg := func(m int64) queue.Config {
		return queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 0, Max: &m}}}}}}
	}
	for _, change := range []string{"quota", "host"} {
		t.Run(change, func(t *testing.T) {
			s, err := New(Config{Cluster: testCluster(t, 2, 0), Queues: cfg(max)})
			if err != nil {
				t.Fatal(err)
			}
			run := gpuJob("r", 8)
			if change == "host" { // r holds both hosts
				run.Groups = []workload.TaskGroup{{Count: 2, GPUs: 8}}
			}
			if err := s.Submit(run, t0); err != nil {
				t.Fatal(err)
			}
			s.Schedule(t0)
			big := workload.Job{ID: "big", Queue: "q", Groups: []workload.TaskGroup{{Count: 2, GPUs: 8}}}
			if change == "host" {
				big.Groups = []workload.TaskGroup{{Count: 1, GPUs: 8}}
			}
			if err := s.Submit(big, t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			now := t0.Add(2 * time.Second)
			s.Schedule(now)
			switch change {
			case "quota": // big needs 16 GPUs; q may now use 8
				if _, err := s.Reconfigure(cfg(8), nil, now); err != nil {
					t.Fatal(err)
				}
			case "host": // both hosts become 4-GPU hosts; big needs 8 on one
				small := topology.HostTemplate{Name: "small", CPUMilli: 100000, MemoryMiB: 1 << 20, Accelerator: s.Cluster().Models()[0].Model, GPUs: 4}
				tmpl := []topology.HostTemplate{small}
				for h := range s.Cluster().NumHosts() {
					name := s.Cluster().HostName(topology.HostID(h))
					_, err := s.SetHostGPUs(name, small.Name, tmpl, now)
					tmpl = nil
					if err != nil && !errors.Is(err, ErrLiveChange) {
						t.Fatal(err)
					}
				}
				if err := s.Finished("r", now); err != nil {
					t.Fatal(err)
				}
			}
			d := s.Schedule(now.Add(time.Second))
			if st, _ := s.Job("big"); st.State != queue.Pending {
				t.Fatalf("big is %v, want pending:\n%s", st.State, d.Format(s.Cluster()))
			}
			r, err := Restore(s.State())
			if err != nil {
				t.Fatalf("restoring the State of a Scheduler keeping a job that no longer fits: %v", err)
			}
			later := now.Add(time.Minute)
			a, b := s.Schedule(later), r.Schedule(later)
			if decisionDiff(s.Cluster(), a, r.Cluster(), b) != "" {
				t.Errorf("restored decides otherwise:\n%s\nvs\n%s", a.Format(s.Cluster()), b.Format(r.Cluster()))
			}
		})
	}
}
