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

// filterStream is the state of one TestPropertyHostFiltersHold stream:
// the Scheduler, the masks of the filtered jobs (one per task group; a
// job-wide filter repeats its mask) and what the host has yet to report.
type filterStream struct {
	s     *Scheduler
	masks map[string][]uint64
	live  []string // submission order
	// seen counts the defragmentation moves, consolidation moves and
	// grows of filtered jobs issued.
	seen [3]int
}

// allows reports whether task group g of job id may use host h.
func (f *filterStream) allows(id string, g int, h topology.HostID) bool {
	m, ok := f.masks[id]
	return !ok || m[g]>>uint(h)&1 == 1
}

// submit draws a job — one task of 1–8 GPUs, an elastic gang of 4–8
// single GPUs (at least 2), two groups of a 4- or 8-GPU task, or two
// 8-GPU tasks in one ToR — and, half the time, a host filter: a
// job-wide mask or one mask per group.
func (f *filterStream) submit(t *rapid.T, now time.Time) {
	id := fmt.Sprintf("j%02d", len(f.live)+1)
	j := workload.Job{ID: id, Queue: "q", Runtime: time.Duration(rapid.IntRange(1, 20).Draw(t, "hours")) * time.Hour}
	switch rapid.IntRange(0, 3).Draw(t, "kind") {
	case 0:
		j.Groups = []workload.TaskGroup{{Count: 1, GPUs: rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "gpus")}}
	case 1:
		j.Groups = []workload.TaskGroup{{Count: rapid.IntRange(4, 8).Draw(t, "count"), MinCount: 2, GPUs: 1}}
	case 2:
		gpus := rapid.SampledFrom([]int{4, 8}).Draw(t, "gpus")
		j.Groups = []workload.TaskGroup{{Name: "a", Count: 1, GPUs: gpus}, {Name: "b", Count: 1, GPUs: gpus}}
	default:
		j.Groups = []workload.TaskGroup{{Count: 2, GPUs: 8}}
		j.Topology = []workload.Constraint{{Level: "tor", Required: true}}
	}
	if err := f.s.Submit(j, now); err != nil {
		return // never fits: rejected
	}
	f.live = append(f.live, id)
	f.refilter(t, id, len(j.Groups))
}

// refilter draws job id's filter (of its groups tasks groups) anew: half
// the time none, else a job-wide mask or one mask per group.
func (f *filterStream) refilter(t *rapid.T, id string, groups int) {
	hosts := f.s.Cluster().NumHosts()
	switch rapid.IntRange(0, 3).Draw(t, "filter") {
	case 0:
		m := rapid.Uint64Range(1, 1<<hosts-1).Draw(t, "mask")
		masks := slices.Repeat([]uint64{m}, groups)
		f.set(t, id, masks, HostFilter{Key: fmt.Sprintf("all%b", m), Allow: func(h topology.HostID) bool { return m>>uint(h)&1 == 1 }})
	case 1:
		masks := groupMasks(t, groups, hosts)
		f.set(t, id, masks, maskFilter(masks))
	default:
		if err := f.s.SetHostFilter(id, HostFilter{}); err != nil {
			t.Fatal(err)
		}
		delete(f.masks, id)
	}
}

func (f *filterStream) set(t *rapid.T, id string, masks []uint64, hf HostFilter) {
	if err := f.s.SetHostFilter(id, hf); err != nil {
		t.Fatal(err)
	}
	f.masks[id] = masks
}

// cycle runs a cycle at now, checks where its moves and grows go, and
// carries the Decision out as a host would (every stop, move, shrink and
// grow reported at once).
func (f *filterStream) cycle(t *rapid.T, now time.Time) {
	s := f.s
	d := s.Schedule(now)
	for _, m := range d.Migrations {
		for _, cl := range m.To {
			if !slices.ContainsFunc(f.masks[m.Job], func(x uint64) bool { return x>>uint(cl.Host)&1 == 1 }) && f.masks[m.Job] != nil {
				t.Fatalf("%s migrates to host %d, which its filter %b forbids:\n%s", m.Job, cl.Host, f.masks[m.Job], d.Format(s.Cluster()))
			}
		}
		if f.masks[m.Job] != nil && m.For != "" {
			f.seen[0]++
		} else if f.masks[m.Job] != nil {
			f.seen[1]++
		}
	}
	for _, g := range d.Grows {
		for i, cl := range g.Claims {
			if !f.allows(g.Job, int(g.Tasks[i].Group), cl.Host) {
				t.Fatalf("%s grows task %v onto host %d, which its filter forbids:\n%s", g.Job, g.Tasks[i], cl.Host, d.Format(s.Cluster()))
			}
		}
		if f.masks[g.Job] != nil {
			f.seen[2]++
		}
	}
	for _, b := range d.Bindings {
		must(t, s.Started(b.Job, now))
	}
	for _, p := range d.Preemptions {
		must(t, s.Preempted(p.Job, now))
	}
	for _, m := range d.Migrations {
		must(t, s.Migrated(m.Job, now))
	}
	for _, sh := range d.Shrinks {
		must(t, s.Shrunk(sh.Job, now))
	}
	for _, g := range d.Grows {
		must(t, s.Grown(g.Job, now))
	}
	for _, r := range d.Recoveries {
		switch r.Action {
		case preempt.ActionShrink:
			must(t, s.Shrunk(r.Job, now))
		case preempt.ActionRequeue, preempt.ActionDrain:
			must(t, s.Requeue(r.Job, now))
		case preempt.ActionEnd:
			must(t, s.Failed(r.Job, now))
		}
	}
}

