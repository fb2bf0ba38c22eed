package snapshot

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// CaptureOptions say what Capture cannot read from the Scheduler itself.
// The configuration (as last reconfigured) and the submission order come
// from the Scheduler (Scheduler.Config, Scheduler.Submissions).
type CaptureOptions struct {
	// Placer names the placer Config.Placer is (gang.New's name; empty
	// means topology), and Workload is the target workload it was built
	// with, which fgd needs.
	Placer   string
	Workload *frag.Distribution
	// Cluster, when not zero, is how the state names the cluster; it must
	// name the Scheduler's. The zero value names it as a preset when it is
	// one (the same spec as the preset of its name), and otherwise writes
	// it inline (Spec).
	Cluster Cluster
}

// The defaults gpusched.New gives Config.MaxGrace and MaxReservations
// when they are zero.
const (
	defaultMaxGrace        = time.Hour
	defaultMaxReservations = 4
)

// Capture returns the state of s at now: its cluster, the queue tree and
// configuration as last reconfigured (Scheduler.Config), the health of every GPU and host that is not
// healthy, and every live job (waiting, admitted, running) with its spec
// as submitted (priority as last set), state, submission and start times,
// progress and placement, in order of submission (Scheduler.Submissions
// breaks ties between jobs submitted at the same time). now must not be before
// any job's submission or start; it is the time a cycle on the loaded
// Scheduler runs at. Notes lists the package's limits that apply to
// this state.
//
// Capture only reads s. Cost: O(jobs × tasks + GPUs), and for a cluster
// named as a preset, building the preset once to compare.
func Capture(s *gpusched.Scheduler, now time.Time, opt CaptureOptions) (*State, error) {
	if now.IsZero() {
		return nil, errors.New("snapshot: Capture: zero now")
	}
	c := s.Cluster()
	config := s.Config()
	cfg := &config
	st := &State{Version: Version, Now: now, Placer: opt.Placer, Seed: cfg.Seed, DefaultRuntime: cfg.DefaultRuntime,
		MaxReservations: cfg.MaxReservations, MaxRestarts: cfg.MaxRestarts, DrainGrace: cfg.DrainGrace, DrainKeep: cfg.DrainKeep,
		AdmitTimeout: cfg.AdmitTimeout, MaxGrace: cfg.MaxGrace, BackfillAround: cfg.BackfillAround, ReserveDepth: cfg.ReserveDepth, Queues: cfg.Queues}
	// New's defaults are written as absent, as a Config that left them
	// zero has them (the file then reads as it did before
	// Scheduler.Config gave them).
	if st.MaxGrace == defaultMaxGrace {
		st.MaxGrace = 0
	}
	if st.MaxReservations == defaultMaxReservations {
		st.MaxReservations = 0
	}
	if cfg.Elastic != nil {
		st.Elastic = &Elastic{NoGrow: cfg.Elastic.NoGrow}
	}
	if st.Placer == "topology" {
		st.Placer = ""
	}
	if opt.Placer != "" && !slices.Contains(gang.PolicyNames(), opt.Placer) {
		return nil, fmt.Errorf("snapshot: Capture: unknown placer %q", opt.Placer)
	}
	switch {
	case opt.Placer == "fgd" && opt.Workload == nil:
		return nil, errors.New("snapshot: Capture: placer fgd needs its Workload")
	case opt.Placer == "fgd":
		for _, cl := range opt.Workload.Classes {
			wc := WorkloadClass{GPUs: cl.Task.GPUs, GPUMilli: cl.Task.GPUMilli, CPUMilli: cl.Task.CPUMilli, MemoryMiB: cl.Task.MemoryMiB, Weight: cl.Weight}
			for _, m := range cl.Task.Models {
				if m < 0 || int(m) >= len(c.Models()) {
					return nil, fmt.Errorf("snapshot: Capture: workload model %d is not one of cluster %s", m, c.Name())
				}
				wc.Models = append(wc.Models, c.Model(m).Model)
			}
			st.Workload = append(st.Workload, wc)
		}
	}
	st.Hosts = hostsOf(c)
	st.Cluster = opt.Cluster
	if reflect.ValueOf(st.Cluster).IsZero() {
		st.Cluster = clusterRef(c)
	}

	// Every live job: the waiting ones from the queues, the others from
	// the holding index.
	var ids []string
	tree := s.Tree()
	for _, id := range tree.Leaves() {
		if leaf, ok := tree.LeafOf(id); ok {
			leaf.Ascend(func(e queue.PendingJob) bool {
				ids = append(ids, e.ID)
				return true
			})
		}
	}
	s.Holding(func(id string, _ gpusched.JobStatus) bool {
		ids = append(ids, id)
		return true
	})
	order := s.Submissions()
	rank := make(map[string]int, len(order))
	for i, id := range order {
		rank[id] = i
	}
	st.Jobs = make([]Job, 0, len(ids))
	for _, id := range ids {
		js, ok := s.Job(id)
		if !ok {
			continue
		}
		j, err := captureJob(s, c, id, js)
		if err != nil {
			return nil, err
		}
		at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
		if j.Submitted.After(now) || j.Started.After(now) {
			return nil, fmt.Errorf("snapshot: Capture at %s: job %s was submitted at %s and started at %s, after it", at(now), id, at(j.Submitted), at(j.Started))
		}
		st.Jobs = append(st.Jobs, j)
	}
	slices.SortFunc(st.Jobs, func(a, b Job) int {
		if c := a.Submitted.Compare(b.Submitted); c != 0 {
			return c
		}
		return rank[a.ID] - rank[b.ID]
	})

	// Fair Tree history: every queue's decayed usage, which orders the
	// queues under FairTree only.
	for id := queue.NodeID(0); tree.Fairness().Policy == queue.FairTree && int(id) < tree.NumNodes(); id++ {
		if u := tree.FairTreeUsage(id); u.Value != 0 || !u.At.IsZero() {
			name := tree.Name(id)
			if id == 0 {
				name = "" // the root
			}
			st.Usage = append(st.Usage, QueueUsage{Queue: name, Value: u.Value, At: u.At})
		}
	}

	l := s.Ledger()
	for h := 0; h < c.NumHosts(); h++ {
		if c.Removed(topology.HostID(h)) {
			continue // gone (a live change); the spec says so
		}
		if hh := l.HostHealth(topology.HostID(h)); hh != topology.Healthy {
			st.Health = append(st.Health, Health{Host: c.HostName(topology.HostID(h)), State: healthName(hh)})
		}
	}
	for g := 0; g < c.NumGPUs(); g++ {
		if c.Removed(c.GPUHost(topology.GPUID(g))) {
			continue
		}
		if gh := l.GPU(topology.GPUID(g)).Health; gh != topology.Healthy {
			st.Health = append(st.Health, Health{GPU: c.GPUName(topology.GPUID(g)), State: healthName(gh)})
		}
	}

	// Preemptions in flight (version 3): the placements promised in the
	// order made, then the jobs waiting for victims without one.
	ids = ids[:0]
	groups := make(map[string][]workload.TaskGroup, len(st.Jobs))
	for _, j := range st.Jobs {
		ids = append(ids, j.ID)
		groups[j.ID] = j.Groups
	}
	for _, n := range s.Nominations(ids) {
		sn := Nomination{Job: n.Job, Victims: n.Victims, Due: n.Due, Domain: n.Domain}
		if n.Tasks != nil {
			sn.Placement = tasksOf(c, groups[n.Job], grouped(n.Tasks))
		}
		st.Nominations = append(st.Nominations, sn)
	}
	// Backfill reservations kept across cycles (version 4).
	for _, r := range s.Reservations() {
		st.Reservations = append(st.Reservations, Reservation{Job: r.Job, At: r.At, Forever: r.Forever, Placement: tasksOf(c, groups[r.Job], grouped(r.Tasks)), Current: r.Current, Filter: r.Filter, Built: r.Built, Domain: r.Domain})
	}

	// Cordons, migrations in flight and the budget's log, and the
	// preemption verdicts (version 5).
	for h := 0; h < c.NumHosts(); h++ {
		if !c.Removed(topology.HostID(h)) && l.HostCordoned(topology.HostID(h)) {
			st.Cordoned = append(st.Cordoned, c.HostName(topology.HostID(h)))
		}
	}
	for _, lh := range s.Leaving() {
		st.Leaving = append(st.Leaving, Leaving{Host: lh.Name, Template: lh.Template})
	}
	if d := cfg.Defrag; d != nil {
		st.Defrag = &Defrag{After: d.After, PerHour: d.Budget.PerHour, LostPerHour: int64(d.Budget.LostPerHour), MinValue: d.Budget.MinValue,
			MaxPerJob: d.MaxPerJob, Grace: d.Grace}
		if k := d.Consolidate; k != nil {
			sk := &Consolidate{Idle: k.Idle, PerHour: k.Budget.PerHour, LostPerHour: int64(k.Budget.LostPerHour), Target: k.Target, MaxDomains: k.MaxDomains}
			for _, lv := range k.Levels {
				sk.Levels = append(sk.Levels, c.LevelName(lv))
			}
			st.Defrag.Consolidate = sk
			cs := s.ConsolidateState()
			sc := &Consolidation{Busy: cs.Busy, NothingFound: cs.NothingFound, FoundMoves: cs.FoundMoves, FoundLost: int64(cs.FoundLost)}
			for _, e := range cs.Issued {
				sc.Log = append(sc.Log, DefragIssued{At: e.At, Lost: int64(e.Lost)})
			}
			st.Consolidation = sc
		}
	}
	// Refused stops in force (version 6).
	st.EvictionRetry = cfg.EvictionRetry
	st.ReserveWholeHosts = cfg.ReserveWholeHosts
	st.MaxClockSkew, st.MaxTombstones = cfg.MaxClockSkew, cfg.MaxTombstones // version 8
	for _, t := range s.Tombstones() {
		st.Tombstones = append(st.Tombstones, Tombstone{Job: t.Job, State: t.State, At: t.At})
	}
	for _, r := range s.Refusals() {
		st.Refusals = append(st.Refusals, Refusal{Victim: r.Victim, Run: r.Run, Until: r.Until, Reason: r.Reason, Blocked: r.Blocked})
	}
	ds := s.DefragState(ids)
	for _, m := range ds.Moving {
		st.Migrations = append(st.Migrations, Migration{Job: m.Job, To: tasksOf(c, groups[m.Job], grouped(m.To)), Domain: m.Domain})
	}
	for _, m := range ds.Moves {
		if k := slices.IndexFunc(st.Jobs, func(j Job) bool { return j.ID == m.Job }); k >= 0 {
			st.Jobs[k].Moves = m.Moves
		}
	}
	for _, e := range ds.Issued {
		st.DefragLog = append(st.DefragLog, DefragIssued{At: e.At, Lost: int64(e.Lost)})
	}
	hostNames := func(hs []topology.HostID) []string {
		var out []string
		for _, h := range hs {
			out = append(out, c.HostName(h))
		}
		return out
	}
	for _, n := range s.NoPlans(ids) {
		st.NoPlans = append(st.NoPlans, NoPlan{Job: n.Job, Until: n.Until, Priority: n.Priority, Quotas: n.Quotas, Exact: n.Exact,
			Gained: hostNames(n.Gained), Eligible: hostNames(n.Eligible)}) // (version 7)
	}

	// Resized elastic jobs.
	for _, r := range s.Resizes() {
		sr := Resize{Job: r.Job, Size: r.Size, For: r.For, Grace: r.Grace}
		if r.Shrink != nil {
			sr.Shrink = tasksOf(c, groups[r.Job], &gang.Placement{Claims: r.Shrink})
		}
		if r.Grow != nil {
			sr.Grow = tasksOf(c, groups[r.Job], &gang.Placement{Claims: r.Grow})
		}
		st.Resizes = append(st.Resizes, sr)
	}

	// Victims asked to stop that nothing in flight names (version 6).
	named := map[string]bool{}
	for _, n := range st.Nominations {
		for _, v := range n.Victims {
			named[v] = true
		}
	}
	for _, m := range st.Migrations {
		named[m.Job] = true
	}
	for _, r := range st.Resizes {
		if r.Shrink != nil {
			named[r.Job] = true
		}
	}
	st.Fresh = s.Fresh(ids)
	for _, id := range s.Stopping(ids) {
		if !named[id] {
			st.Stopping = append(st.Stopping, id)
		}
	}

	if cfg.Preemptor != nil {
		st.Notes = append(st.Notes, "the Scheduler preempts (Config.Preemptor), which a state does not carry: a loaded Scheduler preempts only with Options.Preemptor")
	}
	if opt.Placer == "random" {
		st.Notes = append(st.Notes, "placer random seeds each job from its submission sequence number, which a loaded Scheduler numbers afresh: its placements differ")
	}
	return st, nil
}

