package conformance

import (
	"fmt"
	"strings"
)

// Namespace is where the scenarios' LocalQueues and Workloads live.
const Namespace = "conformance"

// Workload is one Kueue Workload of a scenario: Pods pods of GPUs GPUs
// each (nvidia.com/gpu), submitted to the LocalQueue named Queue (every
// ClusterQueue has a LocalQueue of its name).
type Workload struct {
	Name     string
	Queue    string
	Priority int32
	Pods     int
	GPUs     int
}

// Step submits workloads and finishes others, then waits until both
// systems settle.
type Step struct {
	Submit []Workload
	Finish []string
}

// Scenario is a configuration and a sequence of steps.
type Scenario struct {
	Name  string // short, used in object names
	Title string
	// What says what the scenario checks.
	What string
	// FairSharing runs Kueue's manager with fair sharing on.
	FairSharing bool
	// Config is the Kueue objects (v1beta2), without LocalQueues.
	Config string
	// Queues are the ClusterQueues (each gets a LocalQueue of its name).
	Queues []string
	Steps  []Step
	// Explained, when set, says why gpusched differs from Kueue here;
	// a difference without one fails the test.
	Explained string
}

// Observation is the state of one system after a step.
type Observation struct {
	// Admitted are the workloads holding quota, sorted.
	Admitted []string
	// Flavors maps admitted workloads to their GPU flavor (Kueue) or the
	// flavor whose model they were placed on (gpusched).
	Flavors map[string]string
	// Borrowed is, per ClusterQueue that borrows, the GPUs it borrows.
	Borrowed map[string]int64
	// Preempted lists the preemptions so far, in order, as workload
	// names.
	Preempted []string
	// Never lists workloads the system says can never be admitted
	// (gpusched refuses them at submission; Kueue reports them
	// inadmissible).
	Never []string
}

// String renders an observation on one line.
func (o Observation) String() string {
	var parts []string
	adm := make([]string, 0, len(o.Admitted))
	for _, w := range o.Admitted {
		if f := o.Flavors[w]; f != "" {
			w += "@" + f
		}
		adm = append(adm, w)
	}
	parts = append(parts, "admitted: "+list(adm))
	var b []string
	for _, q := range sortedKeys(o.Borrowed) {
		if o.Borrowed[q] != 0 {
			b = append(b, fmt.Sprintf("%s %d", q, o.Borrowed[q]))
		}
	}
	parts = append(parts, "borrowing: "+list(b))
	parts = append(parts, "preempted: "+list(o.Preempted))
	return strings.Join(parts, "; ")
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}

// flavor, cq and cohort write Kueue objects.
func flavor(name, model string) string {
	s := "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: " + name + "\n"
	if model != "" {
		s += "spec:\n  nodeLabels:\n    nvidia.com/gpu.product: " + model + "\n"
	}
	return s + "---\n"
}

// quota is one flavor's GPU quota; negative limits are absent.
type quota struct {
	flavor                string
	nominal, borrow, lend int
}

func q(flavor string, nominal int) quota { return quota{flavor, nominal, -1, -1} }

func groups(qs []quota) string {
	if len(qs) == 0 {
		return ""
	}
	s := "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"
	for _, x := range qs {
		s += fmt.Sprintf("    - name: %s\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: %d\n", x.flavor, x.nominal)
		if x.borrow >= 0 {
			s += fmt.Sprintf("        borrowingLimit: %d\n", x.borrow)
		}
		if x.lend >= 0 {
			s += fmt.Sprintf("        lendingLimit: %d\n", x.lend)
		}
	}
	return s
}

// cqOpts are a ClusterQueue's optional settings.
type cqOpts struct {
	cohort, strategy, reclaim, within string
	weight                            string
}

func cq(name string, o cqOpts, qs ...quota) string {
	s := "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: " + name + "\nspec:\n  namespaceSelector: {}\n"
	if o.cohort != "" {
		s += "  cohortName: " + o.cohort + "\n"
	}
	if o.strategy != "" {
		s += "  queueingStrategy: " + o.strategy + "\n"
	}
	if o.reclaim != "" || o.within != "" {
		s += "  preemption:\n"
		if o.reclaim != "" {
			s += "    reclaimWithinCohort: " + o.reclaim + "\n"
		}
		if o.within != "" {
			s += "    withinClusterQueue: " + o.within + "\n"
		}
	}
	if o.weight != "" {
		s += "  fairSharing:\n    weight: \"" + o.weight + "\"\n"
	}
	return s + groups(qs) + "---\n"
}

func cohort(name, parent string, qs ...quota) string {
	s := "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: " + name + "\nspec:\n"
	if parent != "" {
		s += "  parentName: " + parent + "\n"
	}
	if len(qs) == 0 && parent == "" {
		s += "  {}\n"
	}
	return s + groups(qs) + "---\n"
}

