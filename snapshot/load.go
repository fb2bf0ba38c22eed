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
	// Stats sets the loaded Scheduler's Config.Stats (a state does not
	// carry it): its Decisions carry the cycle's figures (a live page's
	// fragmentation marks).
	Stats bool
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

// Restore builds the state's cluster and a Scheduler on it holding the
// state's jobs, health and every concern's part: SchedulerState, then
// gpusched.Restore. Errors are *Error naming the field (without a line:
// Load knows the lines). A state the Scheduler could not have been in is
// an error: a job submitted or started after Now, or started before it was
// submitted; placements that collide or break a quota; a pending job with
// a placement.
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
	gs, states, fe := st.schedulerState(opt)
	if fe != nil {
		return nil, bad(fe.field, fe.err)
	}
	s, err := gpusched.Restore(gs)
	if err != nil {
		return nil, bad(st.fileField(err))
	}
	return &Loaded{State: st, Cluster: s.Cluster(), Scheduler: s, States: states}, nil
}

// SchedulerState decodes the state into a Scheduler's (gpusched.State),
// which gpusched.Restore turns into a Scheduler: it builds the cluster
// and the placer, reads the settings into a gpusched.Config (with
// opt.Preemptor), and turns names (hosts, GPUs, levels, job states,
// health) and placements into the Scheduler's IDs and claims. Errors are
// *Error naming the field (without a line). What a State must be to be
// restored (times, collisions, quotas) gpusched.Restore checks; Restore
// and Load do both.
func (st *State) SchedulerState(opt Options) (gpusched.State, error) {
	gs, _, fe := st.schedulerState(opt)
	if fe != nil {
		return gpusched.State{}, &Error{File: "state", Field: fe.field, Err: fe.err}
	}
	return gs, nil
}

