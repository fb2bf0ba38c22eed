package simcli

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/report"
	"github.com/gpusched/gpusched/topology"
)

// seedRun is one policy's summary at one seed, as compare-seeds.json
// lists them.
type seedRun struct {
	Label   string      `json:"label"`
	Policy  string      `json:"policy"`
	Order   string      `json:"ordering,omitempty"`
	Seed    uint64      `json:"seed"`
	Summary sim.Summary `json:"summary"`
}

// compareSeeds runs every policy at every seed of --seeds and prints, per
// policy, the median of each key metric over the seeds with its 95%
// interval (report.MedianCI). The policies of one seed see the same trace
// (a synthetic one is generated from the seed) and the same random
// failure and drain draws: common random numbers, so differences between
// policies at a seed are the policies'. It writes compare-seeds.json with
// every run's summary, each run's summary.json and CSVs in
// OUT/seed-S/LABEL, and report.html with the medians and intervals.
func compareSeeds(cmd *cobra.Command, rc runConfig, out outFlags, policies []variant, seedList string, cluster func(runConfig) (*topology.Cluster, error)) error {
	if len(policies) == 0 {
		return errors.New("--policies: none given")
	}
	seeds, err := parseSeeds(seedList)
	if err != nil {
		return fmt.Errorf("--seeds: %w", err)
	}
	for _, v := range policies {
		r := rc
		r.policy, r.ordering = v.policy, v.ordering
		if err := r.check(nil); err != nil {
			return fmt.Errorf("%s: %w", v.label, err)
		}
	}
	start := time.Now()
	type cell struct{ seed, pol int }
	cells := make([]cell, 0, len(seeds)*len(policies))
	for si := range seeds {
		for pi := range policies {
			cells = append(cells, cell{si, pi})
		}
	}
	prov, err := newProvenance(cmd, seeds, rc.reg)
	if err != nil {
		return err
	}
	preps := make([]*prepared, len(seeds))
	for si, s := range seeds {
		r := rc
		r.seed = s
		if preps[si], err = prepare(r, cluster); err != nil {
			return fmt.Errorf("seed %d: %w", s, err)
		}
		preps[si].prov = prov
	}
	reportInput(cmd.OutOrStdout(), preps[0].lt)
	sums := make([]sim.Summary, len(cells))
	b := bar(cmd, len(cells), "runs", out.quiet)
	err = parallel(len(cells), workers(out.par), b, func(i int) error {
		c := cells[i]
		r := rc
		r.seed, r.policy, r.ordering = seeds[c.seed], policies[c.pol].policy, policies[c.pol].ordering
		res, err := execute(r, preps[c.seed], nil, nil)
		if err != nil {
			return fmt.Errorf("%s, seed %d: %w", policies[c.pol].label, seeds[c.seed], err)
		}
		sums[i] = res.Summary
		return writeRun(out, filepath.Join(out.dir, seedDir(seeds[c.seed]), policies[c.pol].dir()), res)
	})
	if err != nil {
		return err
	}
	labels := make([]report.SeedRuns, len(policies))
	runs := make([]seedRun, len(cells))
	for i, c := range cells {
		v := policies[c.pol]
		labels[c.pol].Label = v.label
		labels[c.pol].Runs = append(labels[c.pol].Runs, sums[i])
		runs[i] = seedRun{Label: v.label, Policy: v.policy, Order: v.ordering, Seed: seeds[c.seed], Summary: sums[i]}
	}
	if err := writeJSONFile(filepath.Join(out.dir, "compare-seeds.json"), runs); err != nil {
		return err
	}
	title := fmt.Sprintf("gpusched sim compare --seeds: cluster %s, trace %s, %d seeds from %d, config %s", preps[0].c.Name(), preps[0].lt.name, len(seeds), seeds[0], prov.Config)
	if err := report.WriteHTMLPage(out.dir, report.Page{Title: title, Seeds: labels, Provenance: prov}); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "cluster %s (%d GPUs), trace %s, %d seeds from %d\n\n", preps[0].c.Name(), preps[0].c.NumGPUs(), preps[0].lt.name, len(seeds), seeds[0])
	if err := report.WriteSeedTable(cmd.OutOrStdout(), labels); err != nil {
		return err
	}
	if len(labels) > 1 {
		fmt.Fprintln(cmd.OutOrStdout())
		if err := report.WritePairedTable(cmd.OutOrStdout(), labels); err != nil {
			return err
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nwrote %s (%.1fs)\n", out.dir, time.Since(start).Seconds())
	return nil
}

// seedDir is the directory of one seed's runs under compare --seeds.
func seedDir(seed uint64) string { return fmt.Sprintf("seed-%d", seed) }
