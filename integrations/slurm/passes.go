package slurmharness

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// Scenario (d) compared decision by decision: at each of Slurm's backfill
// passes, gpusched gets the cluster as Slurm had it (the jobs running
// then on the nodes Slurm gave them, each with its time limit from its
// logged start, and the jobs waiting), and one cycle says which waiting
// jobs it starts. Slurm's answer is the jobs it started from the pass's
// beginning to the next pass's (one its main scheduler started there,
// after a job end the pass had not seen, is not counted against
// gpusched). Unlike the replay of the whole trace,
// where one start in a different place changes every later decision,
// each pass starts from Slurm's own state, so a difference is a
// difference of the backfill rules, not of an earlier split.

// PassAgreement sums that comparison over the passes of one run, each
// job counted once, at the first pass where one of the two started it.
type PassAgreement struct {
	// Passes is how many passes had waiting jobs and were compared.
	Passes int
	// Both is how many jobs Slurm and gpusched started in the same pass,
	// SameNode how many of them on the same node.
	Both, SameNode int
	// SlurmOnly is how many jobs Slurm's backfill started in a pass where
	// gpusched kept them waiting from the same state (gpusched would
	// start them later); GpuschedOnly how many jobs gpusched started in a
	// pass that Slurm did not start before its next pass (earlier than
	// Slurm).
	SlurmOnly, GpuschedOnly int
	// Differ lists each job counted in SlurmOnly or GpuschedOnly, in pass
	// order, with the pass's time after t0.
	Differ []string
}

// Disagree is SlurmOnly + GpuschedOnly.
func (a PassAgreement) Disagree() int { return a.SlurmOnly + a.GpuschedOnly }

// ComparePasses runs the comparison for the jobs of one run of scenario
// (d) (ids: each job's Slurm job ID; t0: the wall-clock time the jobs'
// Arrive counts from) against Slurm's log bl (ParseBackfillLog, with its
// pass beginnings). A job running at a pass must appear in bl's starts.
func (m *Model) ComparePasses(jobs []JobSpec, ids map[string]int, bl *BfLog, t0 time.Time) (PassAgreement, error) {
	var out PassAgreement
	start := map[int]BfStart{}
	for _, s := range bl.Starts {
		start[s.JobID] = s
	}
	decided := map[string]bool{} // counted at an earlier pass
	order := slices.Clone(jobs)
	slices.SortStableFunc(order, func(a, b JobSpec) int { return int(a.Arrive - b.Arrive) })
	for i, p := range bl.Passes {
		next := p.Add(time.Hour)
		if i+1 < len(bl.Passes) {
			next = bl.Passes[i+1]
		}
		s, c, err := m.scheduler()
		if err != nil {
			return out, err
		}
		used := map[topology.HostID]int{}
		var waiting []string
		for _, j := range order {
			arr := t0.Add(j.Arrive)
			if arr.After(p) {
				break
			}
			id := ids[j.Name]
			if e, ok := bl.Ends[id]; ok && !e.After(p) {
				continue
			}
			st, ok := start[id]
			if !ok || !st.Logged.Before(p) {
				waiting = append(waiting, j.Name)
				if err := s.Submit(Job(j), arr); err != nil {
					return out, fmt.Errorf("pass at %v: %s: %w", p.Sub(t0), j.Name, err)
				}
				continue
			}
			// Running: on Slurm's node, its estimated end counted from
			// the second it started in, as Slurm counts it.
			h, ok := c.HostByName(st.Nodes[0])
			if !ok {
				return out, fmt.Errorf("pass at %v: %s: unknown node %s", p.Sub(t0), j.Name, st.Nodes[0])
			}
			first, _ := c.HostGPUs(h)
			cl := topology.Claim{Host: h, CPUMilli: int64(j.CPUs) * 1000, MemoryMiB: j.MemMiB}
			for k := range j.GPUs {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(used[h]+k)})
			}
			used[h] += j.GPUs
			started := st.Logged.Truncate(time.Second)
			if started.Before(arr) {
				started = arr
			}
			if err := s.Restore(Job(j), [][]topology.Claim{{cl}}, queue.Running, arr, started); err != nil {
				return out, fmt.Errorf("pass at %v: %s: %w", p.Sub(t0), j.Name, err)
			}
		}
		if len(waiting) == 0 {
			continue
		}
		out.Passes++
		d := s.Schedule(p)
		g := map[string]string{}
		for _, b := range d.Bindings {
			g[b.Job] = placementOf(c, b).Nodes[0]
		}
		for _, name := range waiting {
			if decided[name] {
				continue
			}
			st, ok := start[ids[name]]
			slurm := ok && !st.Logged.Before(p) && st.Logged.Before(next)
			node, gs := g[name]
			decided[name] = slurm || gs
			switch {
			case slurm && gs:
				out.Both++
				if node == st.Nodes[0] {
					out.SameNode++
				}
			case slurm && st.Backfill:
				out.SlurmOnly++
				out.Differ = append(out.Differ, fmt.Sprintf("%s s: %s started by Slurm on %s, waiting in gpusched", secs(p.Sub(t0)), name, st.Nodes[0]))
			case gs:
				out.GpuschedOnly++
				later := "not started by Slurm"
				if ok {
					later = "started by Slurm at " + secs(st.Logged.Sub(t0)) + " s"
				}
				out.Differ = append(out.Differ, fmt.Sprintf("%s s: %s started by gpusched on %s, waiting in Slurm (%s)", secs(p.Sub(t0)), name, node, later))
			}
		}
	}
	return out, nil
}
