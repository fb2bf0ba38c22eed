package simcli

import (
	"fmt"
	"testing"

	"github.com/gpusched/gpusched/gang"
)

// TestSlurmPlacerTreeNodeOrder: with --slurm on a topology/tree site and
// the preset's policy, the run's placer is wrapped with
// slurm.TreeNodeOrder as the conformance harness's is; another
// --policy, or no --slurm, keeps the placer as built. The backfill
// options are the preset's too.
func TestSlurmPlacerTreeNodeOrder(t *testing.T) {
	inner, err := gang.New("topology", gang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := defaultRun()
	r.slurm = "../../importers/slurm/testdata/site"
	got, err := r.slurmPlacer(inner)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%T", got) != "*slurm.treePlacer" {
		t.Errorf("--slurm with policy topology: placer %T, want the TreeNodeOrder wrapper", got)
	}
	r.policy = "best-fit"
	if got, _ := r.slurmPlacer(inner); got != inner {
		t.Errorf("--policy best-fit: placer %T, want it unchanged", got)
	}
	r.slurm, r.policy = "", "topology"
	if got, _ := r.slurmPlacer(inner); got != inner {
		t.Errorf("no --slurm: placer %T, want it unchanged", got)
	}
	r.slurm = "../../importers/slurm/testdata/site"
	cfg, err := r.schedConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.BackfillAround || cfg.ReserveDepth != 2 || cfg.MaxReservations < 2 || !cfg.ReserveWholeHosts {
		t.Errorf("--slurm backfill options: %+v", cfg)
	}
}
