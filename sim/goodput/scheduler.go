package goodput

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// DefaultRound is the period of the allocation: Pollux's scheduling
// interval (its simulator's --interval, 60 s).
const DefaultRound = time.Minute

// DefaultRestartDelay is the delay of the resize discount: the 30 s
// Pollux's simulator charges a job per re-allocation.
const DefaultRestartDelay = 30 * time.Second

// Config configures a Scheduler.
type Config struct {
	// Cluster is the run's cluster. Required.
	Cluster *topology.Cluster
	// Model is the throughput model the allocation maximizes over.
	// Required and valid.
	Model *Model
	// Types maps job IDs to their types in Model; a job it does not name
	// has the Model's Default.
	Types map[string]string
	// Round is the period of the allocation; 0: DefaultRound.
	Round time.Duration
	// RestartDelay is the Allocator's resize discount delay; 0:
	// DefaultRestartDelay.
	RestartDelay time.Duration
	// Grace is the time the tasks of a shrink and a preempted job get to
	// checkpoint; 0: the simulator's default.
	Grace time.Duration
	// Sizer, if set, computes the sizes instead of the Allocator (a
	// researcher's policy, registered in a policy.Registry). Its sizes
	// are checked: one per job, each 0 or within the job's bounds, their
	// sum at most the usable GPUs; the first violation or error is kept
	// (Err) and the sizes stay as they were from then on.
	Sizer policy.Sizer
}

// Scheduler is a goodput-style adaptive scheduler for the simulator
// (a sim.Scheduler and sim.Resizer). Every Round it computes each live
// job's size with its Allocator, then shrinks (or, at size 0, preempts)
// the running jobs above their size and, as GPUs come free, grows the
// ones below it and binds the waiting ones given GPUs — in arrival order,
// a new job on as few hosts as possible under one switch, a growing one
// on its own hosts first, then under its switch. A job waits for its
// whole size while shrinks or preemptions are in flight; when none is,
// it takes what is free (at least its minimum). Sizes change only at
// rounds; GPUs freed between rounds wait for the next.
//
// Jobs must have one task group of 1-GPU tasks (Count the most GPUs,
// MinCount the fewest: Elastic rewrites trace jobs so); other jobs are
// refused at Submit. Faults: a running job on a failed GPU or host is
// requeued, one on a draining one drained. Deterministic; not safe for
// concurrent use.
type Scheduler struct {
	cfg        Config
	alloc      Allocator
	c          *topology.Cluster
	used       []bool // per GPU
	gpuHealth  []topology.Health
	hostHealth []topology.Health
	cpuFree    []int64
	memFree    []int64
	jobs       map[string]*gjob
	live       []*gjob // arrival order
	seq        int
	next       time.Duration // the next round
	rounded    bool          // a round ran
	hostGPUs   int
	err        error // the Sizer's first failure
}

// gjob is one live job.
type gjob struct {
	id       string
	seq      int
	submit   time.Duration
	typ      string
	min, max int
	cpu, mem int64            // per task
	claims   []topology.Claim // held while it runs, one per task (a shrink's too, until it is done)
	shrink   []topology.Claim // a shrink in flight
	running  bool             // bound (started or about to)
	stopping bool             // preempted or recovering: it stops
	started  bool             // it ran before
	resizes  int              // re-allocations: resizes and restarts
	target   int              // the allocation's size
}

var (
	_ sim.Scheduler = (*Scheduler)(nil)
	_ sim.Resizer   = (*Scheduler)(nil)
)

// New checks cfg and returns a Scheduler.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Cluster == nil {
		return nil, errors.New("goodput: no cluster")
	}
	if err := cfg.Model.Validate(); err != nil {
		return nil, err
	}
	if cfg.Round < 0 || cfg.RestartDelay < 0 || cfg.Grace < 0 {
		return nil, fmt.Errorf("goodput: round %v, restart delay %v, grace %v: want ≥ 0", cfg.Round, cfg.RestartDelay, cfg.Grace)
	}
	if cfg.Round == 0 {
		cfg.Round = DefaultRound
	}
	if cfg.RestartDelay == 0 {
		cfg.RestartDelay = DefaultRestartDelay
	}
	c := cfg.Cluster
	s := &Scheduler{cfg: cfg, c: c, jobs: map[string]*gjob{}, hostGPUs: maxHostGPUs(c),
		used: make([]bool, c.NumGPUs()), gpuHealth: make([]topology.Health, c.NumGPUs()),
		hostHealth: make([]topology.Health, c.NumHosts()), cpuFree: make([]int64, c.NumHosts()), memFree: make([]int64, c.NumHosts())}
	for h := range c.NumHosts() {
		hi := c.Host(topology.HostID(h))
		if hi.Removed {
			s.hostHealth[h] = topology.Failed
		}
		s.cpuFree[h], s.memFree[h] = hi.CPUMilli, hi.MemoryMiB
	}
	s.alloc = Allocator{Model: cfg.Model, HostGPUs: s.hostGPUs, RestartDelay: cfg.RestartDelay}
	return s, nil
}

