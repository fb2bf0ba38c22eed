package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// restoredFields are the fields of a job RestoreJob names in errors that
// are fields of the state's job too.
var restoredFields = map[string]bool{"domain": true, "submitted": true, "admitted": true, "started": true, "preemptions": true, "restarts": true, "progress": true, "checkpoint": true}

// MaxBytes bounds a state file, so that a wrong path (a trace, a disk
// image) is an error rather than an out-of-memory.
const MaxBytes = 256 << 20

// Options restrict what a state may ask for when it is loaded.
type Options struct {
	// Dir is the directory a cluster file (cluster.file) is read from
	// when its path is relative; empty forbids cluster files.
	Dir string
	// MaxHosts, when positive, bounds the cluster: a generated cluster of
	// more hosts, an inline one that declares more hosts (or more switches
	// and fabric domains), and presets other than machine presets are
	// refused before they are built (for untrusted or fuzzed input). Zero allows any preset and up to 100,000 generated
	// hosts.
	MaxHosts int
	// Preemptor is the loaded Scheduler's Config.Preemptor (a state does
	// not carry one). Exactly one of Preemptor and NoPreemption must be
	// given: neither or both is ErrPreemptorChoice.
	Preemptor gpusched.Preemptor
	// NoPreemption says the loaded Scheduler preempts nothing (no
	// Preemptor), as a host that never preempts chooses explicitly.
	NoPreemption bool
}

// ErrPreemptorChoice is wrapped by the error of a Load or Restore whose
// Options give neither a Preemptor nor NoPreemption, or both: a state
// does not carry the Preemptor (code, not data), and a restart that
// silently lost it would stop preempting.
var ErrPreemptorChoice = errors.New("snapshot: Options: give a Preemptor, or NoPreemption for none (a state does not carry the Preemptor)")

// Loaded is a state turned into a Scheduler.
type Loaded struct {
	// State is the state as decoded.
	State *State
	// Cluster is the state's cluster and Scheduler a Scheduler on it
	// holding the state's jobs and health, ready for Schedule(State.Now).
	Cluster   *topology.Cluster
	Scheduler *gpusched.Scheduler
	// States is each job's state as the file gives it (the Scheduler
	// holds each job in it).
	States map[string]queue.State
}

// Decode reads a state file's data (YAML or JSON) into a State, rejecting
// fields the format does not have. name names the data in errors, which
// are *Error with the line. It checks the file's seal (version 8; see
// ErrNotWhole): a file with a trailer must match it, and one that says
// version 8 or later must have one. It does not check what Restore
// checks.
func Decode(data []byte, name string) (*State, error) {
	if len(data) > MaxBytes {
		return nil, &Error{File: name, Err: fmt.Errorf("larger than %d MiB", MaxBytes>>20)}
	}
	content, sl, err := unseal(data)
	if err != nil {
		return nil, &Error{File: name, Err: err}
	}
	var st State
	dec := yaml.NewDecoder(bytes.NewReader(content))
	dec.KnownFields(true)
	if err := dec.Decode(&st); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: name, Err: errors.New("empty state file")}
		}
		return nil, &Error{File: name, Err: err}
	}
	if sl == nil && st.Version >= sealedSince && st.Version <= Version { // (a later one: Restore says so)
		return nil, &Error{File: name, Err: missingTrailer(st.Version)}
	}
	if sl != nil {
		if err := sl.checkCounts(&st); err != nil {
			return nil, &Error{File: name, Err: err}
		}
	}
	return &st, nil
}

// Load decodes a state file's data and restores it (Decode, then
// State.Restore), with errors that name the line of the field at fault.
func Load(data []byte, name string, opt Options) (*Loaded, error) {
	st, err := Decode(data, name)
	if err != nil {
		return nil, err
	}
	return st.restore(name, data, opt)
}

