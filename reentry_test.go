package gpusched

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// mutators are the Scheduler's methods that change it, each called as a
// callback would (arguments that would be refused anyway: ErrReentrant
// must come first). Schedule has no error: called back in, it returns an
// empty Decision.
var mutators = map[string]func(s *Scheduler, now time.Time) error{
	"Submit": func(s *Scheduler, now time.Time) error {
		return s.Submit(workload.Job{ID: "new", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, now)
	},
	"Started":  func(s *Scheduler, now time.Time) error { return s.Started("a", now) },
	"Finished": func(s *Scheduler, now time.Time) error { return s.Finished("a", now) },
	"Failed":   func(s *Scheduler, now time.Time) error { return s.Failed("a", now) },
	"Cancel":   func(s *Scheduler, now time.Time) error { return s.Cancel("a", now) },
	"ForgetEnded": func(s *Scheduler, now time.Time) error {
		_, err := s.ForgetEnded("a")
		return err
	},
	"Requeue":   func(s *Scheduler, now time.Time) error { return s.Requeue("a", now) },
	"Preempted": func(s *Scheduler, now time.Time) error { return s.Preempted("a", now) },
	"Checkpointed": func(s *Scheduler, now time.Time) error {
		return s.Checkpointed("a", now, now)
	},
	"SetPriority": func(s *Scheduler, now time.Time) error { return s.SetPriority("a", 10) },
	"SetGPUHealth": func(s *Scheduler, now time.Time) error {
		_, err := s.SetGPUHealth(0, topology.Failed)
		return err
	},
	"SetHostFilter": func(s *Scheduler, now time.Time) error {
		return s.SetHostFilter("a", HostFilter{Key: "k", Allow: func(topology.HostID) bool { return true }})
	},
	"SetHostHealth": func(s *Scheduler, now time.Time) error {
		_, err := s.SetHostHealth(s.Cluster().HostName(0), topology.Failed)
		return err
	},
	"EvictionRefused": func(s *Scheduler, now time.Time) error { return s.EvictionRefused("a", now, "pdb") },
	"Migrated":        func(s *Scheduler, now time.Time) error { return s.Migrated("a", now) },
	"Shrunk":          func(s *Scheduler, now time.Time) error { return s.Shrunk("a", now) },
	"Grown":           func(s *Scheduler, now time.Time) error { return s.Grown("a", now) },
	"AddHosts": func(s *Scheduler, now time.Time) error {
		return s.AddHosts(topology.Change{}, now)
	},
	"RemoveHosts": func(s *Scheduler, now time.Time) error {
		_, err := s.RemoveHosts([]string{s.Cluster().HostName(0)}, now)
		return err
	},
	"SetHostGPUs": func(s *Scheduler, now time.Time) error {
		_, err := s.SetHostGPUs(s.Cluster().HostName(0), "x", nil, now)
		return err
	},
	"Reconfigure": func(s *Scheduler, now time.Time) error {
		_, err := s.Reconfigure(queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}, nil, now)
		return err
	},
	"Cordon":   func(s *Scheduler, now time.Time) error { return s.Cordon(s.Cluster().HostName(0)) },
	"Uncordon": func(s *Scheduler, now time.Time) error { return s.Uncordon(s.Cluster().HostName(0)) },
	"SetDomainHealth": func(s *Scheduler, now time.Time) error {
		_, err := s.SetDomainHealth(s.Cluster().DomainName(0), topology.Failed)
		return err
	},
	"Restore": func(s *Scheduler, now time.Time) error {
		return s.Restore(workload.Job{ID: "r", Queue: "q"}, nil, queue.Admitted, now, time.Time{})
	},
	"RestoreJob":         func(s *Scheduler, now time.Time) error { return s.RestoreJob(RestoredJob{}) },
	"RestoreQueueUsage":  func(s *Scheduler, now time.Time) error { return s.RestoreQueueUsage("q", fairshare.Usage{}) },
	"RestoreNomination":  func(s *Scheduler, now time.Time) error { return s.RestoreNomination(Nomination{}) },
	"RestoreNoPlan":      func(s *Scheduler, now time.Time) error { return s.RestoreNoPlan(NoPlan{}) },
	"RestoreDefrag":      func(s *Scheduler, now time.Time) error { return s.RestoreDefrag(DefragState{}) },
	"RestoreResize":      func(s *Scheduler, now time.Time) error { return s.RestoreResize(Resize{}) },
	"RestoreConsolidate": func(s *Scheduler, now time.Time) error { return s.RestoreConsolidate(ConsolidateState{}) },
	"RestoreReservation": func(s *Scheduler, now time.Time) error { return s.RestoreReservation(Reservation{}) },
	"RestoreRefusal":     func(s *Scheduler, now time.Time) error { return s.RestoreRefusal(Refusal{}) },
	"RestoreRecovery":    func(s *Scheduler, now time.Time) error { return s.RestoreRecovery(RecoveryState{}) },
	"RestoreStopping":    func(s *Scheduler, now time.Time) error { return s.RestoreStopping("a") },
	"RestoreTombstone":   func(s *Scheduler, now time.Time) error { return s.RestoreTombstone(Tombstone{}) },
	"RestoreFresh":       func(s *Scheduler, now time.Time) error { return s.RestoreFresh("a") },
	"Recycle": func(s *Scheduler, now time.Time) error {
		s.Recycle(Decision{Pending: make([]Pending, 1<<20)}) // refused: not kept
		if cap(s.cyc.list.recycled) == 1<<20 {
			return errors.New("Recycle from a callback kept the array")
		}
		return ErrReentrant
	},
	"Schedule": func(s *Scheduler, now time.Time) error {
		if d := s.Schedule(now); !reflect.DeepEqual(d, Decision{Now: s.Now()}) {
			return errors.New("Schedule from a callback decided something")
		}
		return ErrReentrant
	},
}

