package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// trickyNames are strings that a careless YAML writer would turn into
// something else (null, booleans, numbers, anchors, tags, comments).
var trickyNames = []string{"null", "~", "true", "yes", "No", "1", "1.5", "0x10", "1e3", ".inf", "-", "&a", "*a", "!x",
	"@x", "`x", "'", `"`, "#", "a#b", "a:b", ":", "{x}", "a,b", "%x", "?", "|", ">", "é", "日本", "0001", "<<"}

// nameGen draws names unique within one spec.
type nameGen struct {
	t      *rapid.T
	used   map[string]bool
	groups int
}

func (g *nameGen) draw(label string, extra ...string) string {
	var name string
	if rapid.Bool().Draw(g.t, label+"Tricky") {
		name = rapid.SampledFrom(trickyNames).Draw(g.t, label)
	} else {
		name = rapid.StringMatching(`[A-Za-z][A-Za-z0-9._:-]{0,8}`).Draw(g.t, label)
	}
	for _, x := range extra {
		if name == x {
			name += "_"
		}
	}
	for g.used[name] {
		name += "x"
	}
	g.used[name] = true
	return name
}

// freeText draws any valid UTF-8 string, control characters included.
func freeText(t *rapid.T, label string) string {
	if rapid.Bool().Draw(t, label+"Empty") {
		return ""
	}
	if rapid.Bool().Draw(t, label+"Tricky") {
		return rapid.SampledFrom(append(trickyNames, " lead", "trail ", "two  spaces", "line\nbreak", "tab\t", "nul\x00", "  ", "a: b", "- x", "# c")).Draw(t, label)
	}
	return rapid.String().Draw(t, label)
}

func bandwidth(t *rapid.T, label string) float64 {
	switch rapid.IntRange(0, 2).Draw(t, label+"Kind") {
	case 0:
		return 0
	case 1:
		return float64(rapid.IntRange(1, 2000).Draw(t, label))
	}
	return rapid.Float64Range(0, MaxBandwidthGBps).Draw(t, label)
}

