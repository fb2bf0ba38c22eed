package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/topology"
)

// startModels schedules the first event of each enabled random model and
// the periodic scheduling cycle.
func (s *Simulation) startModels() {
	f := &s.cfg.Failures
	if f.GPUMTBF > 0 && s.c.NumGPUs() > 0 {
		s.poisson(s.rngFail, f.GPUMTBF, s.c.NumGPUs(), s.failGPU)
	}
	if f.HostMTBF > 0 {
		s.poisson(s.rngFail, f.HostMTBF, s.c.NumHosts(), s.failHost)
	}
	if f.ToRMTBF > 0 {
		tors := s.c.DomainsAt(topology.LevelHost + 1) // the innermost network level
		s.poisson(s.rngFail, f.ToRMTBF, len(tors), func(now time.Duration, k int) { s.failSwitch(now, tors[k]) })
	}
	for i := range s.outages {
		s.scheduleOutage(&s.outages[i], s.outages[i].o.At)
	}
	if d := s.cfg.Drain; d.MeanInterval > 0 {
		s.poisson(s.rngDrain, d.MeanInterval, 0, s.drainHost)
	}
	if p := s.cfg.ScheduleEvery; p > 0 {
		var tick func(time.Duration)
		tick = func(now time.Duration) {
			if s.done() {
				return
			}
			s.requestCycle(now)
			s.eng.Schedule(now+p, tick)
		}
		s.eng.Schedule(p, tick)
	}
}

// poisson fires fn at the times of a Poisson process whose rate is n per
// mtbf (n = 0: one per mtbf), each time with a component drawn uniformly
// from 0..n-1. The process stops once the simulation is done.
func (s *Simulation) poisson(rng *rand.Rand, mtbf time.Duration, n int, fn func(now time.Duration, k int)) {
	mean := float64(mtbf)
	if n > 0 {
		mean /= float64(n)
	}
	var ev func(time.Duration)
	ev = func(now time.Duration) {
		if s.done() {
			return
		}
		k := 0
		if n > 0 {
			k = rng.IntN(n)
		}
		fn(now, k)
		s.eng.Schedule(now+time.Duration(rng.ExpFloat64()*mean)+1, ev)
	}
	s.eng.Schedule(time.Duration(rng.ExpFloat64()*mean)+1, ev)
}

func (s *Simulation) isFailed(g topology.GPUID) bool {
	return s.gpuDown[g] > 0 || s.hostDown[s.c.GPUHost(g)] > 0
}

// failedOn counts the failed GPUs of host h.
func (s *Simulation) failedOn(h topology.HostID) int {
	first, n := s.c.HostGPUs(h)
	if s.hostDown[h] > 0 {
		return n
	}
	k := 0
	for g := first; g < first+topology.GPUID(n); g++ {
		if s.gpuDown[g] > 0 {
			k++
		}
	}
	return k
}

// crashJobsOn marks the running jobs on host h (only those using GPU g
// when g is not NoGPU) as hit by a failure at now: they make no progress
// from now on and wait, holding their resources, for the recovery the
// Scheduler decides in the cycle that follows. A job already being
// drained (the Scheduler asked for its stop and requeue) stops at once.
func (s *Simulation) crashJobsOn(now time.Duration, h topology.HostID, g topology.GPUID) {
	victims := slices.Clone(s.hostJobs[h])
	slices.Sort(victims)
	for _, i := range victims {
		j := &s.jobs[i]
		if j.state != StateRunning || j.crashed {
			continue
		}
		if g != topology.NoGPU && !usesGPU(j.claims, g) {
			continue
		}
		if j.stopEv != 0 && j.stopCause == StopDrain {
			s.stop(now, i, StopFailure, false)
			if s.err != nil {
				return
			}
			continue
		}
		for _, ev := range []*EventID{&j.endEv, &j.ckptEv} {
			if *ev != 0 {
				s.eng.Cancel(*ev)
				*ev = 0
			}
		}
		j.crashed, j.crashAt = true, now
		s.crashed = append(s.crashed, i)
	}
}

