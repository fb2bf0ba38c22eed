package slurm_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/importers/slurm"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking):\n%s", p, got)
	}
}

// TestImportRealisticSite imports testdata/site: 33 nodes in five shapes
// (DGX H100 with an NVSwitch, A100 with NVLink bridge pairs, L40S without
// gres Cores, a node with two GPU types, CPU nodes), a three-level tree
// with a leaf directly under the core, gres.conf with Cores and Links, and
// associations. The cluster file and the warnings are golden files.
func TestImportRealisticSite(t *testing.T) {
	s, err := slurm.ReadDir("testdata/site")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := topology.Encode(&b, sp, topology.FormatYAML); err != nil {
		t.Fatal(err)
	}
	golden(t, "site.golden.yaml", b.Bytes())
	c, err := s.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	// 16 × 8 h100 + 8 × 8 a100 + 4 × 4 l40s + 4 (mixed01) = 212 GPUs.
	if got := c.String(); !strings.HasPrefix(got, "cluster prod: 33 hosts, 212 GPUs") {
		t.Errorf("cluster: %s", got)
	}
	// dgx001's GPUs 0 and 7 share the NVSwitch (Links 18); a100-01's GPUs 0
	// and 1 share a bridge, 0 and 2 do not (Links 0) but share a NUMA node.
	for _, tc := range []struct {
		host   string
		a, b   int
		kind   string
		nearer string
	}{
		{"dgx001", 0, 7, "NV", ""},
		{"a100-01", 0, 1, "NV", ""},
		{"a100-01", 0, 2, "", "NV"},
	} {
		h, ok := c.HostByName(tc.host)
		if !ok {
			t.Fatalf("no host %s", tc.host)
		}
		g, _ := c.HostGPUs(h)
		k := c.Link(g+topology.GPUID(tc.a), g+topology.GPUID(tc.b)).Kind.String()
		if tc.kind != "" && k != tc.kind {
			t.Errorf("%s gpu%d-gpu%d: %s, want %s", tc.host, tc.a, tc.b, k, tc.kind)
		}
		if tc.nearer != "" && k == tc.nearer {
			t.Errorf("%s gpu%d-gpu%d: %s, want not %s", tc.host, tc.a, tc.b, k, tc.nearer)
		}
	}
	var w strings.Builder
	p := s.Preset()
	for _, x := range s.Warnings {
		w.WriteString(x.String() + "\n")
	}
	golden(t, "site.warnings.golden", []byte(w.String()))

	// The preset: topology placement, Fair Tree over the associations with
	// the site's half-life, aging at PriorityMaxAge / PriorityWeightAge =
	// 7 days / 1000 = 10m4.8s per point, backfill, DefaultTime 4 h.
	if p.Placer != "topology" || p.Queues.Fairness.Policy != queue.FairTree || p.Queues.Fairness.HalfLife != 14*24*time.Hour ||
		p.DefaultRuntime != 4*time.Hour || p.SchedInterval != time.Minute || p.BfWindow != 48*time.Hour {
		t.Errorf("preset: %+v", p)
	}
	leaves := slurm.Leaves(p.Queues)
	if strings.Join(leaves, " ") != "root:root vision:alice vision:bob nlp:carol prodml:svc-train" {
		t.Errorf("leaves %v", leaves)
	}
	pol := p.Queues.Root.Children[1].Children[0].Children[1].Policy // vision:bob
	if pol.Ordering != queue.PriorityAging || pol.AgingInterval != 604800*time.Millisecond || !pol.Backfill {
		t.Errorf("vision:bob policy %+v", pol)
	}
	cfg, err := p.Config(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gpusched.New(cfg); err != nil {
		t.Fatalf("the preset does not build a Scheduler: %v", err)
	}
}

// TestAssocTreeIndentation: the tree option's indented Account column gives
// the same queue tree as the ParentName column.
func TestAssocTreeIndentation(t *testing.T) {
	const withParent = `Account|User|Par Name|Share
root|||1
research||root|60
vision||research|2
vision|alice||1
prodml||root|40
prodml|svc||1
`
	const tree = `Account|User|Share
root||1
 research||60
  vision||2
  vision|alice|1
 prodml||40
 prodml|svc|1
`
	a, _, err := slurm.ParseAssoc([]byte(withParent), "p.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := slurm.ParseAssoc([]byte(tree), "t.txt")
	if err != nil {
		t.Fatal(err)
	}
	var w []slurm.Warning
	qa, qb := a.Queues(0, &w), b.Queues(0, &w)
	var ea, eb bytes.Buffer
	if err := encodeYAML(&ea, qa); err != nil {
		t.Fatal(err)
	}
	if err := encodeYAML(&eb, qb); err != nil {
		t.Fatal(err)
	}
	if ea.String() != eb.String() {
		t.Errorf("ParentName:\n%s\ntree:\n%s", ea.String(), eb.String())
	}
	if got := strings.Join(slurm.Leaves(qa), " "); got != "vision:alice prodml:svc" {
		t.Errorf("leaves %s", got)
	}
}

// TestTopologyBlockAndYAML: the block plugin's topology.conf and Slurm's
// topology.yaml (tree and block) import to the same shapes.
func TestTopologyBlockAndYAML(t *testing.T) {
	conf := []byte("NodeName=n[01-16] CPUs=8 Gres=gpu:4\nTopologyPlugin=topology/block\n")
	c, _, err := slurm.ParseConf(conf, "slurm.conf")
	if err != nil {
		t.Fatal(err)
	}
	block, w, err := slurm.ParseTopology([]byte("BlockName=b1 Nodes=n[01-08]\nBlockName=b2 Nodes=n[09-16]\nBlockSizes=8,16\n"), "topology.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 1 || !strings.Contains(w[0].String(), "aggregated block sizes [16]") {
		t.Errorf("warnings %v", w)
	}
	yblock, _, err := slurm.ParseTopologyYAML([]byte(`
- topology: blocks
  cluster_default: true
  block:
    block_sizes: [8, 16]
    blocks:
      - block: b1
        nodes: n[01-08]
      - block: b2
        nodes: n[09-16]
- topology: flat
  flat: true
`), "topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	specOf := func(tp *slurm.Topology) string {
		s := &slurm.Site{Conf: c, Topology: tp}
		sp, err := s.Spec()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := topology.Encode(&b, sp, topology.FormatYAML); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	a, b := specOf(block), specOf(yblock)
	if a != b || !strings.Contains(a, "level: block") {
		t.Errorf("block conf:\n%s\nblock yaml:\n%s", a, b)
	}
	tree, _, err := slurm.ParseTopology([]byte("SwitchName=s1 Nodes=n[01-08]\nSwitchName=s2 Nodes=n[09-16]\nSwitchName=top Switches=s[1-2]\n"), "topology.conf")
	if err != nil {
		t.Fatal(err)
	}
	ytree, _, err := slurm.ParseTopologyYAML([]byte(`
- topology: t
  tree:
    switches:
      - switch: top
        children: s[1-2]
      - switch: s1
        nodes: n[01-08]
      - switch: s2
        nodes: n[09-16]
`), "topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := specOf(tree), specOf(ytree); a != b || !strings.Contains(a, "parent: top") {
		t.Errorf("tree conf:\n%s\ntree yaml:\n%s", a, b)
	}
}

// TestDecayHalfLifeZero: PriorityDecayHalfLife=0 is Slurm's "usage never
// decays"; the preset's Fair Tree keeps usage forever (queue
// Fairness.NoDecay) rather than taking 0 for the 7-day default. Unset, or
// any other value, decays. Found while building the conformance harness's
// Fair Tree scenario.
func TestDecayHalfLifeZero(t *testing.T) {
	const assoc = "Account|User|Par Name|Share\nroot|||1\na||root|1\na|u||1\n"
	for _, tc := range []struct {
		line    string
		noDecay bool
	}{{"PriorityDecayHalfLife=0", true}, {"PriorityDecayHalfLife=14-0", false}, {"", false}} {
		conf := "ClusterName=c\nPriorityType=priority/multifactor\nPriorityWeightFairshare=1000\n" + tc.line + "\n" +
			"NodeName=n1 CPUs=8 RealMemory=1000 Gres=gpu:1\nPartitionName=p Nodes=n1 Default=YES\n"
		c, _, err := slurm.ParseConf([]byte(conf), "slurm.conf")
		if err != nil {
			t.Fatal(err)
		}
		a, _, err := slurm.ParseAssoc([]byte(assoc), "assoc.txt")
		if err != nil {
			t.Fatal(err)
		}
		p := (&slurm.Site{Conf: c, Assoc: a}).Preset()
		if p.Queues.Fairness.NoDecay != tc.noDecay || p.Queues.Fairness.Policy != queue.FairTree {
			t.Errorf("%q: fairness %+v, want NoDecay %v under FairTree", tc.line, p.Queues.Fairness, tc.noDecay)
		}
	}
}