// readers are the Scheduler's methods that change nothing: a callback may
// call them. (State, Config and Submissions: read methods other changes
// add.)
var readers = []string{"Cluster", "ConsolidateState", "DefragState", "Fresh", "Holding", "Job", "Leaving", "Ledger",
	"Len", "NoPlans", "Nominations", "Now", "Progress", "Queues", "RecoveryState", "Refusals", "Reservations", "Resizes", "Stopping",
	"Tree", "Tombstones", "State", "Config", "Submissions"}

// TestEveryMethodClassified: each exported method of *Scheduler is a
// mutator (TestCallbackReentrancy checks it refuses to run inside a
// callback) or a reader — a method added later must be classified.
func TestEveryMethodClassified(t *testing.T) {
	st := reflect.TypeFor[*Scheduler]()
	for i := range st.NumMethod() {
		name := st.Method(i).Name
		if _, ok := mutators[name]; !ok && !slices.Contains(readers, name) {
			t.Errorf("Scheduler.%s is neither in mutators nor in readers (reentry_test.go)", name)
		}
	}
}

// reentrantPreemptor and reentrantPlacer run a callback whenever the
// Scheduler calls them.
type reentrantPreemptor struct{ fn func() }

func (p reentrantPreemptor) Preempt(PreemptView, PreemptCandidate, time.Time) []Preemption {
	p.fn()
	return nil
}

type reentrantPlacer struct {
	gang.Placer
	fn func()
}

func (p reentrantPlacer) Place(l *topology.Ledger, r *gang.Request, pl *gang.Placement) *gang.Explanation {
	p.fn()
	return p.Placer.Place(l, r, pl)
}