func usesGPU(claims []topology.Claim, g topology.GPUID) bool {
	for _, c := range claims {
		for _, x := range c.GPUs {
			if x.GPU == g {
				return true
			}
		}
	}
	return false
}

func (s *Simulation) failGPU(now time.Duration, k int) {
	s.failGPUFor(now, topology.GPUID(k), s.cfg.Failures.RepairTime)
}

// failGPUFor fails GPU g for d.
func (s *Simulation) failGPUFor(now time.Duration, g topology.GPUID, d time.Duration) {
	if s.isFailed(g) {
		return // already down: the failure hits nothing new
	}
	s.account(now)
	s.m.faults++
	h := s.c.GPUHost(g)
	s.crashJobsOn(now, h, g)
	s.gpuDown[g]++
	s.failedGPU++
	s.setGPUHealth(now, g, topology.Failed)
	s.repairs++
	s.eng.Schedule(now+d, func(t time.Duration) {
		s.account(t)
		s.repairs--
		s.gpuDown[g]--
		if !s.isFailed(g) {
			s.failedGPU--
			s.setGPUHealth(t, g, topology.Healthy)
		}
		s.requestCycle(t)
	})
	s.urgentCycle(now)
}

func (s *Simulation) failHost(now time.Duration, k int) {
	h := topology.HostID(k)
	if s.hostDown[h] > 0 {
		return
	}
	s.m.faults++
	s.downHosts(now, []topology.HostID{h}, s.cfg.Failures.RepairTime)
}

func (s *Simulation) failSwitch(now time.Duration, d topology.DomainID) {
	s.failDomainFor(now, d, s.cfg.Failures.RepairTime)
}

// failDomainFor fails every host of a network domain for dur.
func (s *Simulation) failDomainFor(now time.Duration, d topology.DomainID, dur time.Duration) {
	hosts := slices.Clone(s.c.DomainHostList(d))
	s.m.faults++
	s.downHosts(now, hosts, dur)
}

// downHosts fails hosts together for dur and schedules their common
// repair.
func (s *Simulation) downHosts(now time.Duration, hosts []topology.HostID, dur time.Duration) {
	s.account(now)
	for _, h := range hosts {
		s.crashJobsOn(now, h, topology.NoGPU)
		before := s.failedOn(h)
		s.hostDown[h]++
		s.failedGPU += s.failedOn(h) - before
		s.applyHostHealth(now, h)
	}
	s.repairs++
	s.eng.Schedule(now+dur, func(t time.Duration) {
		s.account(t)
		s.repairs--
		for _, h := range hosts {
			before := s.failedOn(h)
			s.hostDown[h]--
			s.failedGPU += s.failedOn(h) - before
			s.applyHostHealth(t, h)
		}
		s.requestCycle(t)
	})
	s.urgentCycle(now)
}

func (s *Simulation) drainHost(now time.Duration, _ int) {
	// Draw among hosts that are healthy and not draining, by rejection
	// sampling with a bounded number of tries.
	n := s.c.NumHosts()
	h := topology.NoHost
	for range 64 {
		c := topology.HostID(s.rngDrain.IntN(n))
		if s.hostDown[c] == 0 && s.hostDrain[c] == 0 {
			h = c
			break
		}
	}
	if h == topology.NoHost {
		return
	}
	s.account(now)
	s.m.drains++
	s.hostDrain[h]++
	s.applyHostHealth(now, h)
	s.requestCycle(now)
	s.repairs++
	s.eng.Schedule(now+s.cfg.Drain.Duration, func(t time.Duration) {
		s.account(t)
		s.repairs--
		s.hostDrain[h]--
		s.applyHostHealth(t, h)
		s.requestCycle(t)
	})
}

func (s *Simulation) hostHealth(h topology.HostID) topology.Health {
	switch {
	case s.hostDown[h] > 0:
		return topology.Failed
	case s.hostDrain[h] > 0:
		return topology.Draining
	}
	return topology.Healthy
}

