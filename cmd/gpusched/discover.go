package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/topology/nvml"
)

// newDiscoverCmd builds "gpusched topology discover": this host, as NVML
// sees it, written as a one-host cluster file.
func newDiscoverCmd() *cobra.Command {
	var (
		out, format, hostname, template, sysRoot string
		cpuMilli, memMiB                         int64
		models                                   []string
		noPresetMIG                              bool
	)
	cmd := &cobra.Command{
		Use:   "discover",
		Short: "Describe this host through the NVIDIA driver (NVML) as a one-host cluster file",
		Long: `Read this host's GPUs through the NVIDIA driver's NVML library and write the
host as a one-host cluster file: its accelerator model (memory, compute
capability, MIG profiles and their legal placements), its NUMA nodes with
their CPUs, the PCIe tree (inferred from NVML's PIX/PXB/PHB/NODE/SYS levels
and sysfs), its NVLink domains (NVSwitch, bridges, meshes), the identity of
each GPU (index, UUID, PCI bus ID) and, on multi-node NVLink systems such as
GB200 NVL72, the fabric clique it belongs to.

Host CPU and memory come from /proc and /sys (NVML does not report them);
--cpu-milli and --memory-mib override them, e.g. to keep some for the system.

Anything the driver cannot tell (an old driver, NOT_SUPPORTED, a GPU with its
NVLinks down) is left out and reported as a warning on standard error. The
summary line says which machine preset the host matches, if any.

Collect the files of many hosts and join them with "gpusched topology
assemble". A build without cgo, or a host without the NVIDIA driver, cannot
discover; use a cluster file or a preset there.`,
		Example: `  gpusched topology discover > $(hostname).yaml
  gpusched topology discover --out node.json
  gpusched topology discover --memory-mib 1900000 --model "NVIDIA H100 80GB HBM3=H100"`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&out, "out", "", "write the cluster file here (default: standard output)")
	fs.StringVarP(&format, "format", "o", "", "yaml or json (default: from --out's extension, else yaml)")
	fs.StringVar(&hostname, "hostname", "", "name the host (default: the system's host name)")
	fs.StringVar(&template, "template", "", "name the host template (default: the matching machine preset, else MODELxN)")
	fs.Int64Var(&cpuMilli, "cpu-milli", 0, "allocatable CPU in milli-cores (default: online CPUs × 1000)")
	fs.Int64Var(&memMiB, "memory-mib", 0, "allocatable memory in MiB (default: MemTotal)")
	fs.StringArrayVar(&models, "model", nil, `map an NVML GPU name to a model name, "NVML NAME=MODEL" (repeatable)`)
	fs.BoolVar(&noPresetMIG, "no-preset-mig", false, "do not take MIG geometry from the presets when NVML lists no profiles")
	fs.StringVar(&sysRoot, "sysfs-root", "/", "read /proc and /sys under this directory (for captured trees)")
	_ = cmd.MarkFlagFilename("out", "yaml", "yml", "json")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		f, err := outputFormat(format, out)
		if err != nil {
			return err
		}
		opts := nvml.Options{Host: nvml.SysHost{Root: sysRoot}, Hostname: hostname, CPUMilli: cpuMilli, MemoryMiB: memMiB,
			TemplateName: template, NoPresetMIG: noPresetMIG}
		if len(models) > 0 {
			opts.Models = map[string]string{}
			for _, m := range models {
				name, model, ok := strings.Cut(m, "=")
				if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(model) == "" {
					return fmt.Errorf(`--model %q: want "NVML NAME=MODEL"`, m)
				}
				opts.Models[strings.TrimSpace(name)] = strings.TrimSpace(model)
			}
		}
		res, err := nvml.DiscoverHost(opts)
		if err != nil {
			return err
		}
		stderr := cmd.ErrOrStderr()
		for _, w := range res.Warnings {
			fmt.Fprintln(stderr, "warning:", w)
		}
		fmt.Fprintln(stderr, discoverSummary(res))
		return writeSpec(cmd.OutOrStdout(), out, res.Spec(), f)
	}
	return cmd
}

// discoverSummary is one line on what was found.
func discoverSummary(r *nvml.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", r.Hostname)
	if r.Template.GPUs == 0 {
		b.WriteString("no GPUs")
	} else {
		fmt.Fprintf(&b, "%d × %s", r.Template.GPUs, r.Template.Accelerator)
	}
	if r.DriverVersion != "" {
		fmt.Fprintf(&b, ", driver %s", r.DriverVersion)
	}
	if r.Preset != "" {
		fmt.Fprintf(&b, "; matches preset %s", r.Preset)
	} else {
		fmt.Fprintf(&b, "; template %s (no preset matches)", r.Template.Name)
	}
	if r.Fabric != nil {
		fmt.Fprintf(&b, "; multi-node NVLink clique %d of cluster %s", r.Fabric.CliqueID, r.Fabric.ClusterUUID)
	}
	if n := len(r.Warnings); n > 0 {
		fmt.Fprintf(&b, "; %d warning(s)", n)
	}
	return b.String()
}

