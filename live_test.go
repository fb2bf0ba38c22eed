package gpusched

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// liveHost drives a Scheduler as a host would through random live
// changes: it starts what is bound, stops what recovery asks to stop,
// finishes jobs, and remembers every job it submitted.
type liveHost struct {
	t     *rapid.T
	s     *Scheduler
	now   time.Time
	order []string // submission order
	specs map[string]workload.Job
	ended map[string]bool
	n     int
}

func (h *liveHost) submit(nq int) {
	g := shapes[rapid.IntRange(0, 5).Draw(h.t, "shape")]
	spec := workload.Job{ID: fmt.Sprintf("j%03d", h.n), Queue: fmt.Sprintf("q%d", rapid.IntRange(0, nq-1).Draw(h.t, "queue")),
		Groups: []workload.TaskGroup{g}, Runtime: time.Hour}
	h.n++
	if err := h.s.Submit(spec, h.now); err != nil {
		if errors.Is(err, ErrNeverFits) {
			return
		}
		h.t.Fatalf("Submit: %v", err)
	}
	h.order = append(h.order, spec.ID)
	h.specs[spec.ID] = spec
}

// cycle runs Schedule and carries out its decision.
func (h *liveHost) cycle() Decision {
	h.now = h.now.Add(time.Minute)
	d := h.s.Schedule(h.now)
	for _, b := range d.Bindings {
		if err := h.s.Started(b.Job, h.now); err != nil {
			h.t.Fatalf("Started: %v", err)
		}
	}
	for _, r := range d.Recoveries {
		var err error
		switch r.Action {
		case preempt.ActionEnd:
			err = h.s.Failed(r.Job, h.now)
			h.ended[r.Job] = true
		case preempt.ActionKeep:
		default:
			err = h.s.Requeue(r.Job, h.now)
		}
		if err != nil {
			h.t.Fatalf("acting on recovery %+v: %v", r, err)
		}
	}
	h.check()
	return d
}

// finish ends a random running job.
func (h *liveHost) finish() {
	var running []string
	h.s.Holding(func(id string, st JobStatus) bool {
		if st.State == queue.Running {
			running = append(running, id)
		}
		return true
	})
	if len(running) == 0 {
		return
	}
	slices.Sort(running)
	id := running[rapid.IntRange(0, len(running)-1).Draw(h.t, "finished")]
	if err := h.s.Finished(id, h.now); err != nil {
		h.t.Fatalf("Finished: %v", err)
	}
	h.ended[id] = true
}

// check: the ledger's counters and indexes hold; no GPU is held twice (the
// holding jobs' claims all fit together on an empty ledger); every job
// submitted is live or was ended by the host.
func (h *liveHost) check() {
	s := h.s
	if err := s.ledger.Check(); err != nil {
		h.t.Fatalf("ledger: %v", err)
	}
	var claims []topology.Claim
	s.Holding(func(id string, st JobStatus) bool {
		for _, cl := range st.Placement.Claims {
			if s.c.Removed(cl.Host) {
				h.t.Fatalf("job %s holds a removed host %s", id, s.c.HostName(cl.Host))
			}
		}
		claims = append(claims, st.Placement.Claims...)
		return true
	})
	if err := topology.NewLedger(s.c).TrialRestore(claims...); err != nil {
		h.t.Fatalf("claims of holding jobs overlap: %v", err)
	}
	for _, id := range h.order {
		_, live := s.Job(id)
		if live == h.ended[id] {
			h.t.Fatalf("job %s: live %v, ended %v", id, live, h.ended[id])
		}
	}
	if s.Len() != len(h.order)-len(h.ended) {
		h.t.Fatalf("%d live jobs, %d submitted, %d ended", s.Len(), len(h.order), len(h.ended))
	}
}

func liveQueues(rt *rapid.T, nq int, tag string) queue.Config {
	cfg := queue.Config{}
	left := int64(48)
	for i := range nq {
		nom := min(left, rapid.Int64Range(0, 20).Draw(rt, tag+" nominal"))
		left -= nom
		cfg.Root.Children = append(cfg.Root.Children, queue.Node{Name: fmt.Sprintf("q%d", i),
			Quotas: []queue.Quota{{Resource: "gpu", Nominal: nom}}})
	}
	return cfg
}