// Submit adds a job of one group of 1-GPU tasks.
func (s *Scheduler) Submit(now time.Duration, j workload.Job) error {
	if len(j.Groups) != 1 {
		return fmt.Errorf("goodput: job %s has %d task groups; want one group of 1-GPU tasks", j.ID, len(j.Groups))
	}
	g := j.Groups[0]
	if g.GPUs != 1 || g.GPUMilli != 0 || g.MIGProfile != "" || g.Count < 1 {
		return fmt.Errorf("goodput: job %s: want tasks of one whole GPU each (got %d GPUs, %d milli, MIG %q)", j.ID, g.GPUs, g.GPUMilli, g.MIGProfile)
	}
	if len(g.Models) > 0 {
		return fmt.Errorf("goodput: job %s restricts the GPU model (%v); goodput places on any", j.ID, g.Models)
	}
	if g.Min() > s.c.NumGPUs() {
		return fmt.Errorf("goodput: job %s needs %d GPUs; the cluster has %d", j.ID, g.Min(), s.c.NumGPUs())
	}
	if _, dup := s.jobs[j.ID]; dup {
		return fmt.Errorf("goodput: job %s submitted twice", j.ID)
	}
	gj := &gjob{id: j.ID, seq: s.seq, submit: now, typ: s.cfg.Types[j.ID], min: g.Min(), max: g.Count, cpu: g.CPUMilli, mem: g.MemoryMiB}
	s.seq++
	s.jobs[j.ID] = gj
	s.live = append(s.live, gj)
	return nil
}

// Schedule runs one cycle: recoveries, the allocation when a round is
// due, then the resizes, preemptions and bindings that move the jobs
// toward it.
func (s *Scheduler) Schedule(now time.Duration) sim.Decision {
	var d sim.Decision
	s.recover(&d)
	if !s.rounded || now >= s.next {
		s.allocate(now)
		s.rounded, s.next = true, now+s.cfg.Round
	}
	s.apply(&d)
	if len(s.live) > 0 {
		d.Wake = s.next
	}
	return d
}

// Sizes returns each live job's size in the last allocation, by ID.
func (s *Scheduler) Sizes() map[string]int {
	out := make(map[string]int, len(s.live))
	for _, j := range s.live {
		out[j.id] = j.target
	}
	return out
}

// allocate sets every live job's target size.
func (s *Scheduler) allocate(now time.Duration) {
	ds := make([]Demand, 0, len(s.live))
	idx := make([]*gjob, 0, len(s.live))
	for _, j := range s.live {
		if j.stopping {
			j.target = 0
			continue
		}
		cur := 0
		if j.running {
			cur = len(j.claims) - len(j.shrink)
		}
		ds = append(ds, Demand{Type: j.typ, Min: j.min, Max: j.max, Current: cur, Age: now - j.submit, Resizes: j.resizes})
		idx = append(idx, j)
	}
	gpus := s.usableGPUs()
	var sizes []int
	if s.cfg.Sizer == nil {
		sizes = s.alloc.Allocate(ds, gpus)
	} else if sizes = s.size(idx, ds, gpus); sizes == nil {
		return
	}
	for i, j := range idx {
		j.target = sizes[i]
	}
}

// size asks the Sizer for the sizes of the jobs idx (ds) and checks
// them; nil after an error, which it keeps.
func (s *Scheduler) size(idx []*gjob, ds []Demand, gpus int) []int {
	if s.err != nil {
		return nil
	}
	jobs := make([]policy.SizeJob, len(ds))
	for i, d := range ds {
		jobs[i] = policy.SizeJob{ID: idx[i].id, Type: d.Type, Min: d.Min, Max: d.Max, Current: d.Current, Age: d.Age, Resizes: d.Resizes}
	}
	speedup := func(typ string, k int) float64 { return s.cfg.Model.Speedup(typ, k, Packed(k, s.hostGPUs)) }
	sizes, err := s.cfg.Sizer.Size(jobs, gpus, speedup)
	if err == nil {
		err = checkSizes(jobs, sizes, gpus)
	}
	if err != nil {
		s.err = fmt.Errorf("goodput: sizer: %w", err)
		return nil
	}
	return sizes
}