// Restore builds the state's cluster and a Scheduler on it, and puts the
// state's jobs into it in order of submission — waiting jobs with Submit,
// admitted and running ones with Restore, on their placements — then sets
// the health of the GPUs and hosts listed. Errors are *Error naming the
// field (without a line: Load knows the lines). A state the Scheduler
// could not have been in is an error: a job submitted or started after
// Now, or started before it was submitted; placements that collide or
// break a quota; a pending job with a placement.
func (st *State) Restore(opt Options) (*Loaded, error) {
	return st.restore("state", nil, opt)
}

// restore restores the state; data, when not nil, is the file it was
// decoded from, parsed again only to find the line of an error.
func (st *State) restore(name string, data []byte, opt Options) (*Loaded, error) {
	bad := func(field string, err error) error {
		line := 0
		if data != nil {
			var doc yaml.Node
			if yaml.Unmarshal(data, &doc) == nil {
				line = lineOf(&doc, field)
			}
		}
		return &Error{File: name, Line: line, Field: field, Err: err}
	}
	if (opt.Preemptor == nil) == !opt.NoPreemption {
		return nil, &Error{File: name, Err: ErrPreemptorChoice}
	}
	if st.Version < 0 || st.Version > Version {
		return nil, bad("version", fmt.Errorf("version %d; this gpusched reads versions 1 to %d", st.Version, Version))
	}
	if st.Now.IsZero() {
		return nil, bad("now", errors.New("missing: the time of the state"))
	}
	c, field, err := st.Cluster.build(opt)
	if err != nil {
		return nil, bad(field, err)
	}
	if n := hostsOf(c); st.Hosts != 0 && st.Hosts != n {
		return nil, bad("hosts", fmt.Errorf("%w: the state counts %d hosts, its cluster has %d", ErrNotWhole, st.Hosts, n))
	}
	placer, field, err := st.placer(c)
	if err != nil {
		return nil, bad(field, err)
	}
	cfg := gpusched.Config{Cluster: c, Queues: st.Queues, Placer: placer, Seed: st.Seed, DefaultRuntime: st.DefaultRuntime, MaxReservations: st.MaxReservations,
		MaxRestarts: st.MaxRestarts, DrainGrace: st.DrainGrace, DrainKeep: st.DrainKeep, AdmitTimeout: st.AdmitTimeout, MaxGrace: st.MaxGrace,
		BackfillAround: st.BackfillAround, ReserveDepth: st.ReserveDepth, Preemptor: opt.Preemptor}
	if st.Elastic != nil {
		cfg.Elastic = &gpusched.ElasticConfig{NoGrow: st.Elastic.NoGrow}
	}
	if d := st.Defrag; d != nil {
		cfg.Defrag = &gpusched.DefragConfig{After: d.After, Budget: preempt.DefragBudget{PerHour: d.PerHour, LostPerHour: preempt.GPUTime(d.LostPerHour), MinValue: d.MinValue},
			MaxPerJob: d.MaxPerJob, Grace: d.Grace}
		if k := d.Consolidate; k != nil {
			kc := &gpusched.ConsolidateConfig{Idle: k.Idle, Budget: preempt.DefragBudget{PerHour: k.PerHour, LostPerHour: preempt.GPUTime(k.LostPerHour)},
				Target: k.Target, MaxDomains: k.MaxDomains}
			for i, name := range k.Levels {
				lv, ok := c.LevelByName(name)
				if !ok {
					return nil, bad(fmt.Sprintf("defrag.consolidate.levels[%d]", i), fmt.Errorf("cluster %s has no level %q", c.Name(), name))
				}
				kc.Levels = append(kc.Levels, lv)
			}
			cfg.Defrag.Consolidate = kc
		}
	}
	if st.Consolidation != nil && (st.Defrag == nil || st.Defrag.Consolidate == nil) {
		return nil, bad("consolidation", errors.New("a consolidation state needs defrag.consolidate"))
	}
	cfg.EvictionRetry = st.EvictionRetry
	cfg.ReserveWholeHosts = st.ReserveWholeHosts
	cfg.MaxClockSkew, cfg.MaxTombstones = st.MaxClockSkew, st.MaxTombstones
	s, err := gpusched.New(cfg)
	if err != nil {
		var ce *queue.ConfigError
		if errors.As(err, &ce) {
			return nil, bad("queues."+ce.Field, errors.New(ce.Msg))
		}
		return nil, bad("", err)
	}
	states := make(map[string]queue.State, len(st.Jobs))
	// Jobs in order of submission (stable), holding jobs restored before
	// health is applied (their GPUs may have failed since).
	order := make([]int, len(st.Jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return st.Jobs[a].Submitted.Compare(st.Jobs[b].Submitted) })
	for _, i := range order {
		j := &st.Jobs[i]
		f := fmt.Sprintf("jobs[%d]", i)
		js, field, err := j.check(f)
		if err != nil {
			return nil, bad(field, err)
		}
		var tasks [][]topology.Claim
		if js.Holding() {
			var fe *fieldErr
			if tasks, fe = j.claims(c, f); fe != nil {
				return nil, bad(fe.field, fe.err)
			}
		}
		r := gpusched.RestoredJob{Spec: j.Job, State: js, Tasks: tasks, Submitted: j.Submitted, Admitted: j.Admitted, Started: j.Started,
			Now: st.Now, Preemptions: j.Preemptions, Restarts: j.Restarts, Progress: j.Progress, Checkpoint: j.Checkpoint, Domain: j.Domain}
		if err := s.RestoreJob(r); err != nil {
			var we *workload.FieldError
			if errors.As(err, &we) && restoredFields[we.Field] {
				return nil, bad(f+"."+we.Field, errors.New(we.Msg))
			}
			return nil, bad(f, err)
		}
		states[j.ID] = js
	}
	// inFlight checks that a nomination or reservation f names a job of
	// the state and turns its placement, if wanted, into claims per task
	// group; restoreErr names the field of f a Restore… error is about.
	inFlight := func(f, id string, placement []Task, want bool) ([][]topology.Claim, error) {
		k := slices.IndexFunc(st.Jobs, func(j Job) bool { return j.ID == id })
		if k < 0 {
			return nil, bad(f+".job", fmt.Errorf("no job %q in the state", id))
		}
		if !want {
			return nil, nil
		}
		tmp := Job{Job: st.Jobs[k].Job, Placement: placement}
		tasks, fe := tmp.claims(c, f)
		if fe != nil {
			return nil, bad(fe.field, fe.err)
		}
		return tasks, nil
	}
	restoreErr := func(f string, err error) error {
		var we *workload.FieldError
		if errors.As(err, &we) {
			return bad(f+".placement", errors.New(we.Field+": "+we.Msg))
		}
		return bad(f, err)
	}
	for i, r := range st.Resizes {
		f := fmt.Sprintf("resizes[%d]", i)
		rz := gpusched.Resize{Job: r.Job, Size: r.Size, For: r.For, Grace: r.Grace}
		for _, part := range []struct {
			name  string
			tasks []Task
			out   *[]topology.Claim
		}{{"shrink", r.Shrink, &rz.Shrink}, {"grow", r.Grow, &rz.Grow}} {
			if part.tasks == nil {
				continue
			}
			tasks, err := inFlight(f+"."+part.name, r.Job, part.tasks, true)
			if err != nil {
				return nil, err
			}
			for _, g := range tasks {
				*part.out = append(*part.out, g...)
			}
		}
		if err := s.RestoreResize(rz); err != nil {
			return nil, bad(f, err)
		}
	}
	for i, n := range st.Nominations {
		f := fmt.Sprintf("nominations[%d]", i)
		nm := gpusched.Nomination{Job: n.Job, Victims: n.Victims, Due: n.Due, Domain: n.Domain}
		var err error
		if nm.Tasks, err = inFlight(f, n.Job, n.Placement, len(n.Placement) > 0); err != nil {
			return nil, err
		}
		if err := s.RestoreNomination(nm); err != nil {
			return nil, restoreErr(f, err)
		}
	}
	// Ended jobs remembered (version 8), oldest first.
	for i, t := range st.Tombstones {
		f := fmt.Sprintf("tombstones[%d]", i)
		if t.At.After(st.Now) {
			return nil, bad(f+".at", fmt.Errorf("%s is after now", t.At.UTC().Format(time.RFC3339Nano)))
		}
		if err := s.RestoreTombstone(gpusched.Tombstone{Job: t.Job, State: t.State, At: t.At}); err != nil {
			return nil, bad(f, err)
		}
	}
	// Refused stops in force, after the nominations (a refusal dropped
	// those that counted on its victim).
	for i, r := range st.Refusals {
		f := fmt.Sprintf("refusals[%d]", i)
		switch {
		case !slices.ContainsFunc(st.Jobs, func(j Job) bool { return j.ID == r.Victim }):
			return nil, bad(f+".victim", fmt.Errorf("no job %q in the state", r.Victim))
		case r.Run.IsZero():
			return nil, bad(f+".run", errors.New("missing: the admission of the run whose stop was refused"))
		case r.Until.IsZero():
			return nil, bad(f+".until", errors.New("missing: when the refusal lapses"))
		case r.Run.After(st.Now):
			return nil, bad(f+".run", fmt.Errorf("%s is after now", r.Run.UTC().Format(time.RFC3339Nano)))
		}
		if err := s.RestoreRefusal(gpusched.Refusal{Victim: r.Victim, Run: r.Run, Until: r.Until, Reason: r.Reason, Blocked: r.Blocked}); err != nil {
			return nil, bad(f, err)
		}
	}
	// Migrations in flight, after the nominations that wait for them.
	ds := gpusched.DefragState{Now: st.Now}
	for i, m := range st.Migrations {
		f := fmt.Sprintf("migrations[%d]", i)
		tasks, err := inFlight(f, m.Job, m.To, true)
		if err != nil {
			return nil, err
		}
		ds.Moving = append(ds.Moving, gpusched.MigrationInFlight{Job: m.Job, To: tasks, Domain: m.Domain})
	}
	for i, j := range st.Jobs {
		if j.Moves < 0 {
			return nil, bad(fmt.Sprintf("jobs[%d].moves", i), fmt.Errorf("negative count %d", j.Moves))
		}
		if j.Moves > 0 {
			ds.Moves = append(ds.Moves, gpusched.JobMoves{Job: j.ID, Moves: j.Moves})
		}
	}
	for i, e := range st.DefragLog {
		if e.At.IsZero() {
			return nil, bad(fmt.Sprintf("defragLog[%d].at", i), errors.New("missing: when the migration was issued"))
		}
		ds.Issued = append(ds.Issued, preempt.DefragIssued{At: e.At, Lost: preempt.GPUTime(e.Lost)})
	}
	if err := s.RestoreDefrag(ds); err != nil {
		field := "migrations"
		if errors.Is(err, gpusched.ErrDefragOff) {
			field = "defrag"
		}
		return nil, restoreErr(field, err)
	}
	// Victims asked to stop that nothing in flight names, after those
	// that name theirs.
	for i, id := range st.Stopping {
		f := fmt.Sprintf("stopping[%d]", i)
		if _, err := inFlight(f, id, nil, false); err != nil {
			return nil, bad(f, fmt.Errorf("no job %q in the state", id))
		}
		if err := s.RestoreStopping(id); err != nil {
			return nil, bad(f, err)
		}
	}
	for i, id := range st.Fresh {
		f := fmt.Sprintf("fresh[%d]", i)
		if _, err := inFlight(f, id, nil, false); err != nil {
			return nil, bad(f, fmt.Errorf("no job %q in the state", id))
		}
		if err := s.RestoreFresh(id); err != nil {
			return nil, bad(f, err)
		}
	}
	for i, u := range st.Usage {
		f := fmt.Sprintf("usage[%d]", i)
		if err := s.RestoreQueueUsage(u.Queue, fairshare.Usage{Value: u.Value, At: u.At}); err != nil {
			return nil, bad(f, err)
		}
	}
	for i, h := range st.Health {
		f := fmt.Sprintf("health[%d]", i)
		hh, ok := healthStates[h.State]
		if !ok {
			return nil, bad(f+".state", fmt.Errorf("unknown health %q (want healthy, draining or failed)", h.State))
		}
		switch {
		case h.Host != "" && h.GPU == "":
			if _, ok := c.HostByName(h.Host); !ok {
				return nil, bad(f+".host", fmt.Errorf("unknown host %q", h.Host))
			}
			if _, err := s.SetHostHealth(h.Host, hh); err != nil {
				return nil, bad(f, err)
			}
		case h.GPU != "" && h.Host == "":
			g, err := gpuByName(c, h.GPU)
			if err != nil {
				return nil, bad(f+".gpu", err)
			}
			if _, err := s.SetGPUHealth(g, hh); err != nil {
				return nil, bad(f, err)
			}
		default:
			return nil, bad(f, errors.New("give exactly one of host and gpu"))
		}
	}
	for i, name := range st.Cordoned {
		if err := s.Cordon(name); err != nil {
			return nil, bad(fmt.Sprintf("cordoned[%d]", i), err)
		}
	}
	// Hosts waiting to leave, asked again (after their health and
	// cordons, which the asking keeps).
	for i, lh := range st.Leaving {
		f := fmt.Sprintf("leaving[%d]", i)
		var err error
		if lh.Template == "" {
			_, err = s.RemoveHosts([]string{lh.Host}, st.Now)
		} else {
			_, err = s.SetHostGPUs(lh.Host, lh.Template, nil, st.Now)
		}
		if err != nil {
			return nil, bad(f, err)
		}
	}
	if c2 := s.Cluster(); c2 != c {
		c = c2 // an idle host left, or changed shape, at once
	}
	// Reservations last: their what-if ledgers are rebuilt from the
	// live state, health and cordons included.
	for i, r := range st.Reservations {
		f := fmt.Sprintf("reservations[%d]", i)
		rv := gpusched.Reservation{Job: r.Job, At: r.At, Forever: r.Forever, Current: r.Current, Filter: r.Filter, Built: r.Built, Domain: r.Domain}
		var err error
		if rv.Tasks, err = inFlight(f, r.Job, r.Placement, true); err != nil {
			return nil, err
		}
		if err := s.RestoreReservation(rv); err != nil {
			return nil, restoreErr(f, err)
		}
	}
	// The preemption verdicts after everything else: each holds from the
	// restored state on.
	for i, n := range st.NoPlans {
		f := fmt.Sprintf("noPlans[%d]", i)
		if _, err := inFlight(f, n.Job, nil, false); err != nil {
			return nil, err
		}
		np := gpusched.NoPlan{Job: n.Job, Until: n.Until, Priority: n.Priority, Quotas: n.Quotas, Exact: n.Exact}
		for _, x := range []struct {
			field string
			names []string
			into  *[]topology.HostID
		}{{"gained", n.Gained, &np.Gained}, {"eligible", n.Eligible, &np.Eligible}} {
			for k, name := range x.names {
				h, ok := c.HostByName(name)
				if !ok {
					return nil, bad(fmt.Sprintf("%s.%s[%d]", f, x.field, k), fmt.Errorf("unknown host %q", name))
				}
				*x.into = append(*x.into, h)
			}
		}
		if err := s.RestoreNoPlan(np); err != nil {
			return nil, bad(f, err)
		}
	}
	// Consolidation's state last: its "nothing found" memo holds for the
	// ledger as restored.
	if k := st.Consolidation; k != nil {
		cs := gpusched.ConsolidateState{Busy: k.Busy, NothingFound: k.NothingFound, FoundMoves: k.FoundMoves, FoundLost: preempt.GPUTime(k.FoundLost), Now: st.Now}
		for i, e := range k.Log {
			if e.At.IsZero() {
				return nil, bad(fmt.Sprintf("consolidation.log[%d].at", i), errors.New("missing: when the migration was issued"))
			}
			cs.Issued = append(cs.Issued, preempt.DefragIssued{At: e.At, Lost: preempt.GPUTime(e.Lost)})
		}
		if err := s.RestoreConsolidate(cs); err != nil {
			return nil, bad("consolidation", err)
		}
	}
	return &Loaded{State: st, Cluster: c, Scheduler: s, States: states}, nil
}