// schedulerState is SchedulerState, with each job's state.
func (st *State) schedulerState(opt Options) (gpusched.State, map[string]queue.State, *fieldErr) {
	var gs gpusched.State
	bad := func(field string, err error) (gpusched.State, map[string]queue.State, *fieldErr) {
		return gpusched.State{}, nil, &fieldErr{field, err}
	}
	if st.Version < 0 || st.Version > Version {
		return bad("version", fmt.Errorf("version %d; this gpusched reads versions 1 to %d", st.Version, Version))
	}
	if st.Now.IsZero() {
		return bad("now", errors.New("missing: the time of the state"))
	}
	c, field, err := st.Cluster.build(opt)
	if err != nil {
		return bad(field, err)
	}
	if n := hostsOf(c); st.Hosts != 0 && st.Hosts != n {
		return bad("hosts", fmt.Errorf("%w: the state counts %d hosts, its cluster has %d", ErrNotWhole, st.Hosts, n))
	}
	cfg, fe := st.config(c, opt)
	if fe != nil {
		return bad(fe.field, fe.err)
	}
	gs.Now, gs.Config = st.Now, cfg
	states := make(map[string]queue.State, len(st.Jobs))
	groups := make(map[string][]workload.TaskGroup, len(st.Jobs))
	for i := range st.Jobs {
		j := &st.Jobs[i]
		f := fmt.Sprintf("jobs[%d]", i)
		js, field, err := j.check(f)
		if err != nil {
			return bad(field, err)
		}
		var tasks [][]topology.Claim
		if js.Holding() {
			var fe *fieldErr
			if tasks, fe = j.claims(c, f); fe != nil {
				return bad(fe.field, fe.err)
			}
		}
		if j.Moves < 0 {
			return bad(f+".moves", fmt.Errorf("negative count %d", j.Moves))
		}
		if j.Moves > 0 {
			gs.Defrag.Moves = append(gs.Defrag.Moves, gpusched.JobMoves{Job: j.ID, Moves: j.Moves})
		}
		gs.Jobs = append(gs.Jobs, gpusched.RestoredJob{Spec: j.Job, State: js, Tasks: tasks, Submitted: j.Submitted, Admitted: j.Admitted, Started: j.Started,
			Now: st.Now, Preemptions: j.Preemptions, Restarts: j.Restarts, Progress: j.Progress, Checkpoint: j.Checkpoint, Domain: j.Domain})
		states[j.ID], groups[j.ID] = js, j.Groups
	}
	// claimsOf turns the placement of in-flight entry f for job id into
	// claims per task group; the job must be one of the state's.
	claimsOf := func(f, id string, placement []Task) ([][]topology.Claim, *fieldErr) {
		g, ok := groups[id]
		if !ok {
			return nil, &fieldErr{f + ".job", fmt.Errorf("no job %q in the state", id)}
		}
		tmp := Job{Job: workload.Job{Groups: g}, Placement: placement}
		return tmp.claims(c, f)
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
			tasks, fe := claimsOf(f+"."+part.name, r.Job, part.tasks)
			if fe != nil {
				return bad(fe.field, fe.err)
			}
			for _, g := range tasks {
				*part.out = append(*part.out, g...)
			}
		}
		gs.Resizes = append(gs.Resizes, rz)
	}
	for i, n := range st.Nominations {
		nm := gpusched.Nomination{Job: n.Job, Victims: n.Victims, Due: n.Due, Domain: n.Domain}
		if len(n.Placement) > 0 {
			var fe *fieldErr
			if nm.Tasks, fe = claimsOf(fmt.Sprintf("nominations[%d]", i), n.Job, n.Placement); fe != nil {
				return bad(fe.field, fe.err)
			}
		}
		gs.Nominations = append(gs.Nominations, nm)
	}
	for _, t := range st.Tombstones {
		gs.Tombstones = append(gs.Tombstones, gpusched.Tombstone{Job: t.Job, State: t.State, At: t.At})
	}
	for _, r := range st.Refusals {
		gs.Refusals = append(gs.Refusals, gpusched.Refusal{Victim: r.Victim, Run: r.Run, Until: r.Until, Reason: r.Reason, Blocked: r.Blocked})
	}
	for i, m := range st.Migrations {
		to, fe := claimsOf(fmt.Sprintf("migrations[%d]", i), m.Job, m.To)
		if fe != nil {
			return bad(fe.field, fe.err)
		}
		gs.Defrag.Moving = append(gs.Defrag.Moving, gpusched.MigrationInFlight{Job: m.Job, To: to, Domain: m.Domain})
	}
	for _, e := range st.DefragLog {
		gs.Defrag.Issued = append(gs.Defrag.Issued, preempt.DefragIssued{At: e.At, Lost: preempt.GPUTime(e.Lost)})
	}
	gs.Stopping, gs.Fresh = st.Stopping, st.Fresh
	for _, u := range st.Usage {
		gs.Usage = append(gs.Usage, gpusched.QueueUsage{Queue: u.Queue, Usage: fairshare.Usage{Value: u.Value, At: u.At}})
	}
	for i, h := range st.Health {
		f := fmt.Sprintf("health[%d]", i)
		hh, ok := healthStates[h.State]
		if !ok {
			return bad(f+".state", fmt.Errorf("unknown health %q (want healthy, draining or failed)", h.State))
		}
		u := gpusched.Unhealthy{Host: h.Host, Health: hh}
		switch {
		case h.Host != "" && h.GPU == "":
			if _, ok := c.HostByName(h.Host); !ok {
				return bad(f+".host", fmt.Errorf("unknown host %q", h.Host))
			}
		case h.GPU != "" && h.Host == "":
			if u.GPU, err = gpuByName(c, h.GPU); err != nil {
				return bad(f+".gpu", err)
			}
		default:
			return bad(f, errors.New("give exactly one of host and gpu"))
		}
		gs.Health = append(gs.Health, u)
	}
	if fe := st.recovery(c, &gs); fe != nil {
		return bad(fe.field, fe.err)
	}
	gs.Cordoned = st.Cordoned
	for _, lh := range st.Leaving {
		gs.Leaving = append(gs.Leaving, gpusched.LeavingHost{Name: lh.Host, Template: lh.Template})
	}
	for i, r := range st.Reservations {
		rv := gpusched.Reservation{Job: r.Job, At: r.At, Forever: r.Forever, Current: r.Current, Filter: r.Filter, Built: r.Built, Domain: r.Domain}
		var fe *fieldErr
		if rv.Tasks, fe = claimsOf(fmt.Sprintf("reservations[%d]", i), r.Job, r.Placement); fe != nil {
			return bad(fe.field, fe.err)
		}
		gs.Reservations = append(gs.Reservations, rv)
	}
	for i, n := range st.NoPlans {
		f := fmt.Sprintf("noPlans[%d]", i)
		np := gpusched.NoPlan{Job: n.Job, Until: n.Until, Priority: n.Priority, Quotas: n.Quotas, Exact: n.Exact}
		for _, x := range []struct {
			field string
			names []string
			into  *[]topology.HostID
		}{{"gained", n.Gained, &np.Gained}, {"eligible", n.Eligible, &np.Eligible}} {
			for k, name := range x.names {
				h, ok := c.HostByName(name)
				if !ok {
					return bad(fmt.Sprintf("%s.%s[%d]", f, x.field, k), fmt.Errorf("unknown host %q", name))
				}
				*x.into = append(*x.into, h)
			}
		}
		gs.NoPlans = append(gs.NoPlans, np)
	}
	if k := st.Consolidation; k != nil {
		gs.Consolidation = gpusched.ConsolidateState{Busy: k.Busy, NothingFound: k.NothingFound, FoundMoves: k.FoundMoves, FoundLost: preempt.GPUTime(k.FoundLost), Now: st.Now}
		for _, e := range k.Log {
			gs.Consolidation.Issued = append(gs.Consolidation.Issued, preempt.DefragIssued{At: e.At, Lost: preempt.GPUTime(e.Lost)})
		}
	}
	return gs, states, nil
}