// TestLiveChangesProperty drives a Scheduler through random cycles and
// live changes — hosts joining existing and new ToRs, hosts leaving with
// their jobs drained, hosts changing shape, cordons, a ToR failing and
// healing, quota edits and queues removed with their jobs moved — and
// checks after every step that no job is lost or placed twice. At the end
// it builds a Scheduler fresh from the final cluster (Cluster.Spec), queue
// config, cordons and jobs (RestoreJob, in submission order, each with its
// state, queue, times, counts and progress as the live one reports them)
// and checks that both make the same decisions from then on, exactly
// (decisionDiff: states and reasons in full, but for explanations the
// live side repeats from its failure cache).
func TestLiveChangesProperty(t *testing.T) {
	base := testCluster(t, 6, 2) // 48 GPUs, 3 ToRs of 2 DGX H100
	var changes, requeued, exact, stale int
	rapid.Check(t, func(rt *rapid.T) {
		nq := rapid.IntRange(2, 3).Draw(rt, "queues")
		cfg := liveQueues(rt, nq, "start")
		s, err := New(Config{Cluster: base, Queues: cfg})
		if err != nil {
			rt.Fatal(err)
		}
		h := &liveHost{t: rt, s: s, now: t0, specs: map[string]workload.Job{}, ended: map[string]bool{}}
		for range rapid.IntRange(3, 12).Draw(rt, "initial jobs") {
			h.submit(nq)
		}
		h.cycle()
		tmpl := base.Host(0).Template
		for step := range rapid.IntRange(1, 8).Draw(rt, "steps") {
			c := s.Cluster()
			tors := c.DomainsAt(topology.LevelHost + 1)
			var live []string
			for hid := range c.NumHosts() {
				if !c.Removed(topology.HostID(hid)) && !s.live.going(c.HostName(topology.HostID(hid))) {
					live = append(live, c.HostName(topology.HostID(hid)))
				}
			}
			switch rapid.IntRange(0, 8).Draw(rt, "action") {
			case 0:
				h.submit(nq)
			case 1:
				h.finish()
			case 2: // a host joins an existing ToR
				tor := c.DomainName(tors[rapid.IntRange(0, len(tors)-1).Draw(rt, "tor")])
				if err := s.AddHosts(topology.Change{Hosts: []topology.HostGroup{{Name: fmt.Sprintf("new%d", step), Template: tmpl, Parent: tor}}}, h.now); err != nil {
					rt.Fatalf("AddHosts: %v", err)
				}
				changes++
			case 3: // a new ToR with a host
				spine := c.DomainName(c.DomainParent(tors[0]))
				ch := topology.Change{Hosts: []topology.HostGroup{{Name: fmt.Sprintf("new%d", step), Template: tmpl, Parent: fmt.Sprintf("ntor%d", step)}}}
				if c.DomainKindOf(c.DomainParent(tors[0])) == topology.KindNetwork {
					ch.Switches = []topology.SwitchGroup{{Name: fmt.Sprintf("ntor%d", step), Level: c.LevelName(topology.LevelHost + 1), Parent: spine}}
				} else {
					ch.Switches = []topology.SwitchGroup{{Name: fmt.Sprintf("ntor%d", step), Level: c.LevelName(topology.LevelHost + 1)}}
				}
				if err := s.AddHosts(ch, h.now); err != nil {
					rt.Fatalf("AddHosts: %v", err)
				}
				changes++
			case 4: // a host leaves, its jobs drained
				if len(live) > 2 {
					name := live[rapid.IntRange(0, len(live)-1).Draw(rt, "removed")]
					if _, err := s.RemoveHosts([]string{name}, h.now); err != nil && !errors.Is(err, ErrLiveChange) {
						rt.Fatalf("RemoveHosts: %v", err)
					}
					changes++
				}
			case 5: // a host comes back with 4 GPUs
				if len(live) > 2 {
					name := live[rapid.IntRange(0, len(live)-1).Draw(rt, "reshaped")]
					small := topology.HostTemplate{Name: fmt.Sprintf("small%d", step), CPUMilli: 100000, MemoryMiB: 1 << 20, Accelerator: c.Models()[0].Model, GPUs: 4}
					if _, err := s.SetHostGPUs(name, small.Name, []topology.HostTemplate{small}, h.now); err != nil && !errors.Is(err, ErrLiveChange) {
						rt.Fatalf("SetHostGPUs: %v", err)
					}
					changes++
				}
			case 6: // cordon or uncordon
				name := live[rapid.IntRange(0, len(live)-1).Draw(rt, "cordoned")]
				hid, _ := c.HostByName(name)
				if err := s.cordon(name, !s.ledger.HostCordoned(hid)); err != nil && !s.live.going(name) {
					rt.Fatalf("cordon: %v", err)
				}
			case 7: // a ToR fails, or heals
				tor := c.DomainName(tors[rapid.IntRange(0, len(tors)-1).Draw(rt, "sick tor")])
				hh := []topology.Health{topology.Failed, topology.Healthy}[rapid.IntRange(0, 1).Draw(rt, "tor health")]
				if _, err := s.SetDomainHealth(tor, hh); err != nil && !errors.Is(err, ErrLiveChange) { // a ToR whose hosts left
					rt.Fatalf("SetDomainHealth: %v", err)
				}
			case 8: // new quotas; maybe the last queue goes, its jobs to q0
				next := liveQueues(rt, nq, "edit")
				var moves []queue.Move
				if nq > 2 && rapid.Bool().Draw(rt, "drop queue") {
					next.Root.Children = next.Root.Children[:nq-1]
					moves = []queue.Move{{From: fmt.Sprintf("q%d", nq-1), To: "q0"}}
					nq--
				}
				var ce *queue.ConfigError
				if _, err := s.Reconfigure(next, moves, h.now); errors.As(err, &ce) || errors.Is(err, ErrLiveChange) {
					// Guarantees the cluster, shrunk, cannot give: no change.
					if len(moves) > 0 {
						nq++
					}
					break
				} else if err != nil {
					rt.Fatalf("Reconfigure: %v", err)
				}
				changes++
			}
			h.check()
			h.cycle()
		}
		// Quiesce: hosts waiting to leave lose their jobs and leave; every
		// part heals; recovery settles.
		for range 3 {
			for _, d := range s.live.draining {
				hid, _ := s.c.HostByName(d.name)
				for _, j := range slices.Clone(s.jobs.onHost[hid]) {
					if err := s.Finished(j.spec.ID, h.now); err != nil {
						rt.Fatalf("Finished: %v", err)
					}
					h.ended[j.spec.ID] = true
				}
			}
			h.cycle()
		}
		if len(s.live.draining) > 0 {
			hid, _ := s.c.HostByName(s.live.draining[0].name)
			rt.Fatalf("hosts still waiting to leave: %+v (%d jobs on the first; %v)", s.live.draining, len(s.jobs.onHost[hid]),
				s.checkCapacityWithout(s.cfg.Queues, []topology.HostID{hid}))
		}
		if _, err := s.SetDomainHealth(s.c.Name(), topology.Healthy); err != nil {
			rt.Fatal(err)
		}
		h.cycle()
		h.cycle()

		// The same state, built fresh.
		fc, err := topology.Build(s.Cluster().Spec())
		if err != nil {
			rt.Fatalf("rebuilding the cluster: %v", err)
		}
		f, err := New(Config{Cluster: fc, Queues: s.cfg.Queues})
		if err != nil {
			rt.Fatalf("a fresh Scheduler: %v", err)
		}
		// Every job as the live Scheduler holds it, history included:
		// its state (requeued and preempted too), its queue (where a
		// reconfiguration moved it), admission and start times, counts
		// and progress (RestoreJob).
		for _, id := range h.order {
			st, ok := s.Job(id)
			if !ok {
				continue
			}
			r := RestoredJob{Spec: st.Spec, State: st.State, Submitted: st.Submitted, Admitted: st.Admitted, Started: st.Started,
				Now: h.now, Preemptions: st.Preemptions, Restarts: st.Restarts}
			cp, saved, _ := s.Progress(id)
			r.Progress = saved
			if st.State == queue.Running {
				r.Checkpoint = cp
			}
			if st.State.Holding() {
				r.Tasks = make([][]topology.Claim, len(st.Spec.Groups))
				for i, cl := range st.Placement.Claims {
					g := st.Placement.Tasks[i].Group
					r.Tasks[g] = append(r.Tasks[g], cl)
				}
			}
			if err := f.RestoreJob(r); err != nil {
				rt.Fatalf("restoring %s (%s): %v", id, st.State, err)
			}
			if st.State == queue.Requeued || st.State == queue.Preempted {
				requeued++
			}
		}
		for hid := range fc.NumHosts() {
			if s.ledger.HostCordoned(topology.HostID(hid)) {
				if err := f.Cordon(fc.HostName(topology.HostID(hid))); err != nil {
					rt.Fatal(err)
				}
			}
		}
		hf := &liveHost{t: rt, s: f, now: h.now, order: h.order, specs: h.specs, ended: h.ended}
		for k := range 4 {
			if k > 0 {
				h.finish() // the same job in both: the choice is drawn once
				for id := range h.ended {
					if _, live := f.Job(id); live {
						st, _ := f.Job(id)
						if st.State == queue.Running {
							if err := f.Finished(id, hf.now); err != nil {
								rt.Fatal(err)
							}
						}
					}
				}
			}
			ds, df := h.cycle(), hf.cycle()
			for i, p := range ds.Pending {
				if p.Reason.Stale(ds.Now) || i < len(df.Pending) && df.Pending[i].Reason.Stale(df.Now) {
					stale++
				} else {
					exact++
				}
			}
			if diff := decisionDiff(s.c, ds, fc, df); diff != "" {
				rt.Fatalf("cycle %d after the changes: live and fresh Schedulers differ: %s\nlive:\n%s\nfresh:\n%s", k, diff, ds.Format(s.c), df.Format(fc))
			}
		}
	})
	t.Logf("%d live changes; %d requeued or preempted jobs restored; waiting jobs compared: %d with their reasons in full, %d with a stale explanation (kind only)", changes, requeued, exact, stale)
	if changes == 0 {
		t.Error("no live change was exercised")
	}
}