// TestCallbackReentrancy is issue 25's defect 5: every method that
// changes the Scheduler, called from inside every kind of callback —
// Holding's, a queue reader's Ascend, the ledger reader's AscendHosts,
// AscendDomains and AscendSharedGPUs, a Preemptor's and a Placer's during
// Schedule — returns an error wrapping ErrReentrant (Schedule an empty
// Decision) and changes nothing; never a panic. Read methods work there,
// and each mutator works once the callback returned.
func TestCallbackReentrancy(t *testing.T) {
	type kind struct {
		name string
		run  func(s *Scheduler, fn func()) // runs fn inside the callback
	}
	kinds := []kind{
		{"Holding", func(s *Scheduler, fn func()) {
			s.Holding(func(string, JobStatus) bool { fn(); return false })
		}},
		{"Tree.Leaf.Ascend", func(s *Scheduler, fn func()) {
			l, _ := s.Tree().Leaf("q")
			l.Ascend(func(queue.PendingJob) bool { fn(); return false })
		}},
		{"Tree.LeafOf.Ascend", func(s *Scheduler, fn func()) {
			id, _ := s.Tree().Lookup("q")
			l, _ := s.Tree().LeafOf(id)
			l.Ascend(func(queue.PendingJob) bool { fn(); return false })
		}},
		{"Ledger.AscendHosts", func(s *Scheduler, fn func()) {
			s.Ledger().AscendHosts(s.Cluster().Root(), topology.NoModel, 0, func(topology.HostID, int) bool { fn(); return false })
		}},
		{"Ledger.AscendDomains", func(s *Scheduler, fn func()) {
			s.Ledger().AscendDomains(topology.LevelHost, 0, func(topology.DomainID, int) bool { fn(); return false })
		}},
		{"Ledger.AscendSharedGPUs", func(s *Scheduler, fn func()) {
			s.Ledger().AscendSharedGPUs(0, 0, func(topology.GPUID, int) bool { fn(); return false })
		}},
		{"Preemptor", nil},
		{"Placer", nil},
	}
	names := make([]string, 0, len(mutators))
	for name := range mutators {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, k := range kinds {
		for _, name := range names {
			t.Run(k.name+"/"+name, func(t *testing.T) {
				var hook func()
				cfg := Config{Cluster: testCluster(t, 2, 0), Queues: queue.Config{
					PriorityClasses: []queue.PriorityClass{{Name: "low", Value: 0}, {Name: "high", Value: 10}},
					Root:            queue.Node{Children: []queue.Node{{Name: "q"}}}}}
				switch k.name {
				case "Preemptor":
					cfg.Preemptor = reentrantPreemptor{fn: func() { hook() }}
				case "Placer":
					p, err := gang.New("topology", gang.Options{})
					if err != nil {
						t.Fatal(err)
					}
					cfg.Placer = reentrantPlacer{Placer: p, fn: func() { hook() }}
				}
				s, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				// a runs on a shared GPU (so that AscendSharedGPUs has one
				// to visit), b fills the rest, c waits.
				jobs := []workload.Job{
					{ID: "a", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUMilli: 500}}},
					{ID: "b", Queue: "q", Groups: []workload.TaskGroup{{Name: "x", Count: 1, GPUs: 7}, {Name: "y", Count: 1, GPUs: 8}}},
				}
				hook = func() {}
				for _, j := range jobs {
					if err := s.Submit(j, t0); err != nil {
						t.Fatal(err)
					}
				}
				bindAndStart(t, s, t0)
				if err := s.Submit(workload.Job{ID: "c", Queue: "q", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, t0); err != nil {
					t.Fatal(err)
				}
				now := t0.Add(time.Minute)
				gen := s.Ledger().Generation()
				called := 0
				var got error
				hook = func() {
					called++
					if called > 1 {
						return
					}
					got = mutators[name](s, now)
					// Reads work inside a callback.
					s.Holding(func(string, JobStatus) bool { return true })
					if _, ok := s.Job("a"); !ok {
						t.Error("Job(a) inside the callback")
					}
				}
				if k.run != nil {
					k.run(s, hook)
				} else {
					// The Preemptor is asked for c, which the Placer placed
					// first; the next cycle runs without the hook.
					s.Schedule(now)
				}
				hook = func() {}
				if called == 0 {
					t.Fatal("the callback never ran")
				}
				if !errors.Is(got, ErrReentrant) {
					t.Fatalf("%s inside %s: %v, want ErrReentrant", name, k.name, got)
				}
				if k.run != nil && s.Ledger().Generation() != gen {
					t.Error("the ledger changed")
				}
				if s.Len() != 3 && k.run != nil {
					t.Errorf("%d jobs after a refused %s", s.Len(), name)
				}
				if err := s.Ledger().Check(); err != nil {
					t.Fatal(err)
				}
				// Outside the callback, the call is not refused as reentrant.
				if err := mutators[name](s, now); errors.Is(err, ErrReentrant) && name != "Schedule" {
					t.Errorf("%s outside a callback: %v", name, err)
				}
			})
		}
	}
}

// TestUncomparablePlacer: a Placer whose values cannot be compared (a
// struct holding a func, as reentrantPlacer) is a valid Config.Placer. The
// PlanPreemptor and the defragmenter compared it with the placer they
// were built for and panicked ("comparing uncomparable type") on the
// first plan; they now rebuild instead. FuzzEvents found it.
func TestUncomparablePlacer(t *testing.T) {
	base, err := gang.New("topology", gang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlanPreemptor(preempt.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	s, err := New(Config{Cluster: testCluster(t, 2, 2), Preemptor: p, Defrag: &DefragConfig{},
		Placer: reentrantPlacer{Placer: base, fn: func() { calls++ }},
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, prio int32, gpus int) workload.Job {
		return workload.Job{ID: id, Queue: "q", Priority: prio, Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus}}}
	}
	for _, j := range []workload.Job{job("a", 0, 4), job("b", 0, 4), job("c", 0, 4), job("d", 0, 4)} {
		if err := s.Submit(j, t0); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range s.Schedule(t0).Bindings {
		if err := s.Started(b.Job, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Submit(job("urgent", 10, 8), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		d := s.Schedule(t0.Add(time.Duration(i+1) * time.Minute)) // must not panic
		for _, v := range d.Preemptions {
			if err := s.Preempted(v.Job, t0.Add(time.Duration(i+1)*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st, _ := s.Job("urgent"); st.State != queue.Running && st.State != queue.Admitted {
		t.Errorf("urgent is %v (%v)", st.State, st.Reason)
	}
	if calls == 0 {
		t.Error("the placer was never called")
	}
}