// check checks what of a job's state RestoreJob cannot see: its state's
// name, a start time only for running jobs, a placement only for holding
// ones. Its times and counts RestoreJob checks against now, with errors
// naming the job's field.
func (j *Job) check(f string) (queue.State, string, error) {
	js, ok := jobStates[j.State]
	if !ok {
		return 0, f + ".state", fmt.Errorf("unknown state %q (want pending, requeued, preempted, admitted or running)", j.State)
	}
	if js != queue.Running && !j.Started.IsZero() {
		return 0, f + ".started", fmt.Errorf("a %s job has no start time (only running jobs have one)", js)
	}
	if !js.Holding() && len(j.Placement) > 0 {
		return 0, f + ".placement", fmt.Errorf("a %s job has no placement", js)
	}
	return js, "", nil
}

// placer builds the state's placer, fgd with the state's workload.
func (st *State) placer(c *topology.Cluster) (gang.Placer, string, error) {
	name := st.Placer
	if name == "" {
		name = "topology"
	}
	var opt gang.Options
	if name == "fgd" {
		if len(st.Workload) == 0 {
			return nil, "workload", errors.New("placer fgd needs its target workload (task classes and weights)")
		}
		d, field, err := distribution(c, st.Workload)
		if err != nil {
			return nil, field, err
		}
		opt.Frag.Distribution = d
	} else if len(st.Workload) > 0 {
		return nil, "workload", fmt.Errorf("only placer fgd takes a workload, not %s", name)
	}
	p, err := gang.New(name, opt)
	if err != nil {
		return nil, "placer", err
	}
	return p, "", nil
}

