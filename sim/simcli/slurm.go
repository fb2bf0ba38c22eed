package simcli

import (
	"fmt"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/slurmconf"
	"github.com/gpusched/gpusched/topology"
)

// This file wires --slurm DIR: the cluster, the queues and the ordering of
// a run come from a Slurm site's configuration through package slurmconf
// and its Slurm-like preset.

// slurmCluster builds the site's cluster.
func (r *runConfig) slurmCluster() (*topology.Cluster, error) {
	s, err := slurmconf.ReadDir(r.slurm)
	if err != nil {
		return nil, fmt.Errorf("--slurm %s: %w", r.slurm, err)
	}
	return s.Cluster()
}

// slurmQueues is the preset's queue tree: the site's associations with Fair
// Tree (trace tenants named like a leaf, "account:user", go to it; the rest
// to --default-queue or the first leaf), or one leaf "default". Every leaf
// orders and backfills as the preset says unless --ordering or --backfill
// was given.
func (r *runConfig) slurmQueues(jobs []trace.Job) (queue.Config, []sim.Tenant, map[string]string, error) {
	s, err := slurmconf.ReadDir(r.slurm)
	if err != nil {
		return queue.Config{}, nil, nil, fmt.Errorf("--slurm %s: %w", r.slurm, err)
	}
	cfg := s.Preset().Queues
	if r.ordering != "" || r.backfill {
		slurmconf.SetLeafPolicy(&cfg.Root, queue.Policy{Ordering: queue.Ordering(r.ordering), Backfill: r.backfill})
	}
	leaves := slurmconf.Leaves(cfg)
	def := leaves[0]
	if r.defaultQueue != "" {
		if !slices.Contains(leaves, r.defaultQueue) {
			return queue.Config{}, nil, nil, fmt.Errorf("--default-queue %q is not a leaf of the site's associations (%v)", r.defaultQueue, leaves)
		}
		def = r.defaultQueue
	}
	qm := map[string]string{"": def}
	for _, t := range rootsched.Tenants(jobs) {
		if !slices.Contains(leaves, t) {
			qm[t] = def
		}
	}
	return cfg, nil, qm, nil
}

// slurmBackfill sets the preset's backfill options (Config.BackfillAround,
// Config.ReserveDepth) in cfg.
func (r *runConfig) slurmBackfill(cfg *gpusched.Config) error {
	s, err := slurmconf.ReadDir(r.slurm)
	if err != nil {
		return fmt.Errorf("--slurm %s: %w", r.slurm, err)
	}
	p := s.Preset()
	cfg.BackfillAround, cfg.ReserveDepth = true, p.ReserveDepth
	return nil
}
