package nvml

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/topology"
)

// Input is one cluster file given to Assemble: usually the one-host file
// that Result.Spec (gpusched topology discover) writes, but any cluster
// file will do.
type Input struct {
	// Name names the input in errors (its file name).
	Name string
	// Spec is its content.
	Spec topology.Spec
}

// AssembleOptions say how Assemble joins the inputs.
type AssembleOptions struct {
	// Name is the cluster's name; empty means "cluster".
	Name string
	// Network places hosts under switches; nil (and no Rule) gives a flat
	// cluster without network levels.
	Network *Network
	// Rule places hosts under ToR switches by their names; it may not be
	// combined with Network.
	Rule *HostRule
	// MemoryQuantumMiB, when positive, rounds each template's host memory
	// down to a multiple of it before templates are compared, so that hosts
	// whose kernels reserve slightly different amounts share a template
	// (1024 keeps whole GiB).
	MemoryQuantumMiB int64
}

// Assemble merges the hosts of inputs into one cluster spec.
//
//   - Every input must build (topology.Build); its network levels and
//     switches are dropped: the network comes from opts.
//   - Accelerators are merged by model; one model described differently by
//     two inputs is an error.
//   - Templates identical once canonical (ignoring names, and memory below
//     opts.MemoryQuantumMiB) are shared; different templates with one name
//     are told apart by a suffix ("dgx-h100-2").
//   - Hosts keep their names, templates and GPU identities, in input order;
//     a host in two inputs is an error.
//   - Fabric domains that span hosts are merged by (cluster UUID, clique
//     ID), so the hosts of a GB200 NVL72 rack, discovered one by one, join
//     one mnnvl domain; domains without a UUID are kept by name. Two
//     descriptions of one clique that disagree on the kind, or two cliques
//     with one name, are errors ("conflicting cliques"). A clique's hosts
//     are written as one host pattern (rack1-n[01-18]) where their names
//     allow, else as a comma-separated host list.
//   - With a network, every host must be under exactly one innermost
//     switch, and every host the network names must be among the inputs.
//
// The result is validated with topology.Build. Complexity O(total hosts ×
// GPUs per host) plus the network's size.
func Assemble(inputs []Input, opts AssembleOptions) (topology.Spec, error) {
	if len(inputs) == 0 {
		return topology.Spec{}, fmt.Errorf("assemble: no host files")
	}
	if opts.MemoryQuantumMiB < 0 {
		return topology.Spec{}, fmt.Errorf("assemble: negative memory quantum %d MiB", opts.MemoryQuantumMiB)
	}
	if opts.Network != nil && opts.Rule != nil {
		return topology.Spec{}, fmt.Errorf("assemble: give a network or a host rule, not both")
	}
	name := opts.Name
	if name == "" {
		name = "cluster"
	}
	out := topology.Spec{Version: topology.SpecVersion, Name: name}
	a := &assembler{
		out: &out, quantum: opts.MemoryQuantumMiB, accFrom: map[string]int{}, accSrc: map[string]string{},
		tmplByKey: map[string]string{}, tmplNames: map[string]bool{},
		hostSrc: map[string]string{}, fabByKey: map[string]int{}, fabByName: map[string]int{},
	}
	for _, in := range inputs {
		if err := a.add(in); err != nil {
			return topology.Spec{}, err
		}
	}
	net := opts.Network
	if opts.Rule != nil {
		names := make([]string, len(out.Hosts))
		for i, h := range out.Hosts {
			names[i] = h.Name
		}
		var err error
		if net, err = opts.Rule.Network(names); err != nil {
			return topology.Spec{}, fmt.Errorf("assemble: %w", err)
		}
	}
	if net != nil {
		if err := a.place(net); err != nil {
			return topology.Spec{}, err
		}
	}
	for _, f := range a.fabs {
		pat, ok := hostPattern(f.hosts)
		if !ok {
			// Unrelated names: list them; Build reads the list back.
			pat = strings.Join(f.hosts, ",")
		}
		f.group.Hosts = pat
		out.Fabrics = append(out.Fabrics, f.group)
	}
	if _, err := topology.Build(out); err != nil {
		return topology.Spec{}, fmt.Errorf("assemble: the merged cluster is invalid: %w", err)
	}
	return out, nil
}