// distribution turns the workload's classes into a frag.Distribution on c.
func distribution(c *topology.Cluster, w []WorkloadClass) (frag.Distribution, string, error) {
	var d frag.Distribution
	for i, wc := range w {
		f := fmt.Sprintf("workload[%d]", i)
		t := frag.Task{GPUs: wc.GPUs, GPUMilli: wc.GPUMilli, CPUMilli: wc.CPUMilli, MemoryMiB: wc.MemoryMiB}
		for k, m := range wc.Models {
			id, ok := c.ModelByName(m)
			if !ok {
				return d, fmt.Sprintf("%s.models[%d]", f, k), fmt.Errorf("cluster %s has no GPU model %q", c.Name(), m)
			}
			t.Models = append(t.Models, id)
		}
		if err := t.Validate(); err != nil {
			return d, f, err
		}
		if !(wc.Weight > 0) || wc.Weight > 1e300 {
			return d, f + ".weight", fmt.Errorf("weight %g: want a positive number", wc.Weight)
		}
		d.Classes = append(d.Classes, frag.Class{Task: t, Weight: wc.Weight})
	}
	if err := d.Validate(); err != nil {
		return d, "workload", err
	}
	return d, "", nil
}

// maxGenerated bounds the hosts of a generated cluster.
const maxGenerated = 100000

