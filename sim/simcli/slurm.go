package simcli

import (
	"fmt"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/importers/slurm"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// This file wires --slurm DIR: the cluster, the queues and the ordering of
// a run come from a Slurm site's configuration through package importers/slurm
// and its Slurm-like preset.

// slurmCluster builds the site's cluster.
func (r *runConfig) slurmCluster() (*topology.Cluster, error) {
	s, err := slurm.ReadDir(r.slurm)
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
	s, err := slurm.ReadDir(r.slurm)
	if err != nil {
		return queue.Config{}, nil, nil, fmt.Errorf("--slurm %s: %w", r.slurm, err)
	}
	cfg := s.Preset().Queues
	if r.ordering != "" || r.backfill {
		slurm.SetLeafPolicy(&cfg.Root, queue.Policy{Ordering: queue.Ordering(r.ordering), Backfill: r.backfill})
	}
	leaves := slurm.Leaves(cfg)
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
// ReserveDepth, MaxReservations, ReserveWholeHosts) in
// cfg, as slurm.Preset.Config sets them.
func (r *runConfig) slurmBackfill(cfg *gpusched.Config) error {
	s, err := slurm.ReadDir(r.slurm)
	if err != nil {
		return fmt.Errorf("--slurm %s: %w", r.slurm, err)
	}
	pc, err := s.Preset().Config(s)
	if err != nil {
		return fmt.Errorf("--slurm %s: %w", r.slurm, err)
	}
	cfg.BackfillAround, cfg.ReserveDepth, cfg.MaxReservations = pc.BackfillAround, pc.ReserveDepth, pc.MaxReservations
	cfg.ReserveWholeHosts = pc.ReserveWholeHosts
	return nil
}

// slurmPlacer wraps placer as the preset does (slurm.TreeNodeOrder:
// one-node jobs placed as topology/tree does) when the site's preset asks
// for it and the run's --policy is the preset's placer; otherwise it
// returns placer unchanged.
func (r *runConfig) slurmPlacer(placer gang.Placer) (gang.Placer, error) {
	if r.slurm == "" {
		return placer, nil
	}
	s, err := slurm.ReadDir(r.slurm)
	if err != nil {
		return nil, fmt.Errorf("--slurm %s: %w", r.slurm, err)
	}
	if p := s.Preset(); p.TreeNodeOrder && r.policy == p.Placer {
		return slurm.TreeNodeOrder(placer), nil
	}
	return placer, nil
}