// checkSizes checks a Sizer's answer.
func checkSizes(jobs []policy.SizeJob, sizes []int, gpus int) error {
	if len(sizes) != len(jobs) {
		return fmt.Errorf("%d sizes for %d jobs", len(sizes), len(jobs))
	}
	sum := 0
	for i, k := range sizes {
		if k != 0 && (k < jobs[i].Min || k > jobs[i].Max) {
			return fmt.Errorf("job %s: size %d outside its bounds [%d, %d] (or 0)", jobs[i].ID, k, jobs[i].Min, jobs[i].Max)
		}
		sum += k
	}
	if sum > gpus {
		return fmt.Errorf("sizes sum to %d GPUs; %d are usable", sum, gpus)
	}
	return nil
}

// Err returns the Sizer's first failure, or nil.
func (s *Scheduler) Err() error { return s.err }

// usableGPUs counts the GPUs that are healthy on healthy hosts.
func (s *Scheduler) usableGPUs() int {
	n := 0
	for h := range s.hostHealth {
		if s.hostHealth[h] != topology.Healthy {
			continue
		}
		first, k := s.c.HostGPUs(topology.HostID(h))
		for g := first; g < first+topology.GPUID(k); g++ {
			if s.gpuHealth[g] == topology.Healthy {
				n++
			}
		}
	}
	return n
}

// apply moves the jobs toward their targets.
func (s *Scheduler) apply(d *sim.Decision) {
	for _, j := range s.live {
		if !j.running || j.stopping || len(j.shrink) > 0 || j.target >= len(j.claims) {
			continue
		}
		if j.target == 0 {
			j.stopping = true
			d.Preemptions = append(d.Preemptions, sim.Preemption{Job: j.id, Grace: s.cfg.Grace, Reason: "goodput: no GPUs in this round's allocation"})
			continue
		}
		j.shrink = s.shrinkClaims(j, len(j.claims)-j.target)
		d.Shrinks = append(d.Shrinks, sim.Shrink{Job: j.id, Claims: slices.Clone(j.shrink), Grace: s.cfg.Grace})
	}
	inFlight := false
	for _, j := range s.live {
		inFlight = inFlight || j.stopping || len(j.shrink) > 0
	}
	free := 0
	for h := range s.hostHealth {
		free += s.freeOn(topology.HostID(h), 0, 0)
	}
	for _, j := range s.live {
		switch {
		case j.stopping:
		case j.running:
			if len(j.shrink) > 0 || j.target <= len(j.claims) {
				continue
			}
			need := take(j.target-len(j.claims), 1, free, inFlight)
			if need == 0 {
				continue
			}
			cs := s.growClaims(j, need)
			if len(cs) == 0 {
				continue
			}
			s.hold(j, cs)
			free -= len(cs)
			j.resizes++
			d.Grows = append(d.Grows, sim.Grow{Job: j.id, Claims: slices.Clone(cs)})
		default:
			if j.target > 0 {
				if need := take(j.target, j.min, free, inFlight); need > 0 {
					if cs := s.placeClaims(j, need); len(cs) >= j.min {
						s.hold(j, cs)
						free -= len(cs)
						j.running = true
						if j.started {
							j.resizes++
						}
						d.Bindings = append(d.Bindings, sim.Binding{Job: j.id, Claims: slices.Clone(cs)})
						continue
					}
				}
			}
			d.Pending = append(d.Pending, sim.Pending{Job: j.id, Reason: sim.ReasonCapacity})
		}
	}
}

// take is how many of want GPUs a job gets now, free being free: want
// when that many are free; else, with nothing in flight, what is free if
// at least least; else 0.
func take(want, least, free int, inFlight bool) int {
	switch {
	case want <= free:
		return want
	case !inFlight && free >= least:
		return free
	}
	return 0
}

// freeOn counts the tasks of cpu and mem host h can take now: free
// healthy GPUs, bounded by its free CPU and memory.
func (s *Scheduler) freeOn(h topology.HostID, cpu, mem int64) int {
	if s.hostHealth[h] != topology.Healthy {
		return 0
	}
	first, k := s.c.HostGPUs(h)
	n := 0
	for g := first; g < first+topology.GPUID(k); g++ {
		if !s.used[g] && s.gpuHealth[g] == topology.Healthy {
			n++
		}
	}
	if cpu > 0 {
		n = min(n, int(s.cpuFree[h]/cpu))
	}
	if mem > 0 {
		n = min(n, int(s.memFree[h]/mem))
	}
	return n
}