// build builds the cluster; on error it also returns the field at fault.
func (sc *Cluster) build(opt Options) (*topology.Cluster, string, error) {
	n := 0
	for _, set := range []bool{sc.Preset != "", sc.File != "", sc.Machine != "", sc.Spec != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, "cluster", errors.New("give exactly one of preset, file, machine and spec")
	}
	if sc.Machine == "" && (sc.Hosts != 0 || sc.HostsPerToR != 0 || sc.TorsPerSpine != 0) {
		return nil, "cluster", errors.New("hosts, hostsPerToR and torsPerSpine go with machine")
	}
	switch {
	case sc.Preset != "":
		if opt.MaxHosts > 0 && !slices.Contains(topology.MachineNames(), sc.Preset) {
			return nil, "cluster.preset", errors.New("only machine presets here")
		}
		c, err := topology.LoadPreset(sc.Preset)
		return c, "cluster.preset", err
	case sc.File != "":
		if opt.Dir == "" {
			return nil, "cluster.file", errors.New("cluster files are not allowed here")
		}
		p := sc.File
		if !filepath.IsAbs(p) {
			p = filepath.Join(opt.Dir, p)
		}
		c, err := topology.LoadFile(p)
		return c, "cluster.file", err
	case sc.Spec != nil:
		return sc.buildSpec(opt)
	}
	hosts := sc.Hosts
	if hosts == 0 {
		hosts = 1
	}
	most := maxGenerated
	if opt.MaxHosts > 0 {
		most = min(most, opt.MaxHosts)
	}
	if hosts < 0 || hosts > most {
		return nil, "cluster.hosts", fmt.Errorf("%d hosts: want 1 to %d", hosts, most)
	}
	spec, err := topology.Generator{Name: sc.Machine, Machine: sc.Machine, Hosts: hosts, HostsPerToR: sc.HostsPerToR, ToRsPerSpine: sc.TorsPerSpine}.Spec()
	if err != nil {
		return nil, "cluster", err
	}
	c, err := topology.Build(spec)
	return c, "cluster", err
}