// decisionDiff compares two decisions exactly and says how they differ
// ("" when they do not): what they decide (Format without the waiting
// jobs: bindings with their exact GPUs, preemptions, migrations,
// recoveries, expiries), and every waiting job in order with its queue,
// its state and its reason in full. One normalisation remains, and is
// history a fresh Scheduler cannot be given: a placer's explanation that
// a side repeats from its failure cache (Reason.Stale: computed in an
// earlier cycle and kept while nothing that could let the job fit has
// changed) quotes that cycle's free counts, and its verdict may have been
// another kind of placement failure (capacity taken since only makes the
// job fit less; GPUs freed where no task fits can turn capacity into
// fragmentation). When either side's reason is stale, the pair is
// compared with the explanation left out and its kind reduced to
// "placement"; every other field still counts.
func decisionDiff(ca *topology.Cluster, a Decision, cb *topology.Cluster, b Decision) string {
	acts := func(c *topology.Cluster, d Decision) string {
		d.Pending = nil
		return d.Format(c)
	}
	if x, y := acts(ca, a), acts(cb, b); x != y {
		return "what they decide"
	}
	if len(a.Pending) != len(b.Pending) {
		return fmt.Sprintf("%d waiting jobs against %d", len(a.Pending), len(b.Pending))
	}
	for i := range a.Pending {
		p, q := a.Pending[i], b.Pending[i]
		if p.Job != q.Job || p.Queue != q.Queue || p.State != q.State {
			return fmt.Sprintf("waiting job %d: %s (%s, %s) against %s (%s, %s)", i, p.Job, p.Queue, p.State, q.Job, q.Queue, q.State)
		}
		x, y := p.Reason.String(), q.Reason.String()
		if p.Reason.Stale(a.Now) || q.Reason.Stale(b.Now) {
			x, y = placementKind(p.Reason), placementKind(q.Reason)
		}
		if x != y {
			return fmt.Sprintf("%s's reason: %q against %q", p.Job, x, y)
		}
	}
	return ""
}

