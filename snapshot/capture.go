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

// CaptureOptions say what a state cannot read from the Scheduler itself
// (the configuration as last reconfigured, the submission order and every
// concern's state come from Scheduler.State).
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

// Capture returns the state of s at now, as the file holds it: FromState
// of s.State() at now (see there), with Notes saying which of the
// package's limits apply to it. now must not be before any job's
// submission or start; it is the time a cycle on the loaded Scheduler runs
// at.
//
// Capture only reads s. Cost: O(jobs × tasks + GPUs), and for a cluster
// named as a preset, building the preset once to compare.
func Capture(s *gpusched.Scheduler, now time.Time, opt CaptureOptions) (*State, error) {
	if now.IsZero() {
		return nil, errors.New("snapshot: Capture: zero now")
	}
	gs := s.State()
	gs.Now = now
	st, err := fromState(&gs, opt, "Capture")
	if err != nil {
		return nil, err
	}
	if gs.Config.Preemptor != nil {
		st.Notes = append(st.Notes, "the Scheduler preempts (Config.Preemptor), which a state does not carry: a loaded Scheduler preempts only with Options.Preemptor")
	}
	if opt.Placer == "random" {
		st.Notes = append(st.Notes, "placer random seeds each job from its submission sequence number, which a loaded Scheduler numbers afresh: its placements differ")
	}
	return st, nil
}

// FromState encodes a Scheduler's state (gpusched.Scheduler.State, with
// Now the time the loaded Scheduler's first cycle runs at) as the file
// holds it: its cluster, the configuration (New's defaults written as
// absent), the health of every GPU and host that is not healthy, every
// live job with its spec as submitted (priority as last set), state,
// times, counts, progress and placement, in order of submission, and
// every concern's part, with hosts, GPUs and levels by name. It is the
// encoding only: what gs holds, it writes. A job submitted or started
// after gs.Now is an error. O(jobs × tasks + GPUs).
func FromState(gs gpusched.State, opt CaptureOptions) (*State, error) {
	return fromState(&gs, opt, "FromState")
}

