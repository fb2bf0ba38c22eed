package slurmharness

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched"
	slurmconf "github.com/gpusched/gpusched/importers/slurm"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Model is gpusched on an imported site: the cluster and the Slurm-like
// preset (slurmconf.Site.Preset).
type Model struct {
	Site   *slurmconf.Site
	Preset slurmconf.Preset
	// ReserveDepth, when > 0, replaces the preset's Config.ReserveDepth
	// (and raises MaxReservations to it): the what-if of scenario (d).
	ReserveDepth int
	// NoBackfillAround turns the preset's Config.BackfillAround off.
	NoBackfillAround bool
	// NoTreeNodeOrder turns the preset's TreeNodeOrder off (one-node jobs
	// placed by gang's topology best fit).
	NoTreeNodeOrder bool
	// NoWholeHosts turns the preset's ReserveWholeHosts off (reservations
	// hold only the GPUs, cores and memory they claim).
	NoWholeHosts bool
	// ArrivalsFirst makes Run take a cycle with the jobs arriving at an
	// instant before it processes the ends at that instant (a what-if:
	// Slurm's sacct gives both to the second, and the captured runs show
	// both orders).
	ArrivalsFirst bool
}

// LoadModel imports the site configuration in dir.
func LoadModel(dir string) (*Model, error) {
	s, err := slurmconf.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return &Model{Site: s, Preset: s.Preset()}, nil
}

func (m *Model) scheduler() (*gpusched.Scheduler, *topology.Cluster, error) {
	p := m.Preset
	if m.NoTreeNodeOrder {
		p.TreeNodeOrder = false
	}
	cfg, err := p.Config(m.Site)
	if err != nil {
		return nil, nil, err
	}
	if m.NoBackfillAround {
		cfg.BackfillAround = false
	}
	if m.NoWholeHosts {
		cfg.ReserveWholeHosts = false
	}
	if m.ReserveDepth > 0 {
		cfg.ReserveDepth = m.ReserveDepth
		cfg.MaxReservations = max(cfg.MaxReservations, m.ReserveDepth)
	}
	cfg.MaxClockSkew = -1 // a replay: the recorded clock jumps from one event to the next
	s, err := gpusched.New(cfg)
	return s, cfg.Cluster, err
}

// Job is j as a gpusched job: one task per node (a gang of Nodes tasks),
// its time limit as the runtime estimate, in the preset's one leaf.
func Job(j JobSpec) workload.Job {
	g := workload.TaskGroup{Count: j.Nodes, GPUs: j.GPUs, CPUMilli: int64(j.CPUs) * 1000, MemoryMiB: j.MemMiB}
	if j.Type != "" {
		g.Models = []string{j.Type}
	}
	return workload.Job{ID: j.Name, Queue: "default", Groups: []workload.TaskGroup{g}, Runtime: j.Limit}
}

// Placement is where a job runs: its nodes (sorted) and GPU indices per node.
type Placement struct {
	Nodes []string
	GPUs  map[string][]int
}

func placementOf(c *topology.Cluster, b gpusched.Binding) Placement {
	p := Placement{GPUs: map[string][]int{}}
	for _, cl := range b.Placement.Claims {
		h := c.HostName(cl.Host)
		first, _ := c.HostGPUs(cl.Host)
		if _, ok := p.GPUs[h]; !ok {
			p.Nodes = append(p.Nodes, h)
		}
		for _, g := range cl.GPUs {
			p.GPUs[h] = append(p.GPUs[h], int(g.GPU-first))
		}
	}
	slices.Sort(p.Nodes)
	for _, ids := range p.GPUs {
		slices.Sort(ids)
	}
	return p
}

// Place submits jobs in order at one instant and runs one cycle: where
// each job that starts goes.
func (m *Model) Place(jobs []JobSpec, now time.Time) (map[string]Placement, error) {
	s, c, err := m.scheduler()
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if err := s.Submit(Job(j), now); err != nil {
			return nil, fmt.Errorf("gpusched: %s: %w", j.Name, err)
		}
	}
	d := s.Schedule(now)
	out := map[string]Placement{}
	for _, b := range d.Bindings {
		out[b.Job] = placementOf(c, b)
	}
	return out, nil
}

// Run submits each job at now+Arrive and runs it for its duration (dur, or
// its Limit when dur has no entry): a discrete-event replay that calls
// Schedule at every arrival and end and every interval (0: only on
// events), until every job has started and ended. It returns each job's
// start time and placement.
func (m *Model) Run(jobs []JobSpec, dur map[string]time.Duration, now time.Time, interval time.Duration) (map[string]time.Time, map[string]Placement, error) {
	st, first, _, err := m.RunWhy(jobs, dur, now, interval)
	return st, first, err
}