// claimsOn returns n task claims of j on host h's free GPUs.
func (s *Scheduler) claimsOn(j *gjob, h topology.HostID, n int) []topology.Claim {
	first, k := s.c.HostGPUs(h)
	var out []topology.Claim
	for g := first; g < first+topology.GPUID(k) && len(out) < n; g++ {
		if !s.used[g] && s.gpuHealth[g] == topology.Healthy {
			out = append(out, topology.Claim{Host: h, CPUMilli: j.cpu, MemoryMiB: j.mem, GPUs: []topology.GPUClaim{{GPU: g, Kind: topology.ClaimWhole}}})
		}
	}
	return out
}

// hold makes cs j's.
func (s *Scheduler) hold(j *gjob, cs []topology.Claim) {
	for _, c := range cs {
		s.used[c.GPUs[0].GPU] = true
		s.cpuFree[c.Host] -= c.CPUMilli
		s.memFree[c.Host] -= c.MemoryMiB
	}
	j.claims = append(j.claims, cs...)
}

// release frees cs, which j held.
func (s *Scheduler) release(j *gjob, cs []topology.Claim) {
	for _, c := range cs {
		s.used[c.GPUs[0].GPU] = false
		s.cpuFree[c.Host] += c.CPUMilli
		s.memFree[c.Host] += c.MemoryMiB
		if k := slices.IndexFunc(j.claims, func(x topology.Claim) bool { return x.Equal(c) }); k >= 0 {
			j.claims = slices.Delete(j.claims, k, k+1)
		}
	}
}

// placeClaims places n tasks of a waiting job: on the host that fits
// them most tightly, else on as few hosts as possible of the switch
// (network domain) with the most room, else over the whole cluster,
// fullest hosts first.
func (s *Scheduler) placeClaims(j *gjob, n int) []topology.Claim {
	free := make([]int, s.c.NumHosts())
	best := -1
	for h := range free {
		free[h] = s.freeOn(topology.HostID(h), j.cpu, j.mem)
		if free[h] >= n && (best < 0 || free[h] < free[best]) {
			best = h
		}
	}
	if best >= 0 {
		return s.claimsOn(j, topology.HostID(best), n)
	}
	room := map[topology.DomainID]int{}
	var order []topology.DomainID
	for h, f := range free {
		p := s.c.Host(topology.HostID(h)).Parent
		if _, ok := room[p]; !ok {
			order = append(order, p)
		}
		room[p] += f
	}
	var pick topology.DomainID = topology.NoDomain
	for _, p := range order {
		if room[p] >= n && (pick == topology.NoDomain || room[p] > room[pick]) {
			pick = p
		}
	}
	hosts := make([]int, 0, len(free))
	for h := range free {
		if free[h] > 0 && (pick == topology.NoDomain || s.c.Host(topology.HostID(h)).Parent == pick) {
			hosts = append(hosts, h)
		}
	}
	slices.SortStableFunc(hosts, func(a, b int) int { return free[b] - free[a] })
	var out []topology.Claim
	for _, h := range hosts {
		if len(out) == n {
			break
		}
		out = append(out, s.claimsOn(j, topology.HostID(h), min(free[h], n-len(out)))...)
	}
	return out
}

// growClaims places n more tasks of running job j: on its own hosts
// first, then on hosts of its first host's switch, then anywhere; the
// most free first in each.
func (s *Scheduler) growClaims(j *gjob, n int) []topology.Claim {
	mine := map[topology.HostID]bool{}
	for _, c := range j.claims {
		mine[c.Host] = true
	}
	parent := s.c.Host(j.claims[0].Host).Parent
	rank := func(h topology.HostID) int {
		switch {
		case mine[h]:
			return 0
		case s.c.Host(h).Parent == parent:
			return 1
		}
		return 2
	}
	free := make([]int, s.c.NumHosts())
	var hosts []topology.HostID
	for h := range free {
		if free[h] = s.freeOn(topology.HostID(h), j.cpu, j.mem); free[h] > 0 {
			hosts = append(hosts, topology.HostID(h))
		}
	}
	slices.SortStableFunc(hosts, func(a, b topology.HostID) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return free[b] - free[a]
	})
	var out []topology.Claim
	for _, h := range hosts {
		if len(out) == n {
			break
		}
		out = append(out, s.claimsOn(j, h, min(free[h], n-len(out)))...)
	}
	return out
}

