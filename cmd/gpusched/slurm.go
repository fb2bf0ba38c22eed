package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/gpusched/gpusched/importers/slurm"
	"github.com/gpusched/gpusched/topology"
)

// newTopologyImportCmd builds "topology import": cluster files from other
// schedulers' configuration (slurm) and from Kubernetes DRA ResourceSlices.
func newTopologyImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Import a cluster from another scheduler's configuration",
	}
	cmd.AddCommand(newImportSlurmCmd(), newImportDRACmd())
	return cmd
}

func newImportSlurmCmd() *cobra.Command {
	var out, queues, format string
	cmd := &cobra.Command{
		Use:   "slurm DIR",
		Short: "Import a Slurm site: slurm.conf, topology.conf/yaml, gres.conf, assoc.txt",
		Long: `Read a Slurm site's configuration from DIR and write the gpusched cluster file:
slurm.conf (nodes, partitions, scheduler and priority settings; required),
topology.yaml or topology.conf (tree or block), gres.conf (GPU types, indices,
Cores → NUMA nodes, Links → NVLink domains) and assoc.txt, the output of

  sacctmgr show assoc -P format=Cluster,Account,User,Partition,ParentName,Share,GrpTRES

which --queues writes as a queue tree with Fair Tree. Every setting the
importer does not model is listed on standard error with its file and line;
errors name the file, line and setting. "gpusched sim run --slurm DIR" runs a
trace on the site directly.`,
		Example: `  gpusched topology import slurm /etc/slurm --out cluster.yaml --queues queues.yaml
  gpusched topology show --file cluster.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := topology.ParseFormat(format)
			if err != nil {
				return err
			}
			s, err := slurm.ReadDir(args[0])
			if err != nil {
				return err
			}
			sp, err := s.Spec()
			if err != nil {
				return err
			}
			if _, err := topology.Build(sp); err != nil {
				return fmt.Errorf("the imported cluster does not build: %w", err)
			}
			p := s.Preset()
			for _, w := range s.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			if err := encodeTo(cmd, out, sp, f); err != nil {
				return err
			}
			if queues != "" {
				if s.Assoc == nil {
					return fmt.Errorf("--queues: %s has no assoc.txt (sacctmgr show assoc -P output)", args[0])
				}
				b, err := yaml.Marshal(p.Queues)
				if err != nil {
					return err
				}
				if err := os.WriteFile(queues, b, 0o644); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "imported %d nodes, %d warnings; preset: placer %s, backfill window %v, interval %v\n",
				len(s.Conf.Nodes), len(s.Warnings), p.Placer, p.BfWindow, p.SchedInterval)
			fmt.Fprintln(cmd.ErrOrStderr(), "backfill:", backfillSummary(s, p))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the cluster file here (default: standard output)")
	cmd.Flags().StringVar(&queues, "queues", "", "also write the associations as a queue tree (YAML, for sim run --queues config:PATH)")
	cmd.Flags().StringVar(&format, "format", "yaml", "cluster file format: yaml or json")
	return cmd
}

// backfillSummary says which backfill options the preset imported from
// the site (slurm.Preset, as Preset.Config sets them).
func backfillSummary(s *slurm.Site, p slurm.Preset) string {
	sp := s.Conf.Scheduler()
	if p.ReserveDepth == 0 {
		return fmt.Sprintf("off (SchedulerType=%s)", s.Conf.SchedulerType)
	}
	return fmt.Sprintf("on (SchedulerType=%s, bf_interval=%v, bf_window=%v, bf_max_job_test=%d, bf_continue=%v): "+
		"reservations for the first %d blocked jobs of a queue (ReserveDepth), placed around reservations (BackfillAround), "+
		"reserved hosts held whole (ReserveWholeHosts=%v), topology/tree node order %v",
		s.Conf.SchedulerType, sp.BfInterval, sp.BfWindow, sp.BfMaxJobTest, sp.BfContinue, p.ReserveDepth, p.ReserveWholeHosts, p.TreeNodeOrder)
}