// Wait is why gpusched kept a job waiting at one cycle.
type Wait struct {
	At     time.Time
	Reason string
}

// RunWhy is Run that also returns, per job, why it waited at each cycle
// before it started (the Scheduler's Decision.Pending reasons).
func (m *Model) RunWhy(jobs []JobSpec, dur map[string]time.Duration, now time.Time, interval time.Duration) (map[string]time.Time, map[string]Placement, map[string][]Wait, error) {
	s, c, err := m.scheduler()
	if err != nil {
		return nil, nil, nil, err
	}
	order := slices.Clone(jobs)
	slices.SortStableFunc(order, func(a, b JobSpec) int { return int(a.Arrive - b.Arrive) })
	starts := map[string]time.Time{}
	first := map[string]Placement{}
	ends := map[string]time.Time{}
	why := map[string][]Wait{}
	next, t := 0, now
	cycle := func(t time.Time) error {
		d := s.Schedule(t)
		for _, p := range d.Pending {
			why[p.Job] = append(why[p.Job], Wait{At: t, Reason: p.Reason.String()})
		}
		for _, b := range d.Bindings {
			if err := s.Started(b.Job, t); err != nil {
				return err
			}
			starts[b.Job] = t
			first[b.Job] = placementOf(c, b)
			dd, ok := dur[b.Job]
			if !ok {
				dd = Job(specOf(jobs, b.Job)).Runtime
			}
			ends[b.Job] = t.Add(dd)
		}
		return nil
	}
	for cycles := 0; len(starts) < len(jobs) || len(ends) > 0; cycles++ {
		if cycles > 1_000_000 {
			return nil, nil, nil, fmt.Errorf("gpusched replay: no progress (%d of %d jobs started)", len(starts), len(jobs))
		}
		// Arrivals first: a job whose begin time is this second is seen by
		// Slurm's scheduler before the ends recorded in the same second
		// (sacct truncates a job's end to the second; the job ran into
		// it). So one cycle with the new arrivals and the ends not yet
		// processed, then the ends and another cycle.
		arrived := false
		for next < len(order) && !now.Add(order[next].Arrive).After(t) {
			if err := s.Submit(Job(order[next]), t); err != nil {
				return nil, nil, nil, fmt.Errorf("gpusched: %s: %w", order[next].Name, err)
			}
			next++
			arrived = true
		}
		ending := false
		for _, e := range ends {
			ending = ending || !e.After(t)
		}
		if arrived && ending && m.ArrivalsFirst {
			if err := cycle(t); err != nil {
				return nil, nil, nil, err
			}
		}
		for id, e := range sortedEnds(ends) {
			if !e.After(t) {
				if err := s.Finished(id, t); err != nil {
					return nil, nil, nil, err
				}
				delete(ends, id)
			}
		}
		if err := cycle(t); err != nil {
			return nil, nil, nil, err
		}
		// The next event: an arrival, an end, or the next periodic cycle.
		nt := time.Time{}
		if next < len(order) {
			nt = now.Add(order[next].Arrive)
		}
		for _, e := range ends {
			if nt.IsZero() || e.Before(nt) {
				nt = e
			}
		}
		if interval > 0 && len(starts) < next {
			if p := t.Add(interval); nt.IsZero() || p.Before(nt) {
				nt = p
			}
		}
		if nt.IsZero() {
			if len(starts) < len(jobs) {
				return nil, nil, nil, fmt.Errorf("gpusched replay: %d jobs can never start", len(jobs)-len(starts))
			}
			break
		}
		t = nt
	}
	return starts, first, why, nil
}

func specOf(jobs []JobSpec, name string) JobSpec {
	for _, j := range jobs {
		if j.Name == name {
			return j
		}
	}
	return JobSpec{}
}

// sortedEnds returns ends in (time, ID) order, so Finished is called in
// the same order every run.
func sortedEnds(ends map[string]time.Time) func(yield func(string, time.Time) bool) {
	ids := make([]string, 0, len(ends))
	for id := range ends {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := ends[a].Compare(ends[b]); c != 0 {
			return c
		}
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
		return 0
	})
	return func(yield func(string, time.Time) bool) {
		for _, id := range ids {
			if !yield(id, ends[id]) {
				return
			}
		}
	}
}
