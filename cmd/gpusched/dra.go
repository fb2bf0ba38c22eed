package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/importers/dra"
	"github.com/gpusched/gpusched/topology"
)

func newImportDRACmd() *cobra.Command {
	var out, format, name string
	var labels []string
	cmd := &cobra.Command{
		Use:   "dra FILE...",
		Short: "Import the GPUs a Kubernetes DRA driver publishes: ResourceSlices (and Nodes)",
		Long: `Read ResourceSlices (resource.k8s.io/v1) of NVIDIA's DRA driver for GPUs
(gpu.nvidia.com), and the Nodes for their labels and allocatable CPU and
memory, from YAML or JSON files, as

  kubectl get resourceslices,nodes -o yaml

writes them, and write the gpusched cluster file: a host per node, GPUs with
their UUIDs and bus IDs, NUMA nodes and PCIe roots, the NVSwitch domain of
DGX/HGX shapes, multi-node NVLink cliques (nvidia.com/gpu.clique), MIG
geometry from partitionable devices, GPUs in static MIG mode from their MIG
devices. --network-label names the node labels
that place nodes under switches, outermost first. What was approximated is
listed on standard error; tainted GPUs too. Errors name the file, line and
field.`,
		Example: `  kubectl get resourceslices,nodes -o yaml > slices.yaml
  gpusched topology import dra slices.yaml --network-label network.topology.kubernetes.io/rack --out cluster.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := topology.ParseFormat(format)
			if err != nil {
				return err
			}
			objs, err := dra.ReadFiles(args...)
			if err != nil {
				return err
			}
			res, err := dra.Build(objs, dra.Options{Name: name, NetworkLabels: labels})
			if err != nil {
				return err
			}
			if _, err := topology.Build(res.Spec); err != nil {
				return fmt.Errorf("the imported cluster does not build: %w", err)
			}
			for _, n := range res.Notes {
				fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
			}
			tainted := 0
			for _, g := range res.GPUs {
				if g.Health != topology.Healthy {
					tainted++
					fmt.Fprintf(cmd.ErrOrStderr(), "GPU %s/%d (%s): %s by its taints\n", g.Host, g.Index, g.Device, g.Health)
				}
			}
			if err := encodeTo(cmd, out, res.Spec, f); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "imported %d nodes, %d GPUs (%d tainted), %d MIG devices\n",
				len(res.Spec.Hosts), len(res.GPUs), tainted, len(res.MIG))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the cluster file here (default: standard output)")
	cmd.Flags().StringVar(&format, "format", "yaml", "cluster file format: yaml or json")
	cmd.Flags().StringVar(&name, "name", "", "the cluster's name (default: dra)")
	cmd.Flags().StringArrayVar(&labels, "network-label", nil, "a node label naming each node's switch at one network level, outermost first (repeatable)")
	return cmd
}

// encodeTo writes a cluster file to path, or to standard output when path
// is "" or "-".
func encodeTo(cmd *cobra.Command, path string, s topology.Spec, f topology.Format) error {
	if path == "" || path == "-" {
		return topology.Encode(cmd.OutOrStdout(), s, f)
	}
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := topology.Encode(fh, s, f); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