// LocalQueues returns the LocalQueue objects of a scenario.
func (s *Scenario) LocalQueues() string {
	var b strings.Builder
	for _, name := range s.Queues {
		fmt.Fprintf(&b, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  clusterQueue: %s\n---\n", name, Namespace, name)
	}
	return b.String()
}

func wl(name, queue string, pods, gpus int) Workload {
	return Workload{Name: name, Queue: queue, Pods: pods, GPUs: gpus}
}

func pwl(name, queue string, prio int32, pods, gpus int) Workload {
	return Workload{Name: name, Queue: queue, Priority: prio, Pods: pods, GPUs: gpus}
}

func submit(ws ...Workload) Step  { return Step{Submit: ws} }
func finish(names ...string) Step { return Step{Finish: names} }

// fairSharingOn is the Kueue manager Configuration that turns fair
// sharing on; the importer reads it, the harness passes it to the manager
// as its -fair-sharing flag.
const fairSharingOn = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
---
`

// Scenarios are the conformance scenarios, each with its own queues and
// cohorts (names are prefixed with the scenario's name, so they can share
// one apiserver).
func Scenarios() []Scenario {
	gpu := flavor("gpu", "")
	return []Scenario{
		{
			Name: "nominal", Title: "Nominal quota only",
			What:   "a ClusterQueue in no cohort admits up to its nominal quota, and the next workload when one finishes",
			Config: gpu + cq("nominal-a", cqOpts{}, q("gpu", 8)),
			Queues: []string{"nominal-a"},
			Steps: []Step{
				submit(wl("nominal-w1", "nominal-a", 4, 1)),
				submit(wl("nominal-w2", "nominal-a", 4, 1)),
				submit(wl("nominal-w3", "nominal-a", 2, 1)),
				finish("nominal-w1"),
			},
		},
		{
			Name: "borrow", Title: "Borrowing in a cohort",
			What: "a ClusterQueue borrows the unused quota of another in its cohort; without reclaim the lender waits",
			Config: gpu + cq("borrow-a", cqOpts{cohort: "borrow"}, q("gpu", 4)) +
				cq("borrow-b", cqOpts{cohort: "borrow"}, q("gpu", 4)),
			Queues: []string{"borrow-a", "borrow-b"},
			Steps: []Step{
				submit(wl("borrow-a1", "borrow-a", 6, 1)),
				submit(wl("borrow-b1", "borrow-b", 2, 1)),
				submit(wl("borrow-b2", "borrow-b", 2, 1)),
				finish("borrow-a1"),
			},
		},
		{
			Name: "blimit", Title: "Borrowing limit",
			What: "borrowingLimit caps what a ClusterQueue borrows",
			Config: gpu + cq("blimit-a", cqOpts{cohort: "blimit"}, quota{"gpu", 4, 1, -1}) +
				cq("blimit-b", cqOpts{cohort: "blimit"}, q("gpu", 4)),
			Queues: []string{"blimit-a", "blimit-b"},
			Steps: []Step{
				submit(wl("blimit-a1", "blimit-a", 6, 1)),
				submit(wl("blimit-a2", "blimit-a", 5, 1)),
			},
		},
		{
			Name: "lend", Title: "Lending limit",
			What: "lendingLimit keeps part of a ClusterQueue's quota from others",
			Config: gpu + cq("lend-a", cqOpts{cohort: "lend"}, q("gpu", 4)) +
				cq("lend-b", cqOpts{cohort: "lend"}, quota{"gpu", 4, -1, 1}),
			Queues: []string{"lend-a", "lend-b"},
			Steps: []Step{
				submit(wl("lend-a1", "lend-a", 6, 1)),
				submit(wl("lend-a2", "lend-a", 5, 1)),
				submit(wl("lend-b1", "lend-b", 3, 1)),
			},
		},
		{
			Name: "hier", Title: "Hierarchical cohorts",
			What: "a cohort's own quota and a child cohort: a ClusterQueue borrows through its cohort from the parent's quota and from a sibling subtree",
			Config: gpu + cohort("hier-org", "", q("gpu", 4)) + cohort("hier-research", "hier-org") +
				cq("hier-a", cqOpts{cohort: "hier-research"}, q("gpu", 4)) +
				cq("hier-b", cqOpts{cohort: "hier-org"}, q("gpu", 4)),
			Queues: []string{"hier-a", "hier-b"},
			Steps: []Step{
				submit(wl("hier-a1", "hier-a", 10, 1)),
				submit(wl("hier-b1", "hier-b", 2, 1)),
				submit(wl("hier-b2", "hier-b", 2, 1)),
			},
		},
		{
			Name: "reclaim", Title: "Reclaim within the cohort",
			What: "a ClusterQueue below its nominal quota preempts a borrower (reclaimWithinCohort: Any)",
			Config: gpu + cq("reclaim-a", cqOpts{cohort: "reclaim", reclaim: "Any"}, q("gpu", 4)) +
				cq("reclaim-b", cqOpts{cohort: "reclaim", reclaim: "Any"}, q("gpu", 4)),
			Queues: []string{"reclaim-a", "reclaim-b"},
			Steps: []Step{
				submit(wl("reclaim-a1", "reclaim-a", 4, 1)),
				submit(wl("reclaim-a2", "reclaim-a", 4, 1)),
				submit(wl("reclaim-b1", "reclaim-b", 4, 1)),
			},
		},
		{
			Name: "fair", Title: "Fair-sharing preemption", FairSharing: true,
			What: "with fair sharing, queues without a guarantee of their own share the cohort's quota: a newcomer preempts the queue with the largest share",
			Config: fairSharingOn + gpu + cohort("fair", "", q("gpu", 12)) +
				cq("fair-a", cqOpts{cohort: "fair", reclaim: "Any", within: "LowerPriority"}, q("gpu", 0)) +
				cq("fair-b", cqOpts{cohort: "fair", reclaim: "Any", within: "LowerPriority"}, q("gpu", 0)) +
				cq("fair-c", cqOpts{cohort: "fair", reclaim: "Any", within: "LowerPriority"}, q("gpu", 0)),
			Queues: []string{"fair-a", "fair-b", "fair-c"},
			Steps: []Step{
				submit(wl("fair-a1", "fair-a", 4, 1)),
				submit(wl("fair-a2", "fair-a", 4, 1)),
				submit(wl("fair-a3", "fair-a", 4, 1)),
				submit(wl("fair-b1", "fair-b", 4, 1)),
				submit(wl("fair-c1", "fair-c", 4, 1)),
			},
		},
		{
			Name: "prio", Title: "Priority within a ClusterQueue",
			What:   "withinClusterQueue: LowerPriority preempts a lower-priority workload of the same queue",
			Config: gpu + cq("prio-a", cqOpts{within: "LowerPriority"}, q("gpu", 4)),
			Queues: []string{"prio-a"},
			Steps: []Step{
				submit(pwl("prio-low", "prio-a", 0, 4, 1)),
				submit(pwl("prio-high", "prio-a", 100, 4, 1)),
			},
		},
		{
			Name: "order", Title: "Priority order of waiting workloads",
			What:   "when quota frees up, the higher-priority waiting workload is admitted first, whatever the submission order",
			Config: gpu + cq("order-a", cqOpts{}, q("gpu", 4)),
			Queues: []string{"order-a"},
			Steps: []Step{
				submit(wl("order-w0", "order-a", 4, 1)),
				submit(pwl("order-low", "order-a", 0, 4, 1)),
				submit(pwl("order-high", "order-a", 10, 4, 1)),
				finish("order-w0"),
			},
		},
		{
			Name: "befifo", Title: "BestEffortFIFO",
			What:   "a workload that does not fit does not block a smaller one behind it",
			Config: gpu + cq("befifo-a", cqOpts{strategy: "BestEffortFIFO"}, q("gpu", 6)),
			Queues: []string{"befifo-a"},
			Steps: []Step{
				submit(wl("befifo-w1", "befifo-a", 4, 1)),
				submit(wl("befifo-w2", "befifo-a", 4, 1)),
				submit(wl("befifo-w3", "befifo-a", 2, 1)),
			},
		},
		{
			Name: "strict", Title: "StrictFIFO",
			What:   "the head workload that does not fit blocks the smaller one behind it",
			Config: gpu + cq("strict-a", cqOpts{strategy: "StrictFIFO"}, q("gpu", 6)),
			Queues: []string{"strict-a"},
			Steps: []Step{
				submit(wl("strict-w1", "strict-a", 4, 1)),
				submit(wl("strict-w2", "strict-a", 4, 1)),
				submit(wl("strict-w3", "strict-a", 2, 1)),
				finish("strict-w1"),
			},
		},
		{
			Name: "flavors", Title: "Several flavors (GPU models)",
			What: "a ClusterQueue with quota on two GPU models fills the first flavor, then the second",
			Config: flavor("flavors-h100", "NVIDIA-H100-80GB-HBM3") + flavor("flavors-a100", "NVIDIA-A100-SXM4-80GB") +
				cq("flavors-a", cqOpts{}, q("flavors-h100", 4), q("flavors-a100", 4)),
			Queues: []string{"flavors-a"},
			Explained: "Kueue tries a ClusterQueue's flavors in the order they are listed (h100 first), while gpusched treats the " +
				"models a job accepts as equal and lets its placer choose by fit (here the first hosts of the cluster, the A100s). " +
				"The admissions and the per-model quota accounting agree at every step; only which model each workload gets is swapped.",
			Steps: []Step{
				submit(wl("flavors-w1", "flavors-a", 4, 1)),
				submit(wl("flavors-w2", "flavors-a", 2, 1)),
				submit(wl("flavors-w3", "flavors-a", 4, 1)),
				finish("flavors-w1"),
			},
		},
		{
			Name: "huge", Title: "A workload larger than any quota",
			What: "a workload asking for more than the cohort could ever lend is never admitted and blocks nobody",
			Config: gpu + cq("huge-a", cqOpts{cohort: "huge"}, q("gpu", 4)) +
				cq("huge-b", cqOpts{cohort: "huge"}, q("gpu", 4)),
			Queues: []string{"huge-a", "huge-b"},
			Steps: []Step{
				submit(wl("huge-w1", "huge-a", 16, 1)),
				submit(wl("huge-w2", "huge-a", 2, 1)),
			},
		},
	}
}