// buildSpec builds an inline cluster, within a cluster file's limits.
func (sc *Cluster) buildSpec(opt Options) (*topology.Cluster, string, error) {
	if opt.MaxHosts > 0 {
		count := func(patterns []string) int {
			n := 0
			for _, p := range patterns {
				n += topology.CountNames(p) // 0 if malformed: Build says what is wrong
			}
			return n
		}
		var hosts, switches []string
		for _, g := range sc.Spec.Hosts {
			hosts = append(hosts, g.Name)
		}
		for _, g := range sc.Spec.Switches {
			switches = append(switches, g.Name)
		}
		for _, g := range sc.Spec.Fabrics {
			switches = append(switches, g.Name)
		}
		if n := count(hosts); n > opt.MaxHosts {
			return nil, "cluster.spec.hosts", fmt.Errorf("%d hosts: want at most %d", n, opt.MaxHosts)
		}
		if n := count(switches); n > opt.MaxHosts {
			return nil, "cluster.spec.switches", fmt.Errorf("%d switches and fabric domains: want at most %d", n, opt.MaxHosts)
		}
	}
	// A cluster file's size limits (topology.MaxFileHosts …) hold for an
	// inline one too: check them on its encoding before building.
	data, err := topology.Marshal(*sc.Spec, topology.FormatYAML)
	if err != nil {
		return nil, "cluster.spec", err
	}
	if _, err := topology.ParseSpec(data, "cluster.spec", topology.FormatYAML); err != nil {
		var fe *topology.FileError
		if errors.As(err, &fe) {
			field := "cluster.spec"
			if fe.Path != "" {
				field += "." + fe.Path
			}
			return nil, field, errors.New(fe.Msg)
		}
		return nil, "cluster.spec", err
	}
	c, err := topology.Build(*sc.Spec)
	if err != nil {
		var se *topology.SpecError
		if errors.As(err, &se) && se.Path != "" {
			return nil, "cluster.spec." + se.Path, errors.New(se.Msg)
		}
		return nil, "cluster.spec", err
	}
	return c, "", nil
}