type assembler struct {
	out       *topology.Spec
	accFrom   map[string]int    // model → index in out.Accelerators
	accSrc    map[string]string // model → input that described it first
	quantum   int64             // AssembleOptions.MemoryQuantumMiB
	tmplByKey map[string]string // canonical template (nameless) → name in out
	tmplNames map[string]bool
	hostSrc   map[string]string // host → input
	fabs      []*mergedFabric
	fabByKey  map[string]int
	fabByName map[string]int
}

type mergedFabric struct {
	group topology.FabricGroup
	hosts []string
	src   string
}

func (a *assembler) add(in Input) error {
	c, err := topology.Build(in.Spec)
	if err != nil {
		return fmt.Errorf("assemble: %s: %w", in.Name, err)
	}
	s := c.Spec()
	for _, acc := range s.Accelerators {
		key := mustJSON(acc)
		if i, ok := a.accFrom[acc.Model]; ok {
			if mustJSON(a.out.Accelerators[i]) != key {
				return fmt.Errorf("assemble: %s: accelerator %q differs from its description in %s", in.Name, acc.Model, a.accSrc[acc.Model])
			}
			continue
		}
		a.accFrom[acc.Model] = len(a.out.Accelerators)
		a.accSrc[acc.Model] = in.Name
		a.out.Accelerators = append(a.out.Accelerators, acc)
	}
	rename := map[string]string{}
	for _, t := range s.Templates {
		ct := normTemplate(t.Canonical())
		if q := a.quantum; q > 0 && ct.MemoryMiB >= q {
			ct.MemoryMiB -= ct.MemoryMiB % q
		}
		ct.Name = ""
		key := mustJSON(ct)
		if n, ok := a.tmplByKey[key]; ok {
			rename[t.Name] = n
			continue
		}
		n := t.Name
		for i := 2; a.tmplNames[n]; i++ {
			n = t.Name + "-" + strconv.Itoa(i)
		}
		a.tmplNames[n] = true
		a.tmplByKey[key] = n
		rename[t.Name] = n
		ct.Name = n
		a.out.Templates = append(a.out.Templates, ct)
	}
	for h := 0; h < c.NumHosts(); h++ {
		info := c.Host(topology.HostID(h))
		if prev, dup := a.hostSrc[info.Name]; dup {
			return fmt.Errorf("assemble: host %q is in both %s and %s", info.Name, prev, in.Name)
		}
		a.hostSrc[info.Name] = in.Name
		g := topology.HostGroup{Name: info.Name, Template: rename[info.Template]}
		for i := 0; i < info.NumGPUs; i++ {
			gi := c.GPU(info.FirstGPU + topology.GPUID(i))
			if gi.UUID != "" || gi.BusID != "" {
				g.GPUs = append(g.GPUs, topology.GPUIdentity{Index: i, UUID: gi.UUID, BusID: gi.BusID})
			}
		}
		a.out.Hosts = append(a.out.Hosts, g)
	}
	for _, d := range c.DomainsAt(topology.LevelFabric) {
		info := c.Domain(d)
		if info.Host != topology.NoHost {
			continue // a host-local domain, part of its template
		}
		var hosts []string
		for _, g := range c.DomainGPUs(d) {
			hn := c.HostName(c.GPUHost(g))
			if len(hosts) == 0 || hosts[len(hosts)-1] != hn {
				hosts = append(hosts, hn)
			}
		}
		key := "name:" + info.Name
		if info.ClusterUUID != "" {
			key = "clique:" + info.ClusterUUID + "/" + strconv.FormatUint(uint64(info.CliqueID), 10)
		}
		if i, ok := a.fabByKey[key]; ok {
			f := a.fabs[i]
			if f.group.Kind != info.FabricKind {
				return fmt.Errorf("assemble: conflicting cliques: %s describes domain %s as %s, %s as %s", f.src, f.group.Name, f.group.Kind, in.Name, info.FabricKind)
			}
			f.group.BandwidthGBps = max(f.group.BandwidthGBps, info.BandwidthGBps)
			f.hosts = append(f.hosts, hosts...)
			continue
		}
		if i, ok := a.fabByName[info.Name]; ok {
			f := a.fabs[i]
			return fmt.Errorf("assemble: conflicting cliques: domain %s is (cluster %s, clique %d) in %s but (cluster %s, clique %d) in %s",
				info.Name, f.group.ClusterUUID, f.group.CliqueID, f.src, info.ClusterUUID, info.CliqueID, in.Name)
		}
		a.fabByKey[key] = len(a.fabs)
		a.fabByName[info.Name] = len(a.fabs)
		a.fabs = append(a.fabs, &mergedFabric{
			group: topology.FabricGroup{Name: info.Name, Kind: info.FabricKind, BandwidthGBps: info.BandwidthGBps,
				ClusterUUID: info.ClusterUUID, CliqueID: info.CliqueID},
			hosts: hosts, src: in.Name,
		})
	}
	return nil
}