// genSpec draws a random valid spec: network levels, accelerators with and
// without MIG, templates with random PCIe trees and fabric domains, switch
// and host groups with ranges, GPU identities and multi-host fabrics.
func genSpec(t *rapid.T) Spec {
	names := &nameGen{t: t, used: map[string]bool{}}
	s := Spec{Version: SpecVersion}
	if rapid.Bool().Draw(t, "named") {
		s.Name = rapid.StringMatching(`[a-z][a-z0-9-]{0,10}`).Draw(t, "name")
	}
	nLevels := rapid.IntRange(0, 3).Draw(t, "levels")
	for i := 0; i < nLevels; i++ {
		s.Levels = append(s.Levels, LevelSpec{Name: names.draw("level", "nvlink", "fabric", "host", "node", "cluster"), BandwidthGBps: bandwidth(t, "levelBW")})
	}
	nModels := rapid.IntRange(1, 3).Draw(t, "models")
	for i := 0; i < nModels; i++ {
		a := AcceleratorSpec{Model: names.draw("model"), Vendor: freeText(t, "vendor"), ComputeCapability: freeText(t, "cc"),
			MemoryMiB: rapid.Int64Range(0, MaxMemoryMiB).Draw(t, "accMem")}
		if rapid.Bool().Draw(t, "mig") {
			slots := rapid.IntRange(1, MaxMIGSlots).Draw(t, "slots")
			m := &MIGSpec{Slots: slots}
			for j := rapid.IntRange(1, 4).Draw(t, "profiles"); j > 0; j-- {
				size := rapid.IntRange(1, slots).Draw(t, "size")
				var starts []int
				for st := 0; st+size <= slots; st++ {
					if rapid.Bool().Draw(t, "start") {
						starts = append(starts, st)
					}
				}
				if len(starts) == 0 {
					starts = []int{0}
				}
				var excl string
				if slots < MaxMIGSlots && rapid.IntRange(0, 3).Draw(t, "exclusive") == 0 {
					excl = MediaExtensions // one resource: always room above slots < 16
				}
				m.Profiles = append(m.Profiles, MIGProfileSpec{Name: names.draw("profile"), Size: size, Starts: starts,
					MemoryMiB: rapid.Int64Range(0, 1<<20).Draw(t, "profMem"), ComputeSlices: rapid.IntRange(0, 64).Draw(t, "slices"),
					Exclusive: excl})
			}
			a.MIG = m
		}
		s.Accelerators = append(s.Accelerators, a)
	}
	nTemplates := rapid.IntRange(1, 3).Draw(t, "templates")
	for i := 0; i < nTemplates; i++ {
		s.Templates = append(s.Templates, genTemplate(t, names, s.Accelerators))
	}
	// Switches: level i has counts[i] switches, split over level i-1.
	counts := make([]int, nLevels)
	patterns := make([]string, nLevels)
	for i := range nLevels {
		counts[i] = rapid.IntRange(1, 4).Draw(t, "switches")
		patterns[i] = names.rangePattern("switch", counts[i])
		g := SwitchGroup{Name: patterns[i], Level: s.Levels[i].Name}
		if i > 0 {
			g.Parent = patterns[i-1]
			g.PerParent = ceilDiv(counts[i], counts[i-1])
		}
		s.Switches = append(s.Switches, g)
	}
	nGroups := rapid.IntRange(1, 4).Draw(t, "hostGroups")
	uuid := 0
	for i := 0; i < nGroups; i++ {
		ti := rapid.IntRange(0, len(s.Templates)-1).Draw(t, "template")
		n := rapid.IntRange(1, 6).Draw(t, "hosts")
		g := HostGroup{Name: names.rangePattern("host", n), Template: s.Templates[ti].Name}
		if nLevels > 0 {
			inner := nLevels - 1
			g.Parent = patterns[inner]
			g.PerParent = ceilDiv(n, counts[inner])
		}
		if n == 1 && s.Templates[ti].GPUs > 0 && rapid.Bool().Draw(t, "gpuIDs") {
			for idx := 0; idx < s.Templates[ti].GPUs; idx++ {
				if rapid.Bool().Draw(t, "hasID") {
					uuid++
					g.GPUs = append(g.GPUs, GPUIdentity{Index: idx, UUID: fmt.Sprintf("GPU-%08x-%s", uuid, freeText(t, "uuid")),
						BusID: fmt.Sprintf("%04x:%02x:%02x.%x", rapid.IntRange(0, 0xffff).Draw(t, "dom"), idx, uuid%32, 0)})
				}
			}
		}
		s.Hosts = append(s.Hosts, g)
		// Hosts whose template has no host-local fabric may join a
		// multi-host fabric group.
		if s.Templates[ti].GPUs > 0 && len(s.Templates[ti].Fabrics) == 0 && rapid.Bool().Draw(t, "fabricGroup") {
			doms := rapid.IntRange(1, n).Draw(t, "domains")
			s.Fabrics = append(s.Fabrics, FabricGroup{Name: names.rangePattern("fabric", doms), Kind: rapid.SampledFrom([]string{FabricMNNVL, "custom"}).Draw(t, "kind"),
				Hosts: g.Name, PerDomain: ceilDiv(n, doms), BandwidthGBps: bandwidth(t, "fabricBW"), ClusterUUID: freeText(t, "clusterUUID"),
				CliqueID: rapid.Uint32().Draw(t, "clique")})
		}
	}
	return s
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// rangePattern names n hosts, switches or fabric domains: "p_k" for one,
// else "p_k-[1-n]", where k is unique in the spec, so no two patterns
// share a name (drawn names contain no '_').
func (g *nameGen) rangePattern(label string, n int) string {
	g.groups++
	// A comma would split the pattern into a name list.
	prefix := fmt.Sprintf("%s_%d", strings.ReplaceAll(g.draw(label), ",", ";"), g.groups)
	if n == 1 {
		return prefix
	}
	return fmt.Sprintf("%s-[%d-%d]", prefix, 1, n)
}

func genTemplate(t *rapid.T, names *nameGen, accs []AcceleratorSpec) HostTemplate {
	tp := HostTemplate{Name: names.draw("template"), CPUMilli: rapid.Int64Range(0, MaxCPUMilli).Draw(t, "cpu"),
		MemoryMiB: rapid.Int64Range(0, MaxMemoryMiB).Draw(t, "mem"), GPUs: rapid.IntRange(0, 9).Draw(t, "gpus")}
	if tp.GPUs > 0 {
		tp.Accelerator = accs[rapid.IntRange(0, len(accs)-1).Draw(t, "acc")].Model
	}
	if tp.GPUs > 0 && rapid.Bool().Draw(t, "implicitNUMA") {
		// No NUMA section: one implicit node and bridge.
	} else {
		// Random NUMA nodes, each with bridges and switch trees; then
		// every GPU goes to a random bridge or switch.
		var slots []*PCIeSpec
		ids := rapid.SliceOfNDistinct(rapid.IntRange(0, 1<<16), 1, 3, rapid.ID[int]).Draw(t, "numaIDs")
		for _, id := range ids {
			n := NUMASpec{ID: id, CPUs: freeText(t, "cpus")}
			for b := rapid.IntRange(1, 3).Draw(t, "bridges"); b > 0; b-- {
				n.PCIe = append(n.PCIe, genSwitchTree(t, 0))
			}
			tp.NUMA = append(tp.NUMA, n)
		}
		for i := range tp.NUMA {
			for j := range tp.NUMA[i].PCIe {
				slots = collectSlots(&tp.NUMA[i].PCIe[j], slots)
			}
		}
		for g := 0; g < tp.GPUs; g++ {
			p := slots[rapid.IntRange(0, len(slots)-1).Draw(t, "slot")]
			p.GPUs = append(p.GPUs, g)
		}
		// The GPU lists come out in any order the file may hold them.
		for _, p := range slots {
			if len(p.GPUs) > 1 && rapid.Bool().Draw(t, "shuffle") {
				slices.Reverse(p.GPUs)
			}
		}
	}
	// Fabric domains: consecutive runs of a random subset of the GPUs.
	g := 0
	for g < tp.GPUs && rapid.Bool().Draw(t, "fabric") {
		size := rapid.IntRange(1, tp.GPUs-g).Draw(t, "fabricSize")
		tp.Fabrics = append(tp.Fabrics, HostFabricSpec{Kind: rapid.SampledFrom([]string{FabricNVSwitch, FabricNVLinkBridge, FabricHCCS, "x-link"}).Draw(t, "fabricKind"),
			GPUs: seq(g, g+size), BandwidthGBps: bandwidth(t, "hostFabricBW")})
		g += size + rapid.IntRange(0, 1).Draw(t, "gap")
	}
	return tp
}

func genSwitchTree(t *rapid.T, depth int) PCIeSpec {
	var p PCIeSpec
	if depth < 3 {
		for k := rapid.IntRange(0, 2).Draw(t, "switches"); k > 0; k-- {
			p.Switches = append(p.Switches, genSwitchTree(t, depth+1))
		}
	}
	return p
}

func collectSlots(p *PCIeSpec, out []*PCIeSpec) []*PCIeSpec {
	out = append(out, p)
	for i := range p.Switches {
		out = collectSlots(&p.Switches[i], out)
	}
	return out
}

// TestRoundTripRandomSpecs: for random valid specs, Load(Marshal(spec))
// builds a cluster with an equal Spec, in YAML and in JSON.
func TestRoundTripRandomSpecs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSpec(t)
		c, err := Build(s)
		if err != nil {
			t.Fatalf("generated an invalid spec: %v\n%#v", err, s)
		}
		roundTrip(t, c, FormatYAML)
		roundTrip(t, c, FormatJSON)
	})
}

