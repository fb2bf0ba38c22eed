package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gpusched/gpusched/topology"
	"github.com/spf13/cobra"
)

// newTopologyCmd builds "gpusched topology": show, matrix and presets.
func newTopologyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Inspect cluster topologies: presets, cluster files, generated clusters",
		Long: `Inspect a cluster: what hosts, GPUs and switches it has, how they are grouped
into placement levels (NVLink domain, host, ToR, spine, …), and how the GPUs
of one host are connected.

A cluster comes from a preset (--preset), a cluster file in YAML or JSON
(--file), or is generated from a machine preset (--machine with --hosts,
--hosts-per-tor, --tors-per-spine).`,
	}
	cmd.AddCommand(newTopologyShowCmd(), newTopologyMatrixCmd(), newTopologyPresetsCmd())
	cmd.AddCommand(newDiscoverCmd())
	cmd.AddCommand(newAssembleCmd())
	cmd.AddCommand(newTopologyImportCmd())
	return cmd
}

func newTopologyShowCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Summarise a cluster, or export it as a cluster file",
		Long: `Summarise a cluster by placement level (how many domains at each level, and
GPUs and hosts per domain), by host template, by accelerator model (hosts,
GPUs, GPU memory, CPU cores, host memory) and by fabric kind.

With --format yaml or json, write the whole cluster as a cluster file
instead; loading that file gives the same cluster.`,
		Example: `  gpusched topology show --preset h100-10k
  gpusched topology show --file cluster.yaml
  gpusched topology show --machine dgx-b200 --hosts 64 --hosts-per-tor 16
  gpusched topology show --preset gb200-nvl72 --format yaml > rack.yaml`,
		Args: cobra.NoArgs,
	}
	cf := addClusterFlags(cmd)
	cmd.Flags().StringVarP(&format, "format", "o", "text", "output: text (a summary), yaml or json (the cluster file)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if format != "text" && format != "yaml" && format != "json" {
			return fmt.Errorf("unknown --format %q (want text, yaml or json)", format)
		}
		c, err := cf.cluster(cmd)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if format == "text" {
			return writeSummary(out, c)
		}
		f, _ := topology.ParseFormat(format)
		return topology.Encode(out, c.Spec(), f)
	}
	return cmd
}

func newTopologyMatrixCmd() *cobra.Command {
	var bandwidth bool
	cmd := &cobra.Command{
		Use:   "matrix [HOST]",
		Short: "Print the GPU connection matrix of one host, like nvidia-smi topo -m",
		Long: `Print how the GPUs of one host are connected, in the style of
"nvidia-smi topo -m": a row and a column per GPU, and in each cell the
nearest path between the two:

  X      the GPU itself
  NVS    NVLink through an NVSwitch fabric (kind nvswitch)
  NVL    direct NVLink (kind nvlink)
  NVB    NVLink bridge (kind nvlink-bridge)
  MNNVL  multi-node NVLink domain, e.g. GB200 NVL72 (kind mnnvl)
  HCCS   Huawei HCCS (kind hccs)
  FAB    any other accelerator fabric
  PIX    PCIe through at most one PCIe switch
  PXB    PCIe through several switches, not through the host bridge
  PHB    PCIe through a PCIe host bridge (the CPU)
  NODE   PCIe and the links between host bridges of one NUMA node
  SYS    PCIe and the interconnect between NUMA nodes (UPI, Infinity Fabric)

nvidia-smi prints NV# (the number of bonded NVLinks) where this prints the
fabric's kind; the legend gives each fabric's indicative bandwidth, and
--bandwidth prints the indicative GB/s of every path instead of its kind.
CPU and NUMA affinity come from the host template's NUMA nodes.

HOST is a host name; the default is the first host.`,
		Example: `  gpusched topology matrix --preset dgx-a100
  gpusched topology matrix --preset pcie-8gpu --bandwidth
  gpusched topology matrix --file cluster.yaml dgx0042`,
		Args: cobra.MaximumNArgs(1),
	}
	cf := addClusterFlags(cmd)
	cmd.Flags().BoolVar(&bandwidth, "bandwidth", false, "print indicative bandwidths in GB/s instead of link kinds")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, err := cf.cluster(cmd)
		if err != nil {
			return err
		}
		h := topology.HostID(0)
		if len(args) == 1 {
			var ok bool
			if h, ok = c.HostByName(args[0]); !ok {
				return fmt.Errorf("no host %q in cluster %s (hosts: %s)", args[0], c.Name(), someHosts(c))
			}
		}
		return writeMatrix(cmd.OutOrStdout(), c, h, bandwidth)
	}
	return cmd
}

func newTopologyPresetsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "presets",
		Short: "List the built-in clusters",
		Long: `List the built-in clusters that --preset accepts, one per line: hosts,
GPUs, accelerator models, fabric domains and network levels. Machine presets
(dgx-h100, pcie-8gpu, …) are one host (one 18-tray rack for gb200-nvl72);
--machine builds larger clusters of them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "NAME\tHOSTS\tGPUS\tMODELS\tFABRIC\tNETWORK")
			for _, name := range topology.PresetNames() {
				c, err := topology.LoadPreset(name)
				if err != nil {
					fmt.Fprintf(tw, "%s\t-\t-\t(unavailable: %v)\t\t\n", name, err)
					continue
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", name, c.NumHosts(), c.NumGPUs(), modelList(c), fabricList(c), networkList(c))
			}
			return tw.Flush()
		},
	}
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// someHosts lists the first few host names, for error messages.
func someHosts(c *topology.Cluster) string {
	const n = 5
	var names []string
	for h := 0; h < min(c.NumHosts(), n); h++ {
		names = append(names, c.HostName(topology.HostID(h)))
	}
	s := strings.Join(names, ", ")
	if c.NumHosts() > n {
		s += fmt.Sprintf(", … %d in all", c.NumHosts())
	}
	return s
}

// modelList names the accelerator models with their GPU counts,
// "1000×H100-SXM5-80GB" (models in ID order).
func modelList(c *topology.Cluster) string {
	counts := make([]int, len(c.Models()))
	for h := 0; h < c.NumHosts(); h++ {
		if m := c.HostModel(topology.HostID(h)); m != topology.NoModel {
			_, n := c.HostGPUs(topology.HostID(h))
			counts[m] += n
		}
	}
	var parts []string
	for m, n := range counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d×%s", n, c.Model(topology.ModelID(m)).Model))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// fabricList summarises fabric domains by kind: "125 nvswitch×8".
func fabricList(c *topology.Cluster) string {
	var parts []string
	for _, k := range fabricKinds(c) {
		size := fmt.Sprint(k.gpusMin)
		if k.gpusMax != k.gpusMin {
			size = fmt.Sprintf("%d-%d", k.gpusMin, k.gpusMax)
		}
		parts = append(parts, fmt.Sprintf("%d %s×%s", k.domains, k.kind, size))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// networkList names the network levels with their switch counts,
// innermost first: "391 tor, 25 spine".
func networkList(c *topology.Cluster) string {
	var parts []string
	for l := topology.LevelHost + 1; l < c.LevelCluster(); l++ {
		parts = append(parts, fmt.Sprintf("%d %s", len(c.DomainsAt(l)), c.LevelName(l)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// minMax keeps the range of some counts.
type minMax struct{ lo, hi, n int }

func (m *minMax) add(v int) {
	if m.n == 0 || v < m.lo {
		m.lo = v
	}
	if m.n == 0 || v > m.hi {
		m.hi = v
	}
	m.n++
}

func (m minMax) String() string {
	switch {
	case m.n == 0:
		return "-"
	case m.lo == m.hi:
		return strconv.Itoa(m.lo)
	}
	return fmt.Sprintf("%d-%d", m.lo, m.hi)
}

// domainHosts counts the hosts a domain's GPUs (ascending IDs, so grouped
// by host) belong to.
func domainHosts(c *topology.Cluster, d topology.DomainID) int {
	if hosts := c.DomainHostList(d); len(hosts) > 0 {
		return len(hosts)
	}
	n := 0
	last := topology.NoHost
	for _, g := range c.DomainGPUs(d) {
		if h := c.GPUHost(g); h != last {
			n++
			last = h
		}
	}
	return n
}

type fabricKind struct {
	kind             string
	domains          int
	gpusMin, gpusMax int
	hosts, bw        minMax
}

// fabricKinds groups the fabric domains by kind, in order of first
// appearance.
func fabricKinds(c *topology.Cluster) []*fabricKind {
	var kinds []*fabricKind
	for _, d := range c.DomainsAt(topology.LevelFabric) {
		info := c.Domain(d)
		i := slices.IndexFunc(kinds, func(k *fabricKind) bool { return k.kind == info.FabricKind })
		if i < 0 {
			kinds = append(kinds, &fabricKind{kind: info.FabricKind, gpusMin: len(c.DomainGPUs(d))})
			i = len(kinds) - 1
		}
		k := kinds[i]
		n := len(c.DomainGPUs(d))
		k.domains++
		k.gpusMin, k.gpusMax = min(k.gpusMin, n), max(k.gpusMax, n)
		k.hosts.add(domainHosts(c, d))
		k.bw.add(int(info.BandwidthGBps))
	}
	return kinds
}

// writeSummary prints the text summary of "topology show".
func writeSummary(w io.Writer, c *topology.Cluster) error {
	fmt.Fprintf(w, "Cluster %s: %s, %s, %s\n", c.Name(), plural(c.NumHosts(), "host"), plural(c.NumGPUs(), "GPU"), plural(c.NumDomains(), "domain"))

	fmt.Fprintf(w, "\nPlacement levels, innermost first:\n")
	tw := newTable(w)
	fmt.Fprintln(tw, "  LEVEL\tDOMAINS\tGPUS/DOMAIN\tHOSTS/DOMAIN")
	for l := topology.LevelFabric; l <= c.LevelCluster(); l++ {
		var gpus, hosts minMax
		doms := c.DomainsAt(l)
		for _, d := range doms {
			gpus.add(len(c.DomainGPUs(d)))
			hosts.add(domainHosts(c, d))
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\n", c.LevelName(l), len(doms), gpus, hosts)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	outside := 0
	for g := 0; g < c.NumGPUs(); g++ {
		if c.GPUFabric(topology.GPUID(g)) == topology.NoDomain {
			outside++
		}
	}
	if outside > 0 {
		fmt.Fprintf(w, "  (%d GPUs are in no fabric domain)\n", outside)
	}

	fmt.Fprintf(w, "\nAccelerator models:\n")
	type modelRow struct {
		hosts, gpus    int
		cpu, mem       int64
		name, vendor   string
		gpuMemMiB      int64
		hasAccelerator bool
	}
	rows := make([]modelRow, len(c.Models())+1) // last: hosts without GPUs
	for m, acc := range c.Models() {
		rows[m] = modelRow{name: acc.Model, vendor: acc.Vendor, gpuMemMiB: acc.MemoryMiB, hasAccelerator: true}
	}
	rows[len(rows)-1] = modelRow{name: "(no GPUs)"}
	for h := 0; h < c.NumHosts(); h++ {
		info := c.Host(topology.HostID(h))
		i := len(rows) - 1
		if info.Model != topology.NoModel {
			i = int(info.Model)
		}
		r := &rows[i]
		r.hosts++
		r.gpus += info.NumGPUs
		r.cpu += info.CPUMilli
		r.mem += info.MemoryMiB
	}
	tw = newTable(w)
	fmt.Fprintln(tw, "  MODEL\tVENDOR\tHOSTS\tGPUS\tGPU MEMORY\tCPU CORES\tHOST MEMORY")
	for _, r := range rows {
		if r.hosts == 0 {
			continue
		}
		gpuMem := "-"
		switch {
		case r.hasAccelerator && r.gpuMemMiB == 0:
			gpuMem = "unknown" // the spec's zero: the model's memory is not known
		case r.hasAccelerator:
			gpuMem = formatMiB(r.gpuMemMiB)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.name, dash(r.vendor), r.hosts, r.gpus, gpuMem, formatMilli(r.cpu), formatMiB(r.mem))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nHost templates:\n")
	spec := c.Spec()
	hostsOf := map[string]int{}
	for h := 0; h < c.NumHosts(); h++ {
		hostsOf[c.Host(topology.HostID(h)).Template]++
	}
	tw = newTable(w)
	fmt.Fprintln(tw, "  TEMPLATE\tHOSTS\tGPUS\tMODEL\tNUMA\tCPU CORES\tMEMORY\tFABRICS")
	for _, t := range spec.Templates {
		// Runs of like domains: "4 nvlink-bridge×2".
		var fabrics []string
		for i := 0; i < len(t.Fabrics); {
			f, j := t.Fabrics[i], i+1
			for j < len(t.Fabrics) && t.Fabrics[j].Kind == f.Kind && len(t.Fabrics[j].GPUs) == len(f.GPUs) {
				j++
			}
			fabrics = append(fabrics, fmt.Sprintf("%d %s×%d", j-i, f.Kind, len(f.GPUs)))
			i = j
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", t.Name, hostsOf[t.Name], t.GPUs, dash(t.Accelerator), max(len(t.NUMA), 1),
			formatMilli(t.CPUMilli), formatMiB(t.MemoryMiB), dash(strings.Join(fabrics, ", ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	kinds := fabricKinds(c)
	if len(kinds) == 0 {
		fmt.Fprintf(w, "\nFabric domains: none\n")
		return nil
	}
	fmt.Fprintf(w, "\nFabric domains:\n")
	tw = newTable(w)
	fmt.Fprintln(tw, "  KIND\tDOMAINS\tGPUS/DOMAIN\tHOSTS/DOMAIN\tGB/S")
	for _, k := range kinds {
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\n", k.kind, k.domains, minMax{k.gpusMin, k.gpusMax, 1}, k.hosts, k.bw)
	}
	return tw.Flush()
}

// plural returns "1 host", "2 hosts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatMiB prints a size in MiB with a binary unit: "80 GiB", "1.5 TiB".
func formatMiB(mib int64) string {
	v, unit := float64(mib), "MiB"
	for _, u := range []string{"GiB", "TiB", "PiB", "EiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + unit
}

// formatMilli prints milli-cores as cores: "224", "0.5".
func formatMilli(m int64) string {
	if m%1000 == 0 {
		return strconv.FormatInt(m/1000, 10)
	}
	return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64)
}

// fabricLabels are the matrix cells for GPUs in one fabric domain, by kind
// (see the matrix command's help).
var fabricLabels = map[string]string{
	topology.FabricNVSwitch:     "NVS",
	topology.FabricNVLink:       "NVL",
	topology.FabricNVLinkBridge: "NVB",
	topology.FabricMNNVL:        "MNNVL",
	topology.FabricHCCS:         "HCCS",
}

func fabricLabel(kind string) string {
	if l, ok := fabricLabels[kind]; ok {
		return l
	}
	return "FAB"
}

// writeMatrix prints the "nvidia-smi topo -m" style matrix of host h.
func writeMatrix(w io.Writer, c *topology.Cluster, h topology.HostID, bandwidth bool) error {
	info := c.Host(h)
	model := "no GPUs"
	if info.Model != topology.NoModel {
		model = fmt.Sprintf("%d × %s", info.NumGPUs, c.Model(info.Model).Model)
	}
	fmt.Fprintf(w, "Host %s of cluster %s (template %s, %s)\n\n", info.Name, c.Name(), info.Template, model)
	if info.NumGPUs == 0 {
		return nil
	}
	numaOf, cpusOf := gpuNUMA(c, info)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\t")
	for i := 0; i < info.NumGPUs; i++ {
		fmt.Fprintf(tw, "GPU%d\t", i)
	}
	fmt.Fprintln(tw, "CPU Affinity\tNUMA Affinity")
	type fabricSeen struct {
		kind string
		bw   float64
	}
	var fabrics []fabricSeen
	for i := 0; i < info.NumGPUs; i++ {
		a := info.FirstGPU + topology.GPUID(i)
		fmt.Fprintf(tw, "GPU%d\t", i)
		for j := 0; j < info.NumGPUs; j++ {
			b := info.FirstGPU + topology.GPUID(j)
			l := c.Link(a, b)
			cell := l.Kind.String()
			if l.Kind == topology.LinkFabric {
				d := c.Domain(c.GPUFabric(a))
				cell = fabricLabel(d.FabricKind)
				if !slices.Contains(fabrics, fabricSeen{d.FabricKind, d.BandwidthGBps}) {
					fabrics = append(fabrics, fabricSeen{d.FabricKind, d.BandwidthGBps})
				}
			}
			if bandwidth && l.Kind != topology.LinkSelf {
				cell = strconv.FormatFloat(l.BandwidthGBps, 'f', -1, 64)
			}
			fmt.Fprintf(tw, "%s\t", cell)
		}
		fmt.Fprintf(tw, "%s\t%s\n", cpusOf[i], numaOf[i])
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nLegend:\n\n")
	tw = tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "  X\t= the GPU itself")
	for _, f := range fabrics {
		fmt.Fprintf(tw, "  %s\t= NVLink-class fabric of kind %s, about %s GB/s per GPU\n", fabricLabel(f.kind), f.kind, strconv.FormatFloat(f.bw, 'f', -1, 64))
	}
	fmt.Fprintln(tw, "  SYS\t= PCIe and the interconnect between NUMA nodes (UPI, Infinity Fabric)")
	fmt.Fprintln(tw, "  NODE\t= PCIe and the links between PCIe host bridges of one NUMA node")
	fmt.Fprintln(tw, "  PHB\t= PCIe through a PCIe host bridge (typically the CPU)")
	fmt.Fprintln(tw, "  PXB\t= PCIe through several PCIe switches, not through a host bridge")
	fmt.Fprintln(tw, "  PIX\t= PCIe through at most one PCIe switch")
	if bandwidth {
		fmt.Fprintln(tw, "\n  Cells give the indicative bandwidth of each path in GB/s per GPU.")
	}
	return tw.Flush()
}

// gpuNUMA returns, for each GPU index of a host, its NUMA node ID and that
// node's CPU list from the host's template ("N/A" when the template does
// not say).
func gpuNUMA(c *topology.Cluster, info topology.HostInfo) (numa, cpus []string) {
	numa = make([]string, info.NumGPUs)
	cpus = make([]string, info.NumGPUs)
	for i := range numa {
		numa[i], cpus[i] = "0", "N/A" // a template without NUMA nodes has one implicit node 0
	}
	var t *topology.HostTemplate
	spec := c.Spec()
	for i := range spec.Templates {
		if spec.Templates[i].Name == info.Template {
			t = &spec.Templates[i]
		}
	}
	if t == nil {
		return numa, cpus
	}
	var walk func(p topology.PCIeSpec, n topology.NUMASpec)
	walk = func(p topology.PCIeSpec, n topology.NUMASpec) {
		for _, g := range p.GPUs {
			if g >= 0 && g < len(numa) {
				numa[g] = strconv.Itoa(n.ID)
				cpus[g] = dashNA(n.CPUs)
			}
		}
		for _, s := range p.Switches {
			walk(s, n)
		}
	}
	for _, n := range t.NUMA {
		for _, p := range n.PCIe {
			walk(p, n)
		}
	}
	return numa, cpus
}

func dashNA(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}
