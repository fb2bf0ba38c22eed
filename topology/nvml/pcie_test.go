package nvml

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusched/gpusched/topology"
)

// levelsOf returns the PathLevel matrix topology.Cluster.Link gives the
// GPUs of a one-host cluster built from t (without fabrics).
func levelsOf(t testing.TB, tmpl topology.HostTemplate) [][]PathLevel {
	t.Helper()
	tmpl.Fabrics = nil
	c := buildOne(t, tmpl)
	n := tmpl.GPUs
	m := make([][]PathLevel, n)
	for i := range m {
		m[i] = make([]PathLevel, n)
		for j := range m[i] {
			if i != j {
				m[i][j] = kindLevel[c.Link(topology.GPUID(i), topology.GPUID(j)).Kind]
			}
		}
	}
	return m
}

var kindLevel = map[topology.LinkKind]PathLevel{
	topology.LinkPIX: PathPIX, topology.LinkPXB: PathPXB, topology.LinkPHB: PathPHB,
	topology.LinkNODE: PathNODE, topology.LinkSYS: PathSYS,
}

func buildOne(t testing.TB, tmpl topology.HostTemplate) *topology.Cluster {
	t.Helper()
	if tmpl.Name == "" {
		tmpl.Name = "t"
	}
	s := topology.Spec{Version: 1, Name: "c", Templates: []topology.HostTemplate{tmpl}, Hosts: []topology.HostGroup{{Name: "h", Template: tmpl.Name}}}
	if tmpl.GPUs > 0 {
		tmpl.Accelerator = "X"
		s.Templates[0] = tmpl
		s.Accelerators = []topology.AcceleratorSpec{{Model: "X"}}
	}
	c, err := topology.Build(s)
	if err != nil {
		t.Fatalf("build %+v: %v", tmpl, err)
	}
	return c
}

// switchesAbove counts the PCIe switches above each GPU of t.
func switchesAbove(t testing.TB, tmpl topology.HostTemplate) []int {
	c := buildOne(t, tmpl)
	out := make([]int, tmpl.GPUs)
	for g := range out {
		for _, d := range c.Ancestors(topology.GPUID(g)) {
			if c.DomainKindOf(d) == topology.KindPCIeSwitch {
				out[g]++
			}
		}
	}
	return out
}

func factsOf(t testing.TB, tmpl topology.HostTemplate) PCIeFacts {
	f := PCIeFacts{Levels: levelsOf(t, tmpl), NUMA: make([]int, tmpl.GPUs), CPUs: make([]string, tmpl.GPUs), Switches: switchesAbove(t, tmpl)}
	for _, n := range tmpl.NUMA {
		var walk func(p topology.PCIeSpec)
		walk = func(p topology.PCIeSpec) {
			for _, g := range p.GPUs {
				f.NUMA[g], f.CPUs[g] = n.ID, n.CPUs
			}
			for _, s := range p.Switches {
				walk(s)
			}
		}
		for _, p := range n.PCIe {
			walk(p)
		}
	}
	return f
}

// Every machine preset's PCIe tree is recovered exactly from the levels
// Link gives it and its sysfs switch counts.
func TestInferPCIePresets(t *testing.T) {
	for _, name := range topology.MachineNames() {
		t.Run(name, func(t *testing.T) {
			want, _, err := topology.MachineTemplate(name)
			if err != nil {
				t.Fatal(err)
			}
			numa, ws := InferPCIe(factsOf(t, want))
			if len(ws) > 0 {
				t.Errorf("warnings: %v", ws)
			}
			got := topology.HostTemplate{NUMA: numa}.Canonical()
			if !reflect.DeepEqual(normTemplate(got).NUMA, normTemplate(want.Canonical()).NUMA) {
				t.Errorf("got  %+v\nwant %+v", got.NUMA, want.NUMA)
			}
		})
	}
}

