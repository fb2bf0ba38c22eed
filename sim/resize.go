package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// elastic returns groups with every group of more than one task made
// elastic down to ⌈share × Count⌉ tasks (Config.Elastic), unless it has a
// MinCount already.
func elastic(groups []workload.TaskGroup, share float64) []workload.TaskGroup {
	out := slices.Clone(groups)
	for i := range out {
		g := &out[i]
		if g.Count > 1 && g.MinCount == 0 {
			if m := max(1, int(math.Ceil(share*float64(g.Count)))); m < g.Count {
				g.MinCount = m
			}
		}
	}
	return out
}

// resizes carries out a Decision's shrinks and grows (see Resizer).
func (s *Simulation) resizes(now time.Duration, d *Decision) error {
	if len(d.Shrinks) == 0 && len(d.Grows) == 0 {
		return nil
	}
	rz, ok := s.cfg.Scheduler.(Resizer)
	if !ok {
		return fmt.Errorf("%w: a Decision shrinks or grows jobs, and its Scheduler is no Resizer", ErrInvariant)
	}
	s.bound = true
	for _, sh := range d.Shrinks {
		i, err := s.lookup(sh.Job, StateRunning, "shrink")
		if err != nil {
			return err
		}
		j := &s.jobs[i]
		if j.crashed || j.stopEv != 0 || j.shrinkEv != 0 {
			continue // on its way out (the Scheduler forgets the shrink when it stops), or shrinking
		}
		if _, err := s.without(j, sh.Claims); err != nil {
			return fmt.Errorf("%w: shrink of job %q: %v", ErrInvariant, sh.Job, err)
		}
		grace := sh.Grace
		if grace <= 0 {
			grace = s.cfg.Preemption.Grace
		}
		claims, notice := slices.Clone(sh.Claims), now
		j.shrinkEv = s.eng.Schedule(now+grace, func(t time.Duration) {
			s.jobs[i].shrinkEv = 0
			s.shrunk(t, notice, i, claims, rz)
		})
	}
	for _, g := range d.Grows {
		i, err := s.lookup(g.Job, StateRunning, "grow")
		if err != nil {
			return err
		}
		j := &s.jobs[i]
		if n := len(j.claims) + len(g.Claims); n > j.spec.Tasks() {
			return fmt.Errorf("%w: grow of job %q to %d tasks; it has %d", ErrInvariant, g.Job, n, j.spec.Tasks())
		}
		if err := s.led.Allocate(g.Claims...); err != nil {
			return fmt.Errorf("%w: grow of job %q: %v", ErrInvariant, g.Job, err)
		}
		s.resized(now, i, append(slices.Clone(j.claims), g.Claims...))
		s.m.grows++
		if err := rz.Grown(now, g.Job); err != nil {
			return fmt.Errorf("sim: Grown(%s): %w", g.Job, err)
		}
	}
	return nil
}

// without returns j's claims less cs, each of which must be one of them.
func (s *Simulation) without(j *job, cs []topology.Claim) ([]topology.Claim, error) {
	left := slices.Clone(j.claims)
	for _, c := range cs {
		k := slices.IndexFunc(left, func(x topology.Claim) bool { return x.Equal(c) })
		if k < 0 {
			return nil, fmt.Errorf("claim on host %s is not the job's", s.c.HostName(c.Host))
		}
		left = slices.Delete(left, k, k+1)
	}
	if len(left) < j.spec.MinTasks() {
		return nil, fmt.Errorf("%d tasks left; the job needs %d", len(left), j.spec.MinTasks())
	}
	return left, nil
}