type fieldErr struct {
	field string
	err   error
}

// claims turns a job's placement entries into claims per task group.
func (j *Job) claims(c *topology.Cluster, f string) ([][]topology.Claim, *fieldErr) {
	if len(j.Groups) == 0 {
		return nil, &fieldErr{f + ".groups", errors.New("a job needs at least one task group")}
	}
	out := make([][]topology.Claim, len(j.Groups))
	next := 0
	for i, t := range j.Placement {
		tf := fmt.Sprintf("%s.placement[%d]", f, i)
		g := next
		if t.Group != "" {
			g = -1
			for k := range j.Groups {
				if j.Groups[k].Name == t.Group || strconv.Itoa(k) == t.Group {
					g = k
				}
			}
			if g < 0 {
				return nil, &fieldErr{tf + ".group", fmt.Errorf("no task group %q", t.Group)}
			}
		} else {
			for g < len(j.Groups) && len(out[g]) >= j.Groups[g].Count {
				g++
			}
			if g >= len(j.Groups) {
				return nil, &fieldErr{tf, errors.New("more tasks placed than the job has")}
			}
			next = g
		}
		tg := &j.Groups[g]
		h, ok := c.HostByName(t.Host)
		if !ok {
			return nil, &fieldErr{tf + ".host", fmt.Errorf("unknown host %q", t.Host)}
		}
		first, n := c.HostGPUs(h)
		gpu := func(idx int, field string) (topology.GPUID, *fieldErr) {
			if idx < 0 || idx >= n {
				return 0, &fieldErr{field, fmt.Errorf("GPU %d outside 0..%d of host %s", idx, n-1, t.Host)}
			}
			return first + topology.GPUID(idx), nil
		}
		cl := topology.Claim{Host: h, CPUMilli: tg.CPUMilli, MemoryMiB: tg.MemoryMiB}
		switch {
		case t.MIG != "":
			if t.GPU == nil {
				return nil, &fieldErr{tf + ".gpu", errors.New("a MIG instance needs its gpu")}
			}
			id, fe := gpu(*t.GPU, tf+".gpu")
			if fe != nil {
				return nil, fe
			}
			m := c.Model(c.GPU(id).Model)
			p, ok := m.MIGProfileByName(t.MIG)
			if !ok {
				return nil, &fieldErr{tf + ".mig", fmt.Errorf("model %s has no MIG profile %q", m.Model, t.MIG)}
			}
			if t.Start < 0 || t.Start > 127 {
				return nil, &fieldErr{tf + ".start", fmt.Errorf("start slot %d out of range", t.Start)}
			}
			cl.GPUs = []topology.GPUClaim{{GPU: id, Kind: topology.ClaimMIG, Profile: p, Start: int8(t.Start)}}
		case t.Milli != 0:
			if t.GPU == nil {
				return nil, &fieldErr{tf + ".gpu", errors.New("a share needs its gpu")}
			}
			if t.Milli < 1 || t.Milli > 1000 {
				return nil, &fieldErr{tf + ".milli", fmt.Errorf("share %d outside 1..1000", t.Milli)}
			}
			id, fe := gpu(*t.GPU, tf+".gpu")
			if fe != nil {
				return nil, fe
			}
			cl.GPUs = []topology.GPUClaim{{GPU: id, Kind: topology.ClaimShare, Milli: int32(t.Milli)}}
		default:
			if t.GPU != nil {
				return nil, &fieldErr{tf + ".gpu", errors.New("whole GPUs go in gpus: [...]; gpu is for a share or MIG instance")}
			}
			for k, idx := range t.GPUs {
				id, fe := gpu(idx, fmt.Sprintf("%s.gpus[%d]", tf, k))
				if fe != nil {
					return nil, fe
				}
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: id, Kind: topology.ClaimWhole})
			}
		}
		out[g] = append(out[g], cl)
	}
	return out, nil
}

func gpuByName(c *topology.Cluster, name string) (topology.GPUID, error) {
	host, idx, ok := strings.Cut(name, "/gpu")
	if ok {
		if h, found := c.HostByName(host); found {
			first, n := c.HostGPUs(h)
			if k, err := strconv.Atoi(idx); err == nil && k >= 0 && k < n {
				return first + topology.GPUID(k), nil
			}
		}
	}
	return 0, fmt.Errorf("unknown GPU %q (want HOST/gpuN)", name)
}

// lineOf finds the line of a field path such as "jobs[3].placement[1].host"
// in a YAML document; 0 when doc is nil, or the line of the deepest part
// of the path it finds.
func lineOf(doc *yaml.Node, path string) int {
	if doc == nil {
		return 0
	}
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			continue
		}
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			n = mapValue(n, key)
			if n == nil {
				return line
			}
			line = n.Line
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			k, err := strconv.Atoi(idx)
			if err != nil || n.Kind != yaml.SequenceNode || k < 0 || k >= len(n.Content) {
				return line
			}
			n = n.Content[k]
			line = n.Line
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return line
}

// mapValue returns the value of key in mapping node n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