func TestInferPCIeCases(t *testing.T) {
	P, X, H, N, S := PathPIX, PathPXB, PathPHB, PathNODE, PathSYS
	for _, tc := range []struct {
		name     string
		levels   [][]PathLevel
		numa     []int
		switches []int
		want     []topology.NUMASpec
		warn     []string
	}{{
		name: "lone GPU without sysfs sits on its bridge",
		numa: []int{0}, want: []topology.NUMASpec{{ID: 0, PCIe: []topology.PCIeSpec{{GPUs: []int{0}}}}},
		levels: [][]PathLevel{{0}},
	}, {
		// GPUs 0,1 PIX; 2 alone under the same bridge (PHB to both).
		name:   "switch pair and a direct GPU on one bridge",
		levels: [][]PathLevel{{0, P, H}, {P, 0, H}, {H, H, 0}}, numa: []int{0, 0, 0}, switches: []int{1, 1, 0},
		want: []topology.NUMASpec{{ID: 0, PCIe: []topology.PCIeSpec{{GPUs: []int{2}, Switches: []topology.PCIeSpec{{GPUs: []int{0, 1}}}}}}},
	}, {
		name:   "NUMA ids unknown: numbered by SYS groups",
		levels: [][]PathLevel{{0, N, S}, {N, 0, S}, {S, S, 0}}, numa: []int{-1, -1, -1},
		want: []topology.NUMASpec{
			{ID: 0, PCIe: []topology.PCIeSpec{{GPUs: []int{0}}, {GPUs: []int{1}}}},
			{ID: 1, PCIe: []topology.PCIeSpec{{GPUs: []int{2}}}},
		},
		warn: []string{"numa: NUMA node unknown for some GPUs; numbered the unknown ones by their PCIe grouping"},
	}, {
		name:   "partly known NUMA ids name their groups",
		levels: [][]PathLevel{{0, X, S}, {X, 0, S}, {S, S, 0}}, numa: []int{-1, 3, -1},
		want: []topology.NUMASpec{
			{ID: 0, PCIe: []topology.PCIeSpec{{GPUs: []int{2}}}},
			{ID: 3, PCIe: []topology.PCIeSpec{{Switches: []topology.PCIeSpec{{Switches: []topology.PCIeSpec{{GPUs: []int{0}}, {GPUs: []int{1}}}}}}}},
		},
		warn: []string{"numa: NUMA node unknown for some GPUs; numbered the unknown ones by their PCIe grouping"},
	}, {
		name:   "NUMA ids contradict the levels",
		levels: [][]PathLevel{{0, S}, {S, 0}}, numa: []int{0, 0},
		want: []topology.NUMASpec{{ID: 0, PCIe: []topology.PCIeSpec{{GPUs: []int{0}}, {GPUs: []int{1}}}}},
		warn: []string{"numa: GPUs 0 and 1 report NUMA node 0 but are SYS apart"},
	}, {
		// 0-1 PHB and 1-2 PHB but 0-2 NODE: not nested classes.
		name:   "inconsistent matrix",
		levels: [][]PathLevel{{0, H, N}, {H, 0, H}, {N, H, 0}}, numa: []int{0, 0, 0},
		want: []topology.NUMASpec{{ID: 0, PCIe: []topology.PCIeSpec{{GPUs: []int{0, 1, 2}}}}},
		warn: []string{"pcie: GPUs 0 and 2 are NODE apart yet share a host bridge through GPU 1; treated as one bridge"},
	}, {
		name: "no levels", numa: []int{1, 0, 1},
		want: []topology.NUMASpec{{ID: 0, PCIe: []topology.PCIeSpec{{GPUs: []int{1}}}}, {ID: 1, PCIe: []topology.PCIeSpec{{GPUs: []int{0, 2}}}}},
		warn: []string{"pcie: PCIe path levels unknown; each NUMA node is modelled as one host bridge holding its GPUs"},
	}, {
		name: "wrong-sized matrix", numa: []int{0, 0}, levels: [][]PathLevel{{0}},
		want: []topology.NUMASpec{{ID: 0, PCIe: []topology.PCIeSpec{{GPUs: []int{0, 1}}}}},
		warn: []string{"pcie: the path-level matrix is not 2×2; PCIe structure ignored",
			"pcie: PCIe path levels unknown; each NUMA node is modelled as one host bridge holding its GPUs"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			numa, ws := InferPCIe(PCIeFacts{Levels: tc.levels, NUMA: tc.numa, Switches: tc.switches})
			got := topology.HostTemplate{NUMA: numa}.Canonical().NUMA
			want := topology.HostTemplate{NUMA: tc.want}.Canonical().NUMA
			if !reflect.DeepEqual(normTemplate(topology.HostTemplate{NUMA: got}), normTemplate(topology.HostTemplate{NUMA: want})) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			var msgs []string
			for _, w := range ws {
				msgs = append(msgs, w.String())
			}
			if !reflect.DeepEqual(msgs, tc.warn) {
				t.Errorf("warnings %q, want %q", msgs, tc.warn)
			}
		})
	}
	if numa, ws := InferPCIe(PCIeFacts{}); numa != nil || ws != nil {
		t.Errorf("no GPUs: %v %v", numa, ws)
	}
}