// FuzzLoad feeds arbitrary bytes to the loader as YAML and as JSON. No
// input may panic; every rejection must be a *FileError with a line; every
// file that loads must save and load back to an equal spec.
func FuzzLoad(f *testing.F) {
	for _, name := range PresetNames() {
		c, err := LoadPreset(name)
		if err != nil || c.NumHosts() > 200 {
			continue // slow to mutate; the small presets have the same shapes
		}
		s := c.Spec()
		for _, format := range []Format{FormatYAML, FormatJSON} {
			b, err := Marshal(s, format)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, format == FormatJSON)
		}
	}
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		if strings.Contains(file, "12500") {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	for _, bf := range badFiles {
		f.Add([]byte(bf.text), bf.format == FormatJSON)
	}
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		format := FormatYAML
		if isJSON {
			format = FormatJSON
		}
		c, err := Load(data, "fuzz", format)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FileError: %v", err, err)
			}
			if fe.Line < 1 || fe.Column < 0 || fe.Msg == "" {
				t.Fatalf("error without a position or message: %#v", fe)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("error does not unwrap to ErrInvalidSpec: %v", err)
			}
			return
		}
		roundTrip(t, c, FormatYAML)
		if _, err := Marshal(c.Spec(), FormatJSON); err == nil {
			roundTrip(t, c, FormatJSON)
		}
	})
}