func must(t *rapid.T, err error) {
	if err != nil {
		t.Fatal(err)
	}
}

// check fails if a holding job has a task on a host its filter (its
// group's) forbids.
func (f *filterStream) check(t *rapid.T, where string) {
	f.s.Holding(func(id string, st JobStatus) bool {
		f.checkPlacement(t, where, id, st.Placement)
		return true
	})
}

func (f *filterStream) checkPlacement(t *rapid.T, where, id string, p *gang.Placement) {
	for i, cl := range p.Claims {
		if g := int(p.Tasks[i].Group); !f.allows(id, g, cl.Host) {
			t.Fatalf("%s: %s has task %v on host %d, which its filter %b forbids", where, id, p.Tasks[i], cl.Host, f.masks[id])
		}
	}
}

// TestPropertyHostFiltersHold: on random streams over 4–6 DGX H100 hosts
// (two to a ToR) with defragmentation, consolidation, elastic gangs and
// plan preemption on, where half the jobs have a host filter (job-wide,
// or one per task group), drawn anew at times while they wait (a
// nominated job's too), with GPUs failing and coming back: no job ever
// holds a task on a host its filter forbids, nor is a migration or grow
// issued onto one — whatever path placed it (binding, nomination,
// defragmentation or consolidation move, grow after a shrink, placement
// again after a recovery).
func TestPropertyHostFiltersHold(t *testing.T) {
	var seen [3]int
	rapid.Check(t, func(rt *rapid.T) {
		c := h100Pairs(rt, rapid.IntRange(4, 6).Draw(rt, "hosts"))
		pp, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue}, 0)
		if err != nil {
			rt.Fatal(err)
		}
		s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Name: "root", Children: []queue.Node{{Name: "q"}}}},
			Preemptor: pp, Elastic: &ElasticConfig{}, Defrag: &DefragConfig{Consolidate: &ConsolidateConfig{}}})
		if err != nil {
			rt.Fatal(err)
		}
		f := &filterStream{s: s, masks: map[string][]uint64{}}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range rapid.IntRange(10, 40).Draw(rt, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(1, 90).Draw(rt, "minutes")) * time.Minute)
			switch rapid.IntRange(0, 10).Draw(rt, "op") {
			case 0, 1, 2:
				f.submit(rt, now)
			case 3: // a waiting job's constraints change (a running job's are kept, as the Kubernetes host does)
				for _, id := range f.live {
					if st, ok := s.Job(id); ok && st.State.Waiting() && rapid.Bool().Draw(rt, "this") {
						f.refilter(rt, id, len(st.Spec.Groups))
						break
					}
				}
			case 9: // a running job ends
				for _, id := range f.live {
					if st, ok := s.Job(id); ok && st.State == queue.Running {
						must(rt, s.Finished(id, now))
						break
					}
				}
			case 4: // a GPU fails (often one a job holds), or comes back
				g := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(rt, "gpu"))
				if rapid.Bool().Draw(rt, "held") {
					s.Holding(func(_ string, st JobStatus) bool {
						cl := st.Placement.Claims[len(st.Placement.Claims)-1]
						g = cl.GPUs[0].GPU
						return rapid.Bool().Draw(rt, "next")
					})
				}
				h := topology.Healthy
				if s.Ledger().GPU(g).Health == topology.Healthy {
					h = topology.Failed
				}
				if _, err := s.SetGPUHealth(g, h); err != nil {
					rt.Fatal(err)
				}
			default:
				f.cycle(rt, now)
			}
			f.check(rt, fmt.Sprintf("step %d", i))
		}
		for k := range seen {
			seen[k] += f.seen[k]
		}
	})
	t.Logf("filtered jobs: %d defragmentation moves, %d consolidation moves, %d grows", seen[0], seen[1], seen[2])
	if seen[0]+seen[1]+seen[2] == 0 {
		t.Error("no filtered job was ever moved or grown")
	}
}