// genTemplate draws a random host template: 1-3 NUMA nodes, 1-3 host
// bridges each, PCIe trees up to three switches deep, 1-16 GPUs.
func genTemplate(t *rapid.T) topology.HostTemplate {
	next := 0
	var tree func(depth int) topology.PCIeSpec
	tree = func(depth int) topology.PCIeSpec {
		var p topology.PCIeSpec
		for range rapid.IntRange(0, 2).Draw(t, "gpus") {
			if next < 16 {
				p.GPUs = append(p.GPUs, next)
				next++
			}
		}
		if depth < 3 {
			for range rapid.IntRange(0, 2).Draw(t, "switches") {
				p.Switches = append(p.Switches, tree(depth+1))
			}
		}
		return p
	}
	var tmpl topology.HostTemplate
	ids := rapid.SliceOfNDistinct(rapid.IntRange(0, 7), 1, 3, rapid.ID[int]).Draw(t, "numa")
	for _, id := range ids {
		n := topology.NUMASpec{ID: id, CPUs: fmt.Sprintf("%d-%d", id*8, id*8+7)}
		for range rapid.IntRange(1, 3).Draw(t, "bridges") {
			n.PCIe = append(n.PCIe, tree(0))
		}
		tmpl.NUMA = append(tmpl.NUMA, n)
	}
	if next == 0 { // at least one GPU
		tmpl.NUMA[0].PCIe[0].GPUs = []int{0}
		next = 1
	}
	// Discovery sees NUMA nodes through their GPUs only.
	var kept []topology.NUMASpec
	for _, n := range tmpl.NUMA {
		if pcieMax(n.PCIe) >= 0 {
			kept = append(kept, n)
		}
	}
	tmpl.NUMA = kept
	tmpl.GPUs = next
	// Shuffle GPU indices so that trees are not numbered in DFS order.
	perm := rapid.Permutation(seqInts(next)).Draw(t, "perm")
	var renum func(p []topology.PCIeSpec)
	renum = func(ps []topology.PCIeSpec) {
		for i := range ps {
			for j, g := range ps[i].GPUs {
				ps[i].GPUs[j] = perm[g]
			}
			renum(ps[i].Switches)
		}
	}
	for i := range tmpl.NUMA {
		renum(tmpl.NUMA[i].PCIe)
	}
	return tmpl
}

func pcieMax(ps []topology.PCIeSpec) int {
	m := -1
	for _, p := range ps {
		for _, g := range p.GPUs {
			m = max(m, g)
		}
		m = max(m, pcieMax(p.Switches))
	}
	return m
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// InferPCIe is the inverse of Link up to what NVML can tell apart: for any
// host tree, the tree inferred from Link's levels has the same levels
// between every pair of GPUs, the same NUMA nodes with their CPUs, raises no
// warning, and is a fixed point (inferring from it gives it back).
func TestInferPCIeRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		orig := genTemplate(rt)
		facts := factsOf(t, orig)
		if !rapid.Bool().Draw(rt, "sysfs") {
			facts.Switches = nil
		}
		numa, ws := InferPCIe(facts)
		if len(ws) > 0 {
			rt.Fatalf("warnings on consistent input: %v", ws)
		}
		got := topology.HostTemplate{GPUs: orig.GPUs, NUMA: numa}.Canonical()
		if !reflect.DeepEqual(levelsOf(t, got), facts.Levels) {
			rt.Fatalf("levels differ:\norig %+v\ngot  %+v", orig.NUMA, got.NUMA)
		}
		for i, n := range got.NUMA {
			if n.ID != orig.Canonical().NUMA[i].ID || n.CPUs != orig.Canonical().NUMA[i].CPUs {
				rt.Fatalf("NUMA %d: got %d %q", i, n.ID, n.CPUs)
			}
		}
		again, _ := InferPCIe(factsOf(t, got))
		if g2 := (topology.HostTemplate{GPUs: orig.GPUs, NUMA: again}).Canonical(); !reflect.DeepEqual(normTemplate(g2), normTemplate(got)) {
			rt.Fatalf("not a fixed point:\nonce  %+v\ntwice %+v", got.NUMA, g2.NUMA)
		}
	})
}

func TestPathLevelString(t *testing.T) {
	for l, want := range map[PathLevel]string{PathInternal: "internal", PathPIX: "PIX", PathPXB: "PXB", PathPHB: "PHB", PathNODE: "NODE", PathSYS: "SYS", 7: "PathLevel(7)"} {
		if got := l.String(); got != want {
			t.Errorf("%d: %q, want %q", int(l), got, want)
		}
	}
}