// captureJob turns one job's status into the state's job.
func captureJob(s *gpusched.Scheduler, c *topology.Cluster, id string, js gpusched.JobStatus) (Job, error) {
	j := Job{Job: js.Spec.Clone(), Submitted: js.Submitted, Preemptions: js.Preemptions, Restarts: js.Restarts}
	if js.State != queue.Pending {
		j.State = js.State.String()
	}
	if js.State.Holding() && !js.Admitted.Equal(js.Submitted) {
		j.Admitted = js.Admitted
	}
	if js.State == queue.Running {
		j.Started = js.Started
	}
	if cp, saved, ok := s.Progress(id); ok {
		j.Progress = saved
		if js.State == queue.Running {
			j.Checkpoint = cp
		}
	}
	if !js.State.Holding() {
		return j, nil
	}
	p := js.Placement
	if p == nil {
		return j, fmt.Errorf("snapshot: Capture: job %s is %s without a placement", id, js.State)
	}
	j.Placement = tasksOf(c, j.Groups, p)
	if p.Level < c.LevelCluster() && p.Domain != topology.NoDomain && p.Domain != c.Root() {
		j.Domain = c.DomainName(p.Domain)
	}
	return j, nil
}

// grouped turns claims per task group (as Restore's tasks) into a
// placement whose tasks name their groups, for tasksOf.
func grouped(tasks [][]topology.Claim) *gang.Placement {
	p := &gang.Placement{}
	for g, claims := range tasks {
		for k, cl := range claims {
			p.Claims = append(p.Claims, cl)
			p.Tasks = append(p.Tasks, gang.TaskRef{Group: int32(g), Index: int32(k)})
		}
	}
	return p
}