// shrunk stops the tasks of claims of job i at now, the grace of its
// shrink asked at notice over, and reports it. With checkpoints on, the
// tasks checkpoint in the grace period when it is long enough, as a
// preempted job does, and lose nothing; else they lose the work since
// the job's last checkpoint.
func (s *Simulation) shrunk(now, notice time.Duration, i int32, claims []topology.Claim, rz Resizer) {
	j := &s.jobs[i]
	if j.state != StateRunning || j.crashed {
		return
	}
	left, err := s.without(j, claims)
	if err != nil {
		s.fail(fmt.Errorf("%w: shrink of job %q: %v", ErrInvariant, j.spec.ID, err))
		return
	}
	s.account(now)
	if err := s.led.Release(claims...); err != nil {
		s.fail(fmt.Errorf("%w: shrink of job %q: %v", ErrInvariant, j.spec.ID, err))
		return
	}
	lost := (now - max(j.segStart, j.lastCkpt)).Seconds() * float64(claimMilli(s.c, claims)) / topology.MilliPerGPU
	if ov := s.ckptOverhead(j); j.ckpt > 0 && now-ov >= j.segStart+j.restart && now-ov >= notice && now > j.segStart {
		lost = 0
	}
	s.m.shrunk(lost)
	s.resized(now, i, left)
	if err := rz.Shrunk(now, j.spec.ID); err != nil {
		s.fail(fmt.Errorf("sim: Shrunk(%s): %w", j.spec.ID, err))
		return
	}
	s.requestCycle(now)
}

// sizeSpeed is the speed factor of j's size: for a job with an elastic
// group, the tasks it holds over the tasks it asks for (linear scaling,
// the usual first model of data-parallel training); 1 for a rigid job,
// whose trace duration is at its full size.
func sizeSpeed(j *job) float64 {
	for _, g := range j.spec.Groups {
		if g.MinCount > 0 && g.MinCount < g.Count {
			return float64(len(j.claims)) / float64(j.spec.Tasks())
		}
	}
	return 1
}

// resized switches running job i to claims at now (the ledger already
// changed): its segment ends there without a stop (the work done so far
// is kept, though what no checkpoint covers yet is lost if the run stops
// before the next one), and a new one starts at now, without a reload,
// at the speed of its new size, with its hosts and GPUs held; it pauses
// for the ResizeCost first.
func (s *Simulation) resized(now time.Duration, i int32, claims []topology.Claim) {
	j := &s.jobs[i]
	s.account(now)
	worked, saved := s.workedBy(j, now)
	done := math.Min(worked*j.speed, j.work)
	if saved > 0 {
		j.unsaved = 0 // a checkpoint of this segment covers the earlier ones
	}
	j.unsaved += done - math.Min(saved*j.speed, done)
	s.m.segment(j, now, now, done, false, 0)
	j.work -= done
	for _, ev := range []*EventID{&j.endEv, &j.ckptEv} {
		if *ev != 0 {
			s.eng.Cancel(*ev)
			*ev = 0
		}
	}
	for _, c := range j.claims {
		if hj := s.hostJobs[c.Host]; slices.Contains(hj, i) {
			s.hostJobs[c.Host] = slices.DeleteFunc(hj, func(x int32) bool { return x == i })
		}
	}
	j.claims = claims
	for _, c := range j.claims {
		if hj := s.hostJobs[c.Host]; !slices.Contains(hj, i) {
			s.hostJobs[c.Host] = append(hj, i)
		}
	}
	old, m := j.gpuMilli, claimMilli(s.c, claims)
	s.m.usedMilli += m - old
	s.m.load.run(now, int(j.tk), old, -1)
	s.m.load.run(now, int(j.tk), m, +1)
	j.gpuMilli = m
	j.level = s.spread(claims)
	j.speed = s.jobSpeed(j) // (scaling.go)
	j.segStart, j.restart, j.segBusy = now, s.cfg.Checkpoint.ResizeCost, s.m.load.busyTime
	j.endEv = s.eng.Schedule(now+s.segmentLength(j), func(t time.Duration) { s.complete(t, i) })
	j.ckptK, j.ckptN = 0, s.checkpointsDue(j)
	if j.ckptN > 0 {
		s.nextCheckpoint(i)
	}
}