// fromState is FromState; what names the caller in errors.
func fromState(gs *gpusched.State, opt CaptureOptions, what string) (*State, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("snapshot: "+what+": "+format, args...)
	}
	now, cfg := gs.Now, &gs.Config
	if now.IsZero() {
		return nil, fail("zero now")
	}
	c := cfg.Cluster
	if c == nil {
		return nil, fail("no cluster")
	}
	st := &State{Version: Version, Now: now, Placer: opt.Placer, Seed: cfg.Seed, DefaultRuntime: cfg.DefaultRuntime,
		MaxReservations: cfg.MaxReservations, MaxRestarts: cfg.MaxRestarts, DrainGrace: cfg.DrainGrace, DrainKeep: cfg.DrainKeep,
		AdmitTimeout: cfg.AdmitTimeout, MaxGrace: cfg.MaxGrace, BackfillAround: cfg.BackfillAround, ReserveDepth: cfg.ReserveDepth,
		Queues: cfg.Queues.Clone(), EvictionRetry: cfg.EvictionRetry, ReserveWholeHosts: cfg.ReserveWholeHosts,
		MaxClockSkew: cfg.MaxClockSkew, MaxTombstones: cfg.MaxTombstones}
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
		return nil, fail("unknown placer %q", opt.Placer)
	}
	switch {
	case opt.Placer == "fgd" && opt.Workload == nil:
		return nil, fail("placer fgd needs its Workload")
	case opt.Placer == "fgd":
		for _, cl := range opt.Workload.Classes {
			wc := WorkloadClass{GPUs: cl.Task.GPUs, GPUMilli: cl.Task.GPUMilli, CPUMilli: cl.Task.CPUMilli, MemoryMiB: cl.Task.MemoryMiB, Weight: cl.Weight}
			for _, m := range cl.Task.Models {
				if m < 0 || int(m) >= len(c.Models()) {
					return nil, fail("workload model %d is not one of cluster %s", m, c.Name())
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
	if d := cfg.Defrag; d != nil {
		st.Defrag = &Defrag{After: d.After, PerHour: d.Budget.PerHour, LostPerHour: int64(d.Budget.LostPerHour), MinValue: d.Budget.MinValue,
			MaxPerJob: d.MaxPerJob, Grace: d.Grace}
		if k := d.Consolidate; k != nil {
			sk := &Consolidate{Idle: k.Idle, PerHour: k.Budget.PerHour, LostPerHour: int64(k.Budget.LostPerHour), Target: k.Target, MaxDomains: k.MaxDomains}
			for _, lv := range k.Levels {
				sk.Levels = append(sk.Levels, c.LevelName(lv))
			}
			st.Defrag.Consolidate = sk
			cs := &gs.Consolidation
			sc := &Consolidation{Busy: cs.Busy, NothingFound: cs.NothingFound, FoundMoves: cs.FoundMoves, FoundLost: int64(cs.FoundLost)}
			for _, e := range cs.Issued {
				sc.Log = append(sc.Log, DefragIssued{At: e.At, Lost: int64(e.Lost)})
			}
			st.Consolidation = sc
		}
	}

	groups := make(map[string][]workload.TaskGroup, len(gs.Jobs))
	moves := make(map[string]int, len(gs.Defrag.Moves))
	for _, m := range gs.Defrag.Moves {
		moves[m.Job] = m.Moves
	}
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	st.Jobs = make([]Job, 0, len(gs.Jobs))
	for _, r := range gs.Jobs {
		if r.Submitted.After(now) || r.Started.After(now) {
			return nil, fail("at %s: job %s was submitted at %s and started at %s, after it", at(now), r.Spec.ID, at(r.Submitted), at(r.Started))
		}
		j := Job{Job: r.Spec.Clone(), Submitted: r.Submitted, Started: r.Started, Preemptions: r.Preemptions, Restarts: r.Restarts,
			Progress: r.Progress, Checkpoint: r.Checkpoint, Moves: moves[r.Spec.ID], Domain: r.Domain}
		if r.State != queue.Pending {
			j.State = r.State.String()
		}
		if r.State.Holding() {
			if !r.Admitted.IsZero() && !r.Admitted.Equal(r.Submitted) {
				j.Admitted = r.Admitted
			}
			j.Placement = tasksOf(c, j.Groups, grouped(r.Tasks))
		}
		groups[j.ID] = j.Groups
		st.Jobs = append(st.Jobs, j)
	}
	for _, u := range gs.Usage {
		st.Usage = append(st.Usage, QueueUsage{Queue: u.Queue, Value: u.Usage.Value, At: u.Usage.At})
	}
	for _, u := range gs.Health {
		h := Health{Host: u.Host, State: healthName(u.Health)}
		if u.Host == "" {
			h.GPU = c.GPUName(u.GPU)
		}
		st.Health = append(st.Health, h)
	}
	for _, n := range gs.Nominations {
		sn := Nomination{Job: n.Job, Victims: n.Victims, Due: n.Due, Domain: n.Domain}
		if n.Tasks != nil {
			sn.Placement = tasksOf(c, groups[n.Job], grouped(n.Tasks))
		}
		st.Nominations = append(st.Nominations, sn)
	}
	for _, r := range gs.Reservations {
		st.Reservations = append(st.Reservations, Reservation{Job: r.Job, At: r.At, Forever: r.Forever, Placement: tasksOf(c, groups[r.Job], grouped(r.Tasks)),
			Current: r.Current, Filter: r.Filter, Built: r.Built, Domain: r.Domain})
	}
	st.Cordoned = gs.Cordoned
	for _, lh := range gs.Leaving {
		st.Leaving = append(st.Leaving, Leaving{Host: lh.Name, Template: lh.Template})
	}
	for _, t := range gs.Tombstones {
		st.Tombstones = append(st.Tombstones, Tombstone{Job: t.Job, State: t.State, At: t.At})
	}
	for _, r := range gs.Refusals {
		st.Refusals = append(st.Refusals, Refusal{Victim: r.Victim, Run: r.Run, Until: r.Until, Reason: r.Reason, Blocked: r.Blocked})
	}
	for _, m := range gs.Defrag.Moving {
		st.Migrations = append(st.Migrations, Migration{Job: m.Job, To: tasksOf(c, groups[m.Job], grouped(m.To)), Domain: m.Domain})
	}
	for _, e := range gs.Defrag.Issued {
		st.DefragLog = append(st.DefragLog, DefragIssued{At: e.At, Lost: int64(e.Lost)})
	}
	hostNames := func(hs []topology.HostID) []string {
		var out []string
		for _, h := range hs {
			out = append(out, c.HostName(h))
		}
		return out
	}
	for _, n := range gs.NoPlans {
		st.NoPlans = append(st.NoPlans, NoPlan{Job: n.Job, Until: n.Until, Priority: n.Priority, Quotas: n.Quotas, Exact: n.Exact,
			Gained: hostNames(n.Gained), Eligible: hostNames(n.Eligible)})
	}
	for _, r := range gs.Resizes {
		sr := Resize{Job: r.Job, Size: r.Size, For: r.For, Grace: r.Grace}
		if r.Shrink != nil {
			sr.Shrink = tasksOf(c, groups[r.Job], &gang.Placement{Claims: r.Shrink})
		}
		if r.Grow != nil {
			sr.Grow = tasksOf(c, groups[r.Job], &gang.Placement{Claims: r.Grow})
		}
		st.Resizes = append(st.Resizes, sr)
	}
	st.Stopping, st.Fresh = gs.Stopping, gs.Fresh
	for _, f := range gs.Recovery.Faults {
		sf := Fault{State: healthName(f.Health)}
		switch {
		case f.GPU != topology.NoGPU:
			sf.GPU = c.GPUName(f.GPU)
		case f.Host != topology.NoHost:
			sf.Host = c.HostName(f.Host)
		default:
			sf.Domain = c.DomainName(f.Domain)
		}
		st.Faults = append(st.Faults, sf)
	}
	for _, r := range gs.Recovery.InFlight {
		st.Recovering = append(st.Recovering, Recovering{Job: r.Job, Action: r.Action.String()})
	}
	return st, nil
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