// tasksOf writes placement p of a job with groups as the state's tasks.
func tasksOf(c *topology.Cluster, groups []workload.TaskGroup, p *gang.Placement) []Task {
	var out []Task
	for i, cl := range p.Claims {
		t := Task{Host: c.HostName(cl.Host)}
		if len(groups) > 1 && i < len(p.Tasks) {
			g := int(p.Tasks[i].Group)
			t.Group = strconv.Itoa(g)
			if g >= 0 && g < len(groups) && groups[g].Name != "" {
				t.Group = groups[g].Name
			}
		}
		first, _ := c.HostGPUs(cl.Host)
		for _, gc := range cl.GPUs {
			idx := int(gc.GPU - first)
			switch gc.Kind {
			case topology.ClaimWhole:
				t.GPUs = append(t.GPUs, idx)
			case topology.ClaimShare:
				t.GPU, t.Milli = &idx, int(gc.Milli)
			case topology.ClaimMIG:
				m := c.Model(c.GPU(gc.GPU).Model)
				t.GPU, t.MIG, t.Start = &idx, m.MIGProfiles[gc.Profile].Name, int(gc.Start)
			}
		}
		out = append(out, t)
	}
	return out
}

// clusterRef names c as a preset when it is one, else holds it inline.
func clusterRef(c *topology.Cluster) Cluster {
	if slices.Contains(topology.PresetNames(), c.Name()) {
		if p, err := topology.LoadPreset(c.Name()); err == nil && reflect.DeepEqual(p.Spec(), c.Spec()) {
			return Cluster{Preset: c.Name()}
		}
	}
	sp := c.Spec()
	return Cluster{Spec: &sp}
}