func (s *Simulation) applyHostHealth(now time.Duration, h topology.HostID) {
	hh := s.hostHealth(h)
	if s.led.HostHealth(h) == hh {
		return
	}
	if err := s.led.SetHostHealth(h, hh); err != nil {
		s.fail(fmt.Errorf("%w: host %s health: %v", ErrInvariant, s.c.HostName(h), err))
		return
	}
	if err := s.cfg.Scheduler.SetHostHealth(now, h, hh); err != nil {
		s.fail(fmt.Errorf("sim: SetHostHealth(%s, %s): %w", s.c.HostName(h), hh, err))
	}
}

func (s *Simulation) setGPUHealth(now time.Duration, g topology.GPUID, hh topology.Health) {
	if err := s.led.SetGPUHealth(g, hh); err != nil {
		s.fail(fmt.Errorf("%w: GPU %s health: %v", ErrInvariant, s.c.GPUName(g), err))
		return
	}
	if err := s.cfg.Scheduler.SetGPUHealth(now, g, hh); err != nil {
		s.fail(fmt.Errorf("sim: SetGPUHealth(%s, %s): %w", s.c.GPUName(g), hh, err))
	}
}

func (s *Simulation) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// outage is a resolved Outage: its level and fixed target, if named.
type outage struct {
	o      Outage
	kind   int // 0 GPU, 1 host, 2 network domain
	target int // GPU, host or domain; -1: drawn each time
	pool   []topology.DomainID
}

// resolveOutages checks the outages against the cluster.
func resolveOutages(c *topology.Cluster, os []Outage) ([]outage, error) {
	out := make([]outage, len(os))
	for i, o := range os {
		field := fmt.Sprintf("Outages[%d]", i)
		r := outage{o: o, target: -1}
		if o.At < 0 || o.Every < 0 || o.For <= 0 {
			return nil, cfgErr(field, "at %v, every %v, for %v: times must not be negative and For must be positive", o.At, o.Every, o.For)
		}
		switch o.Level {
		case "gpu":
			if o.Name != "" {
				h, idx, ok := strings.Cut(o.Name, "/gpu")
				hid, hok := c.HostByName(h)
				n, err := strconv.Atoi(idx)
				first, cnt := topology.GPUID(0), 0
				if hok {
					first, cnt = c.HostGPUs(hid)
				}
				if !ok || !hok || err != nil || n < 0 || n >= cnt {
					return nil, cfgErr(field+".Name", "no GPU %q (want HOST/gpuN)", o.Name)
				}
				r.target = int(first) + n
			}
		case "host", "node":
			r.kind = 1
			if o.Name != "" {
				h, ok := c.HostByName(o.Name)
				if !ok {
					return nil, cfgErr(field+".Name", "no host %q", o.Name)
				}
				r.target = int(h)
			}
		default:
			l, ok := c.LevelByName(o.Level)
			if !ok || l <= topology.LevelHost || l >= c.LevelCluster() {
				return nil, cfgErr(field+".Level", "%q is not gpu, host or a network level of cluster %s", o.Level, c.Name())
			}
			r.kind = 2
			r.pool = c.DomainsAt(l)
			if o.Name != "" {
				d, ok := c.DomainByName(o.Name)
				if !ok || !slices.Contains(r.pool, d) {
					return nil, cfgErr(field+".Name", "no %s switch %q", o.Level, o.Name)
				}
				r.target = int(d)
			}
		}
		out[i] = r
	}
	return out, nil
}

func (s *Simulation) scheduleOutage(o *outage, at time.Duration) {
	s.eng.Schedule(at, func(now time.Duration) {
		if s.done() {
			return
		}
		t := o.target
		switch o.kind {
		case 0:
			if t < 0 {
				t = s.rngFail.IntN(s.c.NumGPUs())
			}
			s.m.faults++
			s.failGPUFor(now, topology.GPUID(t), o.o.For)
		case 1:
			if t < 0 {
				t = s.rngFail.IntN(s.c.NumHosts())
			}
			s.m.faults++
			s.downHosts(now, []topology.HostID{topology.HostID(t)}, o.o.For)
		case 2:
			d := topology.DomainID(t)
			if t < 0 {
				d = o.pool[s.rngFail.IntN(len(o.pool))]
			}
			s.failDomainFor(now, d, o.o.For)
		}
		if o.o.Every > 0 {
			s.scheduleOutage(o, now+o.o.Every)
		}
	})
}