// config reads the state's settings into a gpusched.Config on cluster c,
// with opt's Preemptor.
func (st *State) config(c *topology.Cluster, opt Options) (gpusched.Config, *fieldErr) {
	placer, field, err := st.placer(c)
	if err != nil {
		return gpusched.Config{}, &fieldErr{field, err}
	}
	cfg := gpusched.Config{Cluster: c, Queues: st.Queues, Placer: placer, Seed: st.Seed, DefaultRuntime: st.DefaultRuntime, MaxReservations: st.MaxReservations,
		MaxRestarts: st.MaxRestarts, DrainGrace: st.DrainGrace, DrainKeep: st.DrainKeep, AdmitTimeout: st.AdmitTimeout, MaxGrace: st.MaxGrace,
		BackfillAround: st.BackfillAround, ReserveDepth: st.ReserveDepth, Preemptor: opt.Preemptor, EvictionRetry: st.EvictionRetry,
		ReserveWholeHosts: st.ReserveWholeHosts, MaxClockSkew: st.MaxClockSkew, MaxTombstones: st.MaxTombstones, Stats: opt.Stats}
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
					return cfg, &fieldErr{fmt.Sprintf("defrag.consolidate.levels[%d]", i), fmt.Errorf("cluster %s has no level %q", c.Name(), name)}
				}
				kc.Levels = append(kc.Levels, lv)
			}
			cfg.Defrag.Consolidate = kc
		}
	}
	if st.Consolidation != nil && (st.Defrag == nil || st.Defrag.Consolidate == nil) {
		return cfg, &fieldErr{"consolidation", errors.New("a consolidation state needs defrag.consolidate")}
	}
	return cfg, nil
}

// fileFields map the fields gpusched.Restore names (gpusched.StateError)
// to the file's, where they differ.
var fileFields = []struct{ from, to string }{
	{"recovery.inFlight[", "recovering["},
	{"recovery.faults[", "faults["},
	{"defrag.moving[", "migrations["},
	{"defrag.issued[", "defragLog["},
	{"consolidation.issued[", "consolidation.log["},
}

