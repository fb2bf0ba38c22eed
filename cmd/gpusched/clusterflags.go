package main

import (
	"fmt"
	"strings"

	"github.com/gpusched/gpusched/topology"
	"github.com/spf13/cobra"
)

// defaultPreset is the cluster commands use when no cluster flag is given.
const defaultPreset = "dgx-h100"

// clusterFlags selects the cluster a command works on: a preset, a cluster
// file, or a cluster generated from a machine preset. Commands that need a
// cluster call addClusterFlags in their constructor and cluster in RunE.
type clusterFlags struct {
	preset       string
	file         string
	machine      string
	hosts        int
	hostsPerToR  int
	torsPerSpine int
}

// addClusterFlags registers the cluster selection flags on cmd:
//
//	--preset NAME                  a built-in cluster (default dgx-h100)
//	--file F                       a cluster file (YAML or JSON; "-" reads stdin)
//	--machine M [--hosts N] [--hosts-per-tor K] [--tors-per-spine S]
//	                               a generated cluster of N machines
func addClusterFlags(cmd *cobra.Command) *clusterFlags {
	f := &clusterFlags{}
	fs := cmd.Flags()
	fs.StringVar(&f.preset, "preset", "", "built-in cluster (default "+defaultPreset+"); one of: "+strings.Join(topology.PresetNames(), ", "))
	fs.StringVarP(&f.file, "file", "f", "", "cluster file, YAML or JSON (\"-\" reads standard input)")
	fs.StringVar(&f.machine, "machine", "", "generate a cluster of this machine preset; one of: "+strings.Join(topology.MachineNames(), ", "))
	fs.IntVar(&f.hosts, "hosts", 0, "with --machine: number of hosts (default 1; 18 trays for gb200-nvl72)")
	fs.IntVar(&f.hostsPerToR, "hosts-per-tor", 0, "with --machine: hosts per ToR switch (0: no network levels)")
	fs.IntVar(&f.torsPerSpine, "tors-per-spine", 0, "with --machine: ToRs per spine switch (0: ToRs only)")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	return f
}

// sources returns how many of --preset, --file and --machine were given
// (commands with their own default cluster use it when none was).
func (f *clusterFlags) sources(cmd *cobra.Command) int {
	n := 0
	for _, name := range []string{"preset", "file", "machine"} {
		if cmd.Flags().Changed(name) {
			n++
		}
	}
	return n
}

// checkGenerator rejects generator flags given without --machine, so that
// commands with a default cluster of their own do not ignore them.
func (f *clusterFlags) checkGenerator(cmd *cobra.Command) error {
	if f.machine != "" {
		return nil
	}
	for _, name := range []string{"hosts", "hosts-per-tor", "tors-per-spine"} {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s needs --machine", name)
		}
	}
	return nil
}

// cluster builds the cluster the flags select. Errors in a cluster file
// come back as *topology.FileError, naming file, line, column and field.
func (f *clusterFlags) cluster(cmd *cobra.Command) (*topology.Cluster, error) {
	if f.sources(cmd) > 1 {
		return nil, fmt.Errorf("use only one of --preset, --file and --machine")
	}
	if err := f.checkGenerator(cmd); err != nil {
		return nil, err
	}
	switch {
	case f.file == "-":
		return topology.LoadReader(cmd.InOrStdin(), "<stdin>", topology.FormatAuto)
	case f.file != "":
		return topology.LoadFile(f.file)
	case f.machine != "":
		g, err := f.generator(cmd)
		if err != nil {
			return nil, err
		}
		s, err := g.Spec()
		if err != nil {
			return nil, err
		}
		return topology.Build(s)
	}
	name := f.preset
	if name == "" {
		name = defaultPreset
	}
	return topology.LoadPreset(name)
}

// generator returns the generator the --machine flags describe. The host
// count defaults (1, or one 18-tray rack for gb200-nvl72) only when --hosts
// was not given: an explicit --hosts 0 is an error, as are negative
// fan-outs, each naming its flag.
func (f *clusterFlags) generator(cmd *cobra.Command) (topology.Generator, error) {
	hosts := f.hosts
	if !cmd.Flags().Changed("hosts") {
		hosts = 1
		if f.machine == "gb200-nvl72" {
			hosts = 18
		}
	} else if hosts < 1 {
		return topology.Generator{}, fmt.Errorf("--hosts %d: want at least 1 host", hosts)
	}
	if f.hostsPerToR < 0 {
		return topology.Generator{}, fmt.Errorf("--hosts-per-tor %d: want 1 or more hosts per ToR, or 0 for no network levels", f.hostsPerToR)
	}
	if f.torsPerSpine < 0 {
		return topology.Generator{}, fmt.Errorf("--tors-per-spine %d: want 1 or more ToRs per spine, or 0 for no spines", f.torsPerSpine)
	}
	if f.torsPerSpine > 0 && f.hostsPerToR == 0 {
		return topology.Generator{}, fmt.Errorf("--tors-per-spine needs --hosts-per-tor (spines connect ToRs)")
	}
	return topology.Generator{Machine: f.machine, Hosts: hosts, HostsPerToR: f.hostsPerToR, ToRsPerSpine: f.torsPerSpine}, nil
}
