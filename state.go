package gpusched

import (
	"cmp"
	"slices"
)

// Config returns the configuration the Scheduler runs with: the one New
// was given, with New's defaults filled (MaxGrace, MaxReservations,
// Placer), the queue tree as last reconfigured (Reconfigure) and the
// cluster as last changed (AddHosts, RemoveHosts, SetHostGPUs). It is
// the caller's: Queues, Defrag and Elastic are deep copies; Cluster,
// Placer and Preemptor are the Scheduler's own (not copied). This is
// what a restart must run with, and what snapshot.Capture saves.
func (s *Scheduler) Config() Config {
	cfg := s.cfg
	cfg.Queues = cfg.Queues.Clone()
	if d := cfg.Defrag; d != nil {
		dc := *d
		if k := d.Consolidate; k != nil {
			kc := *k
			kc.Levels = slices.Clone(k.Levels)
			dc.Consolidate = &kc
		}
		cfg.Defrag = &dc
	}
	if e := cfg.Elastic; e != nil {
		ec := *e
		cfg.Elastic = &ec
	}
	return cfg
}

// Submissions returns the IDs of the live jobs in the order they were
// submitted to the Scheduler (Submit, Restore, RestoreJob): the order it
// breaks ties between jobs submitted at the same time with. O(jobs log
// jobs).
func (s *Scheduler) Submissions() []string {
	js := make([]*job, 0, len(s.jobs.byID))
	for _, j := range s.jobs.byID {
		js = append(js, j)
	}
	slices.SortFunc(js, func(a, b *job) int { return cmp.Compare(a.entry.Seq, b.entry.Seq) })
	ids := make([]string, len(js))
	for i, j := range js {
		ids[i] = j.spec.ID
	}
	return ids
}