// fileField turns an error of gpusched.Restore into the field of the file
// at fault and the error to report there.
func (st *State) fileField(err error) (string, error) {
	var se *gpusched.StateError
	if !errors.As(err, &se) {
		return "", err
	}
	field, err := se.Field, se.Err
	// A placement's error names the field within it.
	placement := func() (string, error) {
		var we *workload.FieldError
		if errors.As(err, &we) {
			return field + ".placement", errors.New(we.Field + ": " + we.Msg)
		}
		return field, err
	}
	switch {
	case field == "config":
		var ce *queue.ConfigError
		if errors.As(err, &ce) {
			return "queues." + ce.Field, errors.New(ce.Msg)
		}
		return "", err
	case field == "defrag" && errors.Is(err, gpusched.ErrDefragOff):
		return "defrag", err
	case field == "defrag":
		field = "migrations"
		return placement()
	case strings.HasPrefix(field, "nominations[") || strings.HasPrefix(field, "reservations["):
		if !strings.HasSuffix(field, ".job") {
			return placement()
		}
	case strings.HasPrefix(field, "stopping[") || strings.HasPrefix(field, "fresh["):
		return strings.TrimSuffix(field, ".job"), err
	}
	for _, m := range fileFields {
		if strings.HasPrefix(field, m.from) {
			return m.to + field[len(m.from):], err
		}
	}
	return field, err
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

// recoveryActions are the actions of a recovery in flight, as the file
// names them.
var recoveryActions = map[string]preempt.Action{"requeue": preempt.ActionRequeue, "drain": preempt.ActionDrain, "end": preempt.ActionEnd}

// recovery reads the faults not yet planned and the recoveries in flight
// into gs.Recovery, after gs.Health. A file before version 9 (or without
// a version) that lists no faults has every part of gs.Health noted
// again, hosts then GPUs, as restoring the health did before version 9.
func (st *State) recovery(c *topology.Cluster, gs *gpusched.State) *fieldErr {
	if len(st.Faults) == 0 && st.Version < 9 {
		for _, u := range gs.Health {
			if u.Host != "" {
				h, _ := c.HostByName(u.Host)
				gs.Recovery.Faults = append(gs.Recovery.Faults, preempt.HostFault(h, u.Health, ""))
			} else {
				gs.Recovery.Faults = append(gs.Recovery.Faults, preempt.GPUFault(u.GPU, u.Health, ""))
			}
		}
	}
	for i, f := range st.Faults {
		fld := fmt.Sprintf("faults[%d]", i)
		hh, ok := healthStates[f.State]
		if !ok {
			return &fieldErr{fld + ".state", fmt.Errorf("unknown health %q (want healthy, draining or failed)", f.State)}
		}
		pf := preempt.Fault{GPU: topology.NoGPU, Host: topology.NoHost, Domain: topology.NoDomain, Health: hh}
		switch {
		case f.Host != "" && f.GPU == "" && f.Domain == "":
			if pf.Host, ok = c.HostByName(f.Host); !ok {
				return &fieldErr{fld + ".host", fmt.Errorf("unknown host %q", f.Host)}
			}
		case f.GPU != "" && f.Host == "" && f.Domain == "":
			g, err := gpuByName(c, f.GPU)
			if err != nil {
				return &fieldErr{fld + ".gpu", err}
			}
			pf.GPU = g
		case f.Domain != "" && f.Host == "" && f.GPU == "":
			if pf.Domain, ok = c.DomainByName(f.Domain); !ok {
				return &fieldErr{fld + ".domain", fmt.Errorf("unknown domain %q", f.Domain)}
			}
		default:
			return &fieldErr{fld, errors.New("give exactly one of host, gpu and domain")}
		}
		gs.Recovery.Faults = append(gs.Recovery.Faults, pf)
	}
	for i, r := range st.Recovering {
		a, ok := recoveryActions[r.Action]
		if !ok {
			return &fieldErr{fmt.Sprintf("recovering[%d].action", i), fmt.Errorf("unknown action %q (want requeue, drain or end)", r.Action)}
		}
		gs.Recovery.InFlight = append(gs.Recovery.InFlight, gpusched.RecoveryInFlight{Job: r.Job, Action: a})
	}
	return nil
}