// shrinkClaims picks n of j's tasks to stop: on the hosts where it has
// the fewest, so what stays is packed; ties on the later host, the later
// task first.
func (s *Scheduler) shrinkClaims(j *gjob, n int) []topology.Claim {
	count := map[topology.HostID]int{}
	for _, c := range j.claims {
		count[c.Host]++
	}
	idx := make([]int, len(j.claims))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ha, hb := j.claims[a].Host, j.claims[b].Host
		if count[ha] != count[hb] {
			return count[ha] - count[hb]
		}
		if ha != hb {
			return int(hb) - int(ha)
		}
		return b - a
	})
	out := make([]topology.Claim, n)
	for i := range n {
		out[i] = j.claims[idx[i]]
	}
	return out
}

// recover requeues the running jobs on failed GPUs or hosts and drains
// those on draining ones.
func (s *Scheduler) recover(d *sim.Decision) {
	for _, j := range s.live {
		if !j.running || j.stopping {
			continue
		}
		failed, draining := false, false
		for _, c := range j.claims {
			for _, h := range []topology.Health{s.hostHealth[c.Host], s.gpuHealth[c.GPUs[0].GPU]} {
				failed = failed || h == topology.Failed
				draining = draining || h == topology.Draining
			}
		}
		switch {
		case failed:
			d.Recoveries = append(d.Recoveries, sim.Recovery{Job: j.id, Action: sim.RecoverRequeue, Reason: "goodput: a GPU or host under it failed"})
		case draining:
			d.Recoveries = append(d.Recoveries, sim.Recovery{Job: j.id, Action: sim.RecoverDrain, Grace: s.cfg.Grace, Reason: "goodput: a GPU or host under it is draining"})
		default:
			continue
		}
		j.stopping = true
	}
}

// Started reports a binding carried out.
func (s *Scheduler) Started(_ time.Duration, id string) error {
	j, err := s.job(id)
	if err == nil {
		j.started = true
	}
	return err
}

// Checkpointed is a no-op: the allocation does not price lost work.
func (s *Scheduler) Checkpointed(_ time.Duration, id string, _ time.Duration) error {
	_, err := s.job(id)
	return err
}

// Finished frees a completed job's GPUs and forgets it.
func (s *Scheduler) Finished(_ time.Duration, id string) error { return s.drop(id) }

// Removed frees a failed job's GPUs and forgets it.
func (s *Scheduler) Removed(_ time.Duration, id string) error { return s.drop(id) }

// Stopped frees a stopped job's GPUs; it waits again.
func (s *Scheduler) Stopped(_ time.Duration, id string, _ sim.StopCause) error {
	j, err := s.job(id)
	if err != nil {
		return err
	}
	s.release(j, slices.Clone(j.claims))
	j.shrink, j.running, j.stopping = nil, false, false
	return nil
}

// Shrunk frees the GPUs of a job's shrink.
func (s *Scheduler) Shrunk(_ time.Duration, id string) error {
	j, err := s.job(id)
	if err != nil {
		return err
	}
	if len(j.shrink) == 0 {
		return fmt.Errorf("goodput: Shrunk(%s): no shrink in flight", id)
	}
	s.release(j, j.shrink)
	j.shrink = nil
	j.resizes++
	return nil
}

// Grown is a no-op: a grow's GPUs were the job's from its Decision on.
func (s *Scheduler) Grown(_ time.Duration, id string) error {
	_, err := s.job(id)
	return err
}

// SetGPUHealth records a GPU's health: only Healthy GPUs take work.
func (s *Scheduler) SetGPUHealth(_ time.Duration, g topology.GPUID, h topology.Health) error {
	if int(g) < 0 || int(g) >= len(s.gpuHealth) {
		return fmt.Errorf("goodput: GPU %d out of range", g)
	}
	s.gpuHealth[g] = h
	return nil
}

// SetHostHealth records a host's health: only Healthy hosts take work.
func (s *Scheduler) SetHostHealth(_ time.Duration, h topology.HostID, hh topology.Health) error {
	if int(h) < 0 || int(h) >= len(s.hostHealth) {
		return fmt.Errorf("goodput: host %d out of range", h)
	}
	s.hostHealth[h] = hh
	return nil
}

func (s *Scheduler) job(id string) (*gjob, error) {
	j, ok := s.jobs[id]
	if !ok {
		return nil, fmt.Errorf("goodput: unknown job %q", id)
	}
	return j, nil
}

// drop frees an ended job's GPUs and forgets it.
func (s *Scheduler) drop(id string) error {
	j, err := s.job(id)
	if err != nil {
		return err
	}
	s.release(j, slices.Clone(j.claims))
	delete(s.jobs, id)
	s.live = slices.DeleteFunc(s.live, func(x *gjob) bool { return x == j })
	return nil
}