// placementKind is r without its placer's explanation, its code reduced
// to "placement" when it is a placement failure's.
func placementKind(r *Reason) string {
	if r == nil {
		return "<nil>"
	}
	c := *r
	c.Placement, c.ExplainedAt = nil, time.Time{}
	switch c.Code {
	case WaitCapacity, WaitTopology, WaitFragmentation, WaitTooLarge:
		return "placement " + strings.TrimPrefix(c.String(), c.Code.String())
	}
	return c.String()
}

func TestLiveChangeErrors(t *testing.T) {
	c := testCluster(t, 4, 2)
	s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	if err := s.AddHosts(topology.Change{Remove: []string{c.HostName(0)}}, now); !errors.Is(err, ErrLiveChange) {
		t.Errorf("AddHosts removing: %v", err)
	}
	var se *topology.SpecError
	if err := s.AddHosts(topology.Change{Hosts: []topology.HostGroup{{Name: "x", Template: "nope", Parent: c.DomainName(c.HostAt(0, topology.LevelHost+1))}}}, now); !errors.As(err, &se) {
		t.Errorf("AddHosts with an unknown template: %v", err)
	}
	if _, err := s.RemoveHosts([]string{"nope"}, now); !errors.Is(err, ErrLiveChange) {
		t.Errorf("RemoveHosts of an unknown host: %v", err)
	}
	if _, err := s.SetDomainHealth("nope", topology.Failed); !errors.Is(err, ErrLiveChange) {
		t.Errorf("SetDomainHealth of an unknown domain: %v", err)
	}
	if _, err := s.SetDomainHealth(c.DomainName(c.HostDomain(0)), topology.Failed); !errors.Is(err, ErrLiveChange) {
		t.Errorf("SetDomainHealth of a host domain: %v", err)
	}
	if err := s.Cordon("nope"); !errors.Is(err, ErrLiveChange) {
		t.Errorf("Cordon of an unknown host: %v", err)
	}
	var ce *queue.ConfigError
	if _, err := s.Reconfigure(queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q", Weight: -1}}}}, nil, now); !errors.As(err, &ce) {
		t.Errorf("Reconfigure with a bad weight: %v", err)
	}
	// A host running a job drains first, and leaves after its job.
	job := workload.Job{ID: "a", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}
	if err := s.Submit(job, now); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(now)
	if len(d.Bindings) != 1 {
		t.Fatalf("bindings %v", d.Bindings)
	}
	host := c.HostName(d.Bindings[0].Placement.Claims[0].Host)
	ids, err := s.RemoveHosts([]string{host}, now)
	if err != nil || !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("RemoveHosts: %v, %v", ids, err)
	}
	if _, err := s.RemoveHosts([]string{host}, now); !errors.Is(err, ErrLiveChange) {
		t.Errorf("removing a host twice: %v", err)
	}
	d = s.Schedule(now.Add(time.Minute))
	if len(d.Recoveries) != 1 || d.Recoveries[0].Job != "a" {
		t.Fatalf("recoveries %+v", d.Recoveries)
	}
	if _, ok := s.Cluster().HostByName(host); !ok {
		t.Fatal("the host left while its job held it")
	}
	if err := s.Requeue("a", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(now.Add(2 * time.Minute))
	if _, ok := s.Cluster().HostByName(host); ok {
		t.Fatal("the drained host did not leave")
	}
	if len(d.Bindings) != 1 || s.Cluster().HostName(d.Bindings[0].Placement.Claims[0].Host) == host {
		t.Fatalf("the job did not start elsewhere: %+v", d.Bindings)
	}
	_ = gang.Placement{}
}