// place puts the hosts under the network's switches.
func (a *assembler) place(net *Network) error {
	at, err := net.hostSwitches()
	if err != nil {
		return fmt.Errorf("assemble: network: %w", err)
	}
	for i := range a.out.Hosts {
		h := &a.out.Hosts[i]
		sw, ok := at[h.Name]
		if !ok {
			return fmt.Errorf("assemble: host %q (from %s) is under no %s switch of the network", h.Name, a.hostSrc[h.Name], net.Levels[len(net.Levels)-1].Name)
		}
		h.Parent = net.Switches[sw].Name
	}
	for _, sw := range net.Switches {
		for _, pat := range sw.Hosts {
			names, _ := topology.ExpandNames(pat) // validated by hostSwitches
			for _, n := range names {
				if _, ok := a.hostSrc[n]; !ok {
					where := ""
					if sw.Line > 0 {
						where = fmt.Sprintf(", line %d", sw.Line)
					}
					return fmt.Errorf("assemble: the network puts host %q under %s%s, but no host file describes it", n, sw.Name, where)
				}
			}
		}
	}
	a.out.Levels = slices.Clone(net.Levels)
	for _, sw := range net.Switches {
		a.out.Switches = append(a.out.Switches, topology.SwitchGroup{Name: sw.Name, Level: sw.Level, Parent: sw.Parent})
	}
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("nvml: marshalling a spec value: " + err.Error())
	}
	return string(b)
}

// hostPattern writes names as one host pattern that expands to exactly
// those names (in ascending numeric order): "r1-n[01-03,07]". The names must
// differ in one run of digits only. It reports false when no such pattern
// exists.
func hostPattern(names []string) (string, bool) {
	if len(names) == 0 {
		return "", false
	}
	if len(names) == 1 {
		if strings.ContainsAny(names[0], "[]") {
			return "", false
		}
		return names[0], true
	}
	split := make([][]string, len(names))
	for i, n := range names {
		split[i] = digitRuns(n)
		if len(split[i]) != len(split[0]) {
			return "", false
		}
	}
	vary := -1
	for k := range split[0] {
		for i := range split {
			if split[i][k] != split[0][k] {
				if vary >= 0 && vary != k || !isDigits(split[0][k]) || !isDigits(split[i][k]) {
					return "", false
				}
				vary = k
			}
		}
	}
	if vary < 0 {
		return "", false // duplicates
	}
	nums := make([]string, len(names))
	for i := range split {
		nums[i] = split[i][vary]
		if len(nums[i]) > 9 {
			return "", false
		}
	}
	slices.SortFunc(nums, func(x, y string) int {
		a, _ := strconv.Atoi(x)
		b, _ := strconv.Atoi(y)
		if a != b {
			return a - b
		}
		return strings.Compare(x, y)
	})
	var parts []string
	for i := 0; i < len(nums); {
		lo := nums[i]
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		v, _ := strconv.Atoi(lo)
		j := i + 1
		for j < len(nums) && nums[j] == padNum(v+(j-i), width) {
			j++
		}
		if j-i > 1 {
			parts = append(parts, lo+"-"+padNum(v+(j-i-1), width))
		} else {
			parts = append(parts, lo)
		}
		i = j
	}
	pat := strings.Join(split[0][:vary], "") + "[" + strings.Join(parts, ",") + "]" + strings.Join(split[0][vary+1:], "")
	// Check: the pattern expands to exactly the names.
	got, err := topology.ExpandNames(pat)
	if err != nil || len(got) != len(names) {
		return "", false
	}
	want := slices.Clone(names)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		return "", false
	}
	return pat, true
}

// digitRuns splits s into alternating runs of digits and non-digits.
func digitRuns(s string) []string {
	var out []string
	start := 0
	for i := 1; i <= len(s); i++ {
		if i == len(s) || isDigit(s[i]) != isDigit(s[i-1]) {
			out = append(out, s[start:i])
			start = i
		}
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func padNum(v, width int) string {
	s := strconv.Itoa(v)
	for len(s) < width {
		s = "0" + s
	}
	return s
}
