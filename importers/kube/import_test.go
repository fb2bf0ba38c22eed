package kube

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// render is what a golden file holds: the queue tree, the preemption
// settings, the levels and the mapping report.
func render(im *Import) string {
	var b strings.Builder
	fmt.Fprintf(&b, "system: %s\n", im.System)
	q, _ := yaml.Marshal(im.Queues)
	b.WriteString("queues:\n")
	for _, l := range strings.Split(strings.TrimRight(string(q), "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	fmt.Fprintf(&b, "preemption: lowerPriority=%d reclaim=%d fairSharing=%v\n", im.Preemption.LowerPriority, im.Preemption.Reclaim, im.Preemption.FairSharing)
	fmt.Fprintf(&b, "levels: %v\n", im.Levels)
	fmt.Fprintf(&b, "leafModels: %v\n", im.LeafModels)
	fmt.Fprintf(&b, "localQueues: %v\npriorityClasses: %v\n", im.LocalQueues, im.PriorityClasses)
	b.WriteString("report:\n")
	for _, n := range im.Notes {
		b.WriteString("  " + n.String() + "\n")
	}
	return b.String()
}

func TestImportGolden(t *testing.T) {
	for _, dir := range []string{
		"kueue/docs-single", "kueue/gpu-cohorts", "kueue/fair",
		"volcano/docs", "volcano/hierarchy",
		"kai/docs", "kai/departments",
	} {
		t.Run(dir, func(t *testing.T) {
			im, err := ReadDir(filepath.Join("testdata", dir))
			if err != nil {
				t.Fatal(err)
			}
			got := render(im)
			golden := filepath.Join("testdata", dir+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("import of %s changed (run with -update to accept):\n%s", dir, got)
			}
		})
	}
}

// find returns the node of the tree with this name.
func find(n *queue.Node, name string) *queue.Node {
	if n.Name == name {
		return n
	}
	for i := range n.Children {
		if f := find(&n.Children[i], name); f != nil {
			return f
		}
	}
	return nil
}

func quotaOf(t *testing.T, n *queue.Node, res string) queue.Quota {
	t.Helper()
	for _, q := range n.Quotas {
		if q.Resource == res {
			return q
		}
	}
	t.Fatalf("queue %s has no %s quota", n.Name, res)
	return queue.Quota{}
}

func TestKueueSemantics(t *testing.T) {
	im, err := ReadDir("testdata/kueue/gpu-cohorts")
	if err != nil {
		t.Fatal(err)
	}
	root := &im.Queues.Root
	h100 := "gpu/NVIDIA-H100-80GB-HBM3"
	// org = own 8 + research (team-a 16 + team-b 8) + inference 0 = 32.
	if q := quotaOf(t, find(root, "org"), h100); q.Nominal != 32 {
		t.Errorf("org H100 nominal %d, want 32 (8 own + 24 of its members)", q.Nominal)
	}
	a := find(root, "team-a")
	if q := quotaOf(t, a, h100); q.Nominal != 16 || q.BorrowingLimit == nil || *q.BorrowingLimit != 8 {
		t.Errorf("team-a H100 = %+v, want nominal 16 borrowing ≤ 8", q)
	}
	if a.Policy.Ordering != queue.StrictFIFO {
		t.Errorf("team-a ordering %q, want strict-fifo", a.Policy.Ordering)
	}
	// 256 + 128 cores over two flavors.
	if q := quotaOf(t, a, "cpu"); q.Nominal != 384 {
		t.Errorf("team-a cpu %d, want 384", q.Nominal)
	}
	b := find(root, "team-b")
	if q := quotaOf(t, b, h100); q.LendingLimit == nil || *q.LendingLimit != 4 {
		t.Errorf("team-b H100 = %+v, want lending ≤ 4", q)
	}
	// team-b has no A100 flavor: Kueue admits none of it, nor borrows it.
	if q := quotaOf(t, b, "gpu/NVIDIA-A100-SXM4-80GB"); q.Nominal != 0 || q.BorrowingLimit == nil || *q.BorrowingLimit != 0 {
		t.Errorf("team-b A100 = %+v, want nominal 0, borrowing ≤ 0", q)
	}
	if find(root, "research").Weight != 2 {
		t.Errorf("research weight %v, want 2", find(root, "research").Weight)
	}
	if im.Preemption.LowerPriority != preempt.WithinQueue || im.Preemption.Reclaim != preempt.ReclaimAny {
		t.Errorf("preemption %+v, want the majority LowerPriority / Any", im.Preemption)
	}
	if len(im.Levels) != 2 || im.Levels[0].NodeLabel != "cloud.provider.com/topology-block" {
		t.Errorf("levels %v, want block, rack (hostname dropped)", im.Levels)
	}
	if got := im.LeafFor("team-a", "main"); got != "team-a" {
		t.Errorf("LocalQueue team-a/main → %q", got)
	}
	if len(im.PriorityClasses) != 1 || im.PriorityClasses[0].Value != 1000 {
		t.Errorf("priority classes %v", im.PriorityClasses)
	}

	fair, err := ReadDir("testdata/kueue/fair")
	if err != nil {
		t.Fatal(err)
	}
	if fair.Queues.Fairness.Policy != queue.Borrowed || !fair.Preemption.FairSharing {
		t.Errorf("fair sharing not mapped: %v %+v", fair.Queues.Fairness, fair.Preemption)
	}
	if w := find(&fair.Queues.Root, "team-a").Weight; w != 3 {
		t.Errorf("team-a weight %v, want 3", w)
	}
	if !strings.Contains(fair.Report(), "waitForPodsReady: manager setting not modelled") {
		t.Errorf("report does not list waitForPodsReady:\n%s", fair.Report())
	}
}

func TestVolcanoAndKAISemantics(t *testing.T) {
	v, err := ReadDir("testdata/volcano/hierarchy")
	if err != nil {
		t.Fatal(err)
	}
	vision := find(&v.Queues.Root, "vision")
	// deserved 16, guarantee 8 never lent, capability 32.
	if q := quotaOf(t, vision, "gpu"); q.Nominal != 16 || *q.LendingLimit != 8 || *q.Max != 32 {
		t.Errorf("vision gpu %+v, want nominal 16, lend ≤ 8, max 32", q)
	}
	if len(v.Levels) != 2 || v.Levels[0].Name != "tier2" || len(v.HyperNodes) != 3 {
		t.Errorf("levels %v hypernodes %d", v.Levels, len(v.HyperNodes))
	}
	k, err := ReadDir("testdata/kai/departments")
	if err != nil {
		t.Fatal(err)
	}
	r := find(&k.Queues.Root, "research")
	if q := quotaOf(t, r, "gpu"); q.Nominal != 24 || *q.Max != 32 || r.Weight != 2 {
		t.Errorf("research gpu %+v weight %v", q, r.Weight)
	}
	// 96000 millicores = 96 cores; 10^6 MB = 931.3 GiB, rounded down.
	if q := quotaOf(t, r, "cpu"); q.Nominal != 96 {
		t.Errorf("research cpu %d, want 96", q.Nominal)
	}
	if q := quotaOf(t, r, "memory"); q.Nominal != 931 {
		t.Errorf("research memory %d, want 931", q.Nominal)
	}
	if len(k.Levels) != 2 {
		t.Errorf("KAI levels %v", k.Levels)
	}
}

func TestBadInput(t *testing.T) {
	cq := func(spec string) string {
		return "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n" +
			"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: a}\nspec:\n" + spec
	}
	for _, c := range []struct {
		name, data string
		want       string // the error must contain it
	}{
		{"not yaml", "a: [", "q.yaml: document 1"},
		{"not an object", "- 1\n- 2\n", "q.yaml:1: document 1: not a Kubernetes object"},
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", "kind: missing"},
		{"no name", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nspec: {}\n", "metadata.name: missing"},
		{"bad quota", cq("  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: f\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: eight\n"),
			"q.yaml:15: document 2 (ClusterQueue/a): spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: bad quantity \"eight\""},
		{"negative quota", cq("  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n      - name: cpu\n        nominalQuota: \"-1\"\n"),
			"resources[0].nominalQuota: negative quantity"},
		{"lending above nominal", cq("  cohortName: c\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n      - name: cpu\n        nominalQuota: 2\n        lendingLimit: 3\n"),
			"resources[0].lendingLimit: lending limit 3 above nominal quota 2"},
		{"uncovered resource", cq("  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n      - name: memory\n        nominalQuota: 2Gi\n"),
			"resources[0].name: resource \"memory\" is not in the group's coveredResources"},
		{"bad strategy", cq("  queueingStrategy: LIFO\n"), "document 2 (ClusterQueue/a): spec.queueingStrategy: unknown strategy \"LIFO\""},
		{"wrong type", cq("  resourceGroups: 3\n"), "document 2 (ClusterQueue/a): spec: "},
		{"cohort cycle", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x}\nspec: {parentName: y}\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: y}\nspec: {parentName: x}\n---\n" + cq("  cohortName: x\n"),
			"is its own ancestor"},
		{"duplicate queue", cq("  {}\n") + "\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: a}\n", "a ClusterQueue named \"a\" is defined twice"},
		{"two systems", cq("  {}\n") + "\n---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: v}\n", "queues of kueue and volcano"},
		{"no queues", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "no queues"},
		{"volcano bad deserved", "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: v}\nspec:\n  deserved: {cpu: lots}\n",
			"document 1 (Queue/v): spec.deserved.cpu: bad quantity \"lots\""},
		{"volcano unknown parent", "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: v}\nspec: {parent: nope}\n", "spec.parent: parent queue \"nope\" not given"},
		{"hypernode tier", "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: h}\nspec: {tier: 0}\n", "(HyperNode/h): spec.tier: tier 0"},
		{"hypernode regexp", "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: h}\nspec:\n  tier: 1\n  members:\n  - type: Node\n    selector: {regexMatch: {pattern: \"(\"}}\n",
			"spec.members[0].selector.regexMatch.pattern"},
		{"kai bad weight", "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: k}\nspec:\n  resources:\n    gpu: {quota: 1, overQuotaWeight: -2}\n", "spec.resources.gpu.overQuotaWeight"},
		{"kai bad number", "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: k}\nspec:\n  resources:\n    gpu: {quota: many}\n", "document 1 (Queue/k): spec: "},
		{"list item", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: kueue.x-k8s.io/v1beta2\n  kind: ClusterQueue\n  metadata: {name: a}\n  spec: {queueingStrategy: X}\n",
			"(ClusterQueue/a [List item 0]): spec.queueingStrategy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read([]File{{Name: "q.yaml", Data: []byte(c.data)}})
			if err == nil {
				t.Fatalf("no error; want one containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\ndoes not contain %q", err, c.want)
			}
			var e *Error
			if strings.Contains(c.want, "document") && !errors.As(err, &e) {
				t.Errorf("error %T is not an *Error", err)
			}
		})
	}
}

