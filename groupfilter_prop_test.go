package gpusched

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// groupMasks draws, for each of n groups, the hosts (a bit each, of
// hosts) its filter allows.
func groupMasks(t *rapid.T, n, hosts int) []uint64 {
	masks := make([]uint64, n)
	for i := range masks {
		masks[i] = rapid.Uint64Range(1, 1<<hosts-1).Draw(t, "groupHosts")
	}
	return masks
}

// groupJob draws a gang of 2–3 whole-GPU groups of 1–2 tasks.
func groupJob(t *rapid.T, id string, prio int32) workload.Job {
	j := workload.Job{ID: id, Queue: "q", Priority: prio, Runtime: time.Hour}
	for i := range rapid.IntRange(2, 3).Draw(t, "groups") {
		j.Groups = append(j.Groups, workload.TaskGroup{Name: fmt.Sprintf("g%d", i), Count: rapid.IntRange(1, 2).Draw(t, "count"),
			GPUs: rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "gpus")})
	}
	return j
}

// maskFilter is the HostFilter of masks (by group), keyed by them.
func maskFilter(masks []uint64) HostFilter {
	return HostFilter{Key: fmt.Sprint(masks), Group: func(g int, h topology.HostID) bool { return masks[g]>>uint(h)&1 == 1 }}
}

// checkGroupHosts fails if a task of p is on a host its group's mask
// refuses.
func checkGroupHosts(t *rapid.T, what, id string, p *gang.Placement, masks []uint64) {
	for i, cl := range p.Claims {
		g := p.Tasks[i].Group
		if masks[g]>>uint(cl.Host)&1 == 0 {
			t.Fatalf("%s of %s: task %v on host %d, its group allows %b", what, id, p.Tasks[i], cl.Host, masks[g])
		}
	}
}

// bruteGroups reports whether the tasks of j fit the free GPUs of l's
// healthy hosts, each task on a host its group's mask allows: every
// assignment tried (the naive oracle).
func bruteGroups(l topology.LedgerReader, j workload.Job, masks []uint64) bool {
	c := l.Cluster()
	free := make([]int, c.NumHosts())
	for h := range free {
		free[h] = l.HostFreeGPUs(topology.HostID(h))
	}
	var tasks []int // group of each task
	for g, tg := range j.Groups {
		for range tg.Count {
			tasks = append(tasks, g)
		}
	}
	var assign func(k int) bool
	assign = func(k int) bool {
		if k == len(tasks) {
			return true
		}
		g := tasks[k]
		need := j.Groups[g].GPUs
		for h := range free {
			if masks[g]>>uint(h)&1 == 0 || free[h] < need {
				continue
			}
			free[h] -= need
			ok := assign(k + 1)
			free[h] += need
			if ok {
				return true
			}
		}
		return false
	}
	return assign(0)
}

// TestPropertyGroupFilters (issue 26, defect 4) checks SetHostFilter's
// per-group restriction against a naive oracle on random clusters of 2–4
// hosts: random fillers run (one task, no filter), then one gang of 2–3
// groups with a random allowed host set per group arrives; it is placed
// in that cycle exactly when some assignment of its tasks to free GPUs
// on allowed hosts exists (bruteGroups), each task on a host its group
// allows. Then more such gangs arrive, some of higher priority than the
// fillers (a PlanPreemptor plans evictions for them, carried out at
// once), for a few cycles: no binding ever puts a task on a host its
// group's filter refuses.
func TestPropertyGroupFilters(t *testing.T) {
	var placed, waited, preempted int
	rapid.Check(t, func(rt *rapid.T) {
		hosts := rapid.IntRange(2, 4).Draw(rt, "hosts")
		c := testCluster(t, hosts, 2)
		p, err := NewPlanPreemptor(preempt.Config{}, 0)
		if err != nil {
			rt.Fatal(err)
		}
		s, err := New(Config{Cluster: c, DefaultRuntime: time.Hour, Preemptor: p, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
		if err != nil {
			rt.Fatal(err)
		}
		now := t0
		for i := range rapid.IntRange(0, 2*hosts).Draw(rt, "fillers") {
			f := gpuJob(fmt.Sprintf("f%d", i), rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(rt, "fillerGPUs"))
			if err := s.Submit(f, now); err != nil {
				rt.Fatal(err)
			}
		}
		masks := map[string][]uint64{}
		schedule := func() *Decision {
			now = now.Add(time.Minute)
			d := s.Schedule(now)
			for _, b := range d.Bindings {
				if m, ok := masks[b.Job]; ok {
					checkGroupHosts(rt, "binding", b.Job, b.Placement, m)
				}
				if err := s.Started(b.Job, now); err != nil {
					rt.Fatal(err)
				}
			}
			for _, v := range d.Preemptions {
				preempted++
				if err := s.Preempted(v.Job, now); err != nil {
					rt.Fatal(err)
				}
			}
			return &d
		}
		schedule()
		// One gang alone: placed exactly when the oracle finds room.
		j := groupJob(rt, "g0", 0)
		masks[j.ID] = groupMasks(rt, len(j.Groups), hosts)
		fits := bruteGroups(s.Ledger(), j, masks[j.ID])
		if err := s.Submit(j, now); err != nil {
			if fits {
				rt.Fatalf("gang %+v refused, the oracle fits it: %v", j.Groups, err)
			}
			return // (larger than the cluster)
		}
		if err := s.SetHostFilter(j.ID, maskFilter(masks[j.ID])); err != nil {
			rt.Fatal(err)
		}
		d := schedule()
		got := slices.ContainsFunc(d.Bindings, func(b Binding) bool { return b.Job == j.ID })
		if got != fits {
			rt.Fatalf("gang %+v with group hosts %b: placed %v, the oracle says %v:\n%s", j.Groups, masks[j.ID], got, fits, d.Format(c))
		}
		if got {
			placed++
		} else {
			waited++
		}
		// More gangs, some preempting the fillers.
		for i := 1; i <= 3; i++ {
			j := groupJob(rt, fmt.Sprintf("g%d", i), int32(rapid.IntRange(0, 2).Draw(rt, "prio")))
			masks[j.ID] = groupMasks(rt, len(j.Groups), hosts)
			if err := s.Submit(j, now); err != nil {
				continue // (larger than the cluster)
			}
			if err := s.SetHostFilter(j.ID, maskFilter(masks[j.ID])); err != nil {
				rt.Fatal(err)
			}
			schedule()
			schedule()
		}
	})
	t.Logf("alone: %d placed, %d waited; %d preemptions", placed, waited, preempted)
}