// newAssembleCmd builds "gpusched topology assemble": many host files into
// one cluster file.
func newAssembleCmd() *cobra.Command {
	var (
		out, format, name, network, torPattern, torName string
		memQuantum                                      int64
	)
	cmd := &cobra.Command{
		Use:   "assemble HOSTFILE...",
		Short: "Merge discovered host files into one cluster file",
		Long: `Merge cluster files, usually the one-host files "gpusched topology discover"
writes on each machine, into one cluster file.

Identical host templates and accelerators are written once. Hosts that report
the same multi-node NVLink clique (cluster UUID and clique ID, as on GB200
NVL72 racks) join one NVLink domain. Network structure comes from either

  --network FILE      a YAML file naming levels, switches and the hosts under
                      each innermost switch:

                        version: 1
                        levels: [spine, tor]
                        switches:
                          - {name: spine1, level: spine}
                          - {name: tor01, level: tor, parent: spine1, hosts: ["dgx[001-032]"]}

  --tor-pattern RE    a regular expression on host names whose first group
                      (or --tor-name, e.g. "tor-$1") names each host's ToR

or neither, for a flat cluster. Hosts whose kernels reserve slightly different
memory share a template with --memory-quantum-mib 1024. It is an error for a host to be under no switch
or two, for the network to name a host no file describes, or for two files to
describe one host or one clique differently.`,
		Example: `  gpusched topology assemble hosts/*.yaml --network network.yaml --out cluster.yaml
  gpusched topology assemble hosts/*.yaml --tor-pattern '^(rack[0-9]+)-' --out cluster.yaml`,
		Args: cobra.MinimumNArgs(1),
	}
	fs := cmd.Flags()
	fs.StringVar(&out, "out", "", "write the cluster file here (default: standard output)")
	fs.StringVarP(&format, "format", "o", "", "yaml or json (default: from --out's extension, else yaml)")
	fs.StringVar(&name, "name", "cluster", "the cluster's name")
	fs.StringVar(&network, "network", "", "network file naming ToR/spine switches and their hosts")
	fs.StringVar(&torPattern, "tor-pattern", "", "regular expression on host names; its first group names the host's ToR")
	fs.StringVar(&torName, "tor-name", "", `with --tor-pattern: ToR name template, e.g. "tor-$1" (default "$1")`)
	fs.Int64Var(&memQuantum, "memory-quantum-mib", 0, "round host memory down to a multiple of this before comparing templates (e.g. 1024)")
	_ = cmd.MarkFlagFilename("out", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("network", "yaml", "yml", "json")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		f, err := outputFormat(format, out)
		if err != nil {
			return err
		}
		opts := nvml.AssembleOptions{Name: name, MemoryQuantumMiB: memQuantum}
		switch {
		case network != "" && torPattern != "":
			return fmt.Errorf("use --network or --tor-pattern, not both")
		case torName != "" && torPattern == "":
			return fmt.Errorf("--tor-name needs --tor-pattern")
		case network != "":
			data, err := os.ReadFile(network)
			if err != nil {
				return err
			}
			if opts.Network, err = nvml.ParseNetwork(data, network); err != nil {
				return err
			}
		case torPattern != "":
			rule, err := nvml.ParseHostRule(torPattern, torName)
			if err != nil {
				return err
			}
			opts.Rule = &rule
		}
		inputs := make([]nvml.Input, 0, len(args))
		for _, path := range args {
			c, err := topology.LoadFile(path)
			if err != nil {
				return err
			}
			inputs = append(inputs, nvml.Input{Name: path, Spec: c.Spec()})
		}
		spec, err := nvml.Assemble(inputs, opts)
		if err != nil {
			return err
		}
		if err := writeSpec(cmd.OutOrStdout(), out, spec, f); err != nil {
			return err
		}
		hosts := len(spec.Hosts)
		fmt.Fprintf(cmd.ErrOrStderr(), "assembled %d hosts from %d files: %d templates, %d switches, %d multi-host NVLink domains\n",
			hosts, len(args), len(spec.Templates), len(spec.Switches), len(spec.Fabrics))
		return nil
	}
	return cmd
}

// outputFormat settles the cluster-file format from --format and --out.
func outputFormat(format, out string) (topology.Format, error) {
	if format == "" {
		if f := topology.FormatOf(out); f != topology.FormatAuto {
			return f, nil
		}
		return topology.FormatYAML, nil
	}
	f, err := topology.ParseFormat(format)
	if err != nil || f == topology.FormatAuto {
		return 0, fmt.Errorf("unknown --format %q (want yaml or json)", format)
	}
	return f, nil
}

// writeSpec writes s to the file out, or to w when out is empty.
func writeSpec(w io.Writer, out string, s topology.Spec, f topology.Format) error {
	data, err := topology.Marshal(s, f)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = w.Write(data)
		return err
	}
	return os.WriteFile(out, data, 0o644)
}
