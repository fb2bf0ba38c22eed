package simcli

import (
	"path/filepath"
	"strings"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// hardVCPrefix selects hard virtual clusters: --queues vc-hard:PATH.
const hardVCPrefix = "vc-hard:"

// readVCs reads the VC file of --queues vc:PATH or vc-hard:PATH.
func (r *runConfig) readVCs(path string) ([]trace.VC, error) {
	f, err := openInput("--queues", path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return trace.ReadVCs(f, r.gpusPerNode, trace.Options{File: filepath.Base(path)})
}

// partition cuts c into the hard VCs of --queues vc-hard:PATH (nil
// otherwise): each VC's nodes, in the file's order, become its own.
func (r *runConfig) partition(c *topology.Cluster) (*topology.Cluster, *sim.Partition, error) {
	path, ok := strings.CutPrefix(r.queues, hardVCPrefix)
	if !ok {
		return c, nil, nil
	}
	vcs, err := r.readVCs(path)
	if err != nil {
		return nil, nil, err
	}
	p, err := sim.HardPartition(c.Spec(), vcs)
	if err != nil {
		return nil, nil, err
	}
	pc, err := topology.Build(p.Spec)
	if err != nil {
		return nil, nil, err
	}
	return pc, p, nil
}

// hardVCQueues is the queue setup of hard VCs: one leaf per VC and per
// tenant of no VC, no quotas (the partition is the cluster's: each VC's
// jobs are confined to its hosts, Partition.Restrict), entitlements the
// VCs' GPUs. It restricts jobs in place (their groups are copied).
func (r *runConfig) hardVCQueues(p *sim.Partition, jobs []trace.Job) (queue.Config, []sim.Tenant, map[string]string, error) {
	vcs, err := r.readVCs(strings.TrimPrefix(r.queues, hardVCPrefix))
	if err != nil {
		return queue.Config{}, nil, nil, err
	}
	names := make([]string, 0, len(vcs))
	for _, v := range vcs {
		names = append(names, v.Name)
	}
	for _, t := range rootsched.Tenants(jobs) {
		if _, ok := p.Models[t]; !ok {
			names = append(names, t)
		}
	}
	for i := range jobs {
		p.Restrict(&jobs[i].Spec, jobs[i].Spec.Queue)
	}
	pol := queue.Policy{Ordering: queue.Ordering(r.ordering), Backfill: r.backfill}
	return rootsched.FlatQueues(names, pol), rootsched.VCTenants(vcs), map[string]string{"": "default"}, nil
}