func TestUnknownFieldsReported(t *testing.T) {
	data := `apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  futureKnob: 3
  resourceGroups:
  - coveredResources: [cpu]
    shinyNewField: x
    flavors:
    - name: f
      resources:
      - name: cpu
        nominalQuota: 4
extra: 1
`
	im, err := Read([]File{{Name: "cq.yaml", Data: []byte(data)}})
	if err != nil {
		t.Fatal(err)
	}
	rep := im.Report()
	for _, want := range []string{
		"ignored: cq.yaml:5 (ClusterQueue/a) spec.futureKnob: not understood",
		"ignored: cq.yaml:8 (ClusterQueue/a) spec.resourceGroups[0].shinyNewField: not understood",
		"ignored: cq.yaml:14 (ClusterQueue/a) extra: not understood",
		"ResourceFlavor \"f\" not given",
	} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
}

func TestQuantity(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // as a rational
		bad  bool
	}{
		{"8", "8/1", false}, {"500m", "1/2", false}, {"64Gi", "68719476736/1", false}, {"1.5", "3/2", false},
		{"1e3", "1000/1", false}, {"2k", "2000/1", false}, {"", "", true}, {"-1", "", true}, {"1e999999", "", true},
		{"0x10", "", true}, {"1/2", "", true}, {"Gi", "", true},
	} {
		r, err := parseQuantity(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: no error", c.in)
			}
			continue
		}
		if err != nil || r.String() != c.want {
			t.Errorf("%q = %v, %v; want %s", c.in, r, err, c.want)
		}
	}
}
