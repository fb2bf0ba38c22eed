package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/internal/nvdra"
)

// The MIG part of TestDRASideBySide: one H200 node published with
// dynamic MIG as NVIDIA's driver publishes it (internal/nvdra, the
// profiles and placements of the real h200-sxm-1 capture).
const (
	draMIGSeed = 2027
	draMIGNode = "h200-1"
	draMIGGPUs = 4
	draMIGJobs = 32 // arrivals with departures
	// draMIGMinStay and draMIGMaxStay bound a MIG job's stay, in arrivals.
	draMIGMinStay, draMIGMaxStay = 3, 12
)

// draMIGTail is the profiles that arrive after the MIG churn, with no
// departure left.
var draMIGTail = []string{"7g.141gb", "4g.71gb", "3g.71gb", "3g.71gb", "2g.35gb", "2g.35gb", "1g.35gb", "1g.18gb"}

// draMIGMix is the churn's profile mix: a profile and its weight in 100.
var draMIGMix = []struct {
	profile string
	weight  int
}{{"1g.18gb", 30}, {"1g.18gb+me", 5}, {"1g.35gb", 15}, {"2g.35gb", 20}, {"3g.71gb", 17}, {"4g.71gb", 5}, {"7g.141gb", 8}}

// draMIGJob is one MIG pod of the workload: its claim asks for one MIG
// device of class mig.nvidia.com whose profile attribute is profile.
type draMIGJob struct {
	name, profile  string
	arrive, depart int
}

// draMIGWorkload is the seeded MIG workload: the churn, then the tail.
func draMIGWorkload() []draMIGJob {
	r := rand.New(rand.NewPCG(draMIGSeed, 0))
	var jobs []draMIGJob
	for i := range draMIGJobs {
		x, p := r.IntN(100), ""
		for _, m := range draMIGMix {
			if x < m.weight {
				p = m.profile
				break
			}
			x -= m.weight
		}
		stay := draMIGMinStay + r.IntN(draMIGMaxStay-draMIGMinStay+1)
		jobs = append(jobs, draMIGJob{name: fmt.Sprintf("m%02d", i), profile: p, arrive: i, depart: i + stay})
	}
	for i, p := range draMIGTail {
		jobs = append(jobs, draMIGJob{name: fmt.Sprintf("mt%02d", i), profile: p, arrive: draMIGJobs + i, depart: 1 << 30})
	}
	return jobs
}

// draMIGOutcome is what one allocator did with the MIG workload.
type draMIGOutcome struct {
	placed, turnedAway, tailPlaced int
	waiting                        []string // profiles of the tail pods left waiting
	free                           [][]bool // free memory slices by GPU, at the end
}

// runDRAMIGCompare publishes the H200 node on the running control plane
// and runs the MIG workload, every pod in profile prof, each arrival
// decided before the next; legality is checked by checkDRAClaims (no
// counter over-consumed, so no memory slice in two MIG devices; placements
// legal per profile; no device in two claims).
func runDRAMIGCompare(ctx context.Context, t *testing.T, c kubernetes.Interface, prof string, profiles []nvdra.Profile) draMIGOutcome {
	t.Helper()
	dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: migClass}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'`}}}}}
	if _, err := c.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("device class %s: %v", migClass, err)
	}
	createNode(ctx, t, c, nodeSpec{Name: draMIGNode})
	for _, s := range (nvdra.Node{Name: draMIGNode, GPUs: draMIGGPUs, Product: "NVIDIA H200", Profiles: profiles, Slots: 8}).Slices() {
		if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("MIG slice %s: %v", s.Name, err)
		}
	}
	var o draMIGOutcome
	var waiting []draMIGJob // the tail pods not placed on arrival
	jobs := draMIGWorkload()
	placed := map[string]bool{}
	leaves := map[int][]string{}
	for _, j := range jobs {
		leaves[j.depart] = append(leaves[j.depart], j.name)
	}
	step := 0
	for _, j := range jobs {
		draLeaves(ctx, t, c, leaves, placed, &step, j.arrive, draMIGJobs)
		createCELClaim(ctx, t, c, j.name+"-gpus", migClass, fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", j.profile), nil)
		createPod(ctx, t, c, podSpec{Name: j.name, SchedulerName: prof, Labels: map[string]string{queueLabel: "batch"}, Claims: []string{j.name + "-gpus"}})
		switch ok := draDecided(ctx, t, c, prof, j.name); {
		case ok && j.arrive >= draMIGJobs:
			o.tailPlaced++
		case ok:
			placed[j.name] = true
			o.placed++
		case j.arrive >= draMIGJobs:
			waiting = append(waiting, j)
		default:
			draDepart(ctx, t, c, j.name)
			o.turnedAway++
		}
	}
	// A tail pod is waiting if it is still unbound at the end.
	for _, j := range waiting {
		p, err := c.CoreV1().Pods("default").Get(ctx, j.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Logf("%s: bound to %s after it was declared unschedulable", j.name, p.Spec.NodeName)
			o.tailPlaced++
			continue
		}
		o.waiting = append(o.waiting, j.profile)
	}
	checkDRAClaims(ctx, t, c, profiles, nil)
	o.free = draMIGFree(ctx, t, c)
	return o
}

// draMIGFree is the free memory slices of each GPU of the H200 node,
// read from the slices and the claims' allocations.
func draMIGFree(ctx context.Context, t *testing.T, c kubernetes.Interface) [][]bool {
	t.Helper()
	sl, err := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string][]resourceapi.DeviceCounterConsumption{}
	for _, s := range sl.Items {
		if s.Spec.Pool.Name == draMIGNode {
			for _, d := range s.Spec.Devices {
				uses[d.Name] = d.ConsumesCounters
			}
		}
	}
	free := make([][]bool, draMIGGPUs)
	for g := range free {
		free[g] = []bool{true, true, true, true, true, true, true, true}
	}
	cl, err := c.ResourceV1().ResourceClaims("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cl.Items {
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			if r.Pool != draMIGNode {
				continue
			}
			for _, cc := range uses[r.Device] {
				var g, k int
				if _, err := fmt.Sscanf(cc.CounterSet, "gpu-%d-counter-set", &g); err != nil || g >= draMIGGPUs {
					t.Fatalf("device %s: counter set %q", r.Device, cc.CounterSet)
				}
				for name := range cc.Counters {
					if _, err := fmt.Sscanf(name, "memory-slice-%d", &k); err == nil && k < len(free[g]) {
						free[g][k] = false
					}
				}
			}
		}
	}
	return free
}

// fits reports whether profile p has a legal placement on the free
// memory slices f of one GPU.
func fits(p nvdra.Profile, f []bool) bool {
	for _, s := range p.Starts {
		if s+p.Size <= len(f) && !slices.Contains(f[s:s+p.Size], false) {
			return true
		}
	}
	return false
}

// migStranded is the number of free memory slices at the end on GPUs
// where no waiting profile has a legal placement (0 when none waits).
func (o draMIGOutcome) migStranded(profiles []nvdra.Profile) (stranded, free int) {
	for _, f := range o.free {
		n := 0
		for _, ok := range f {
			if ok {
				n++
			}
		}
		free += n
		usable := false
		for _, w := range o.waiting {
			if k := slices.IndexFunc(profiles, func(p nvdra.Profile) bool { return p.Name == w }); k >= 0 && fits(profiles[k], f) {
				usable = true
			}
		}
		if len(o.waiting) > 0 && !usable {
			stranded += n
		}
	}
	return stranded, free
}

// renderDRAMIG renders the MIG rows and the per-GPU table of the
// generated section.
func renderDRAMIG(row func(string, any, any), kube, ours draMIGOutcome, profiles []nvdra.Profile) {
	ks, kf := kube.migStranded(profiles)
	gs, gf := ours.migStranded(profiles)
	row("MIG: legal (no shared counter over-consumed, so no memory slice in two MIG devices; every placement one its profile allows; no device in two claims)", "yes", "yes")
	row("MIG churn: pods placed", kube.placed, ours.placed)
	row("MIG churn: arrivals turned away", kube.turnedAway, ours.turnedAway)
	row("MIG tail: pods placed", kube.tailPlaced, ours.tailPlaced)
	waiting := func(o draMIGOutcome) string {
		if len(o.waiting) == 0 {
			return "0"
		}
		return fmt.Sprintf("%d (%s)", len(o.waiting), strings.Join(o.waiting, ", "))
	}
	row("MIG tail: pods waiting at the end", waiting(kube), waiting(ours))
	row("MIG: free memory slices at the end", kf, gf)
	row("**MIG slots stranded** (free memory slices at the end on GPUs where no waiting profile has a legal placement)", fmt.Sprintf("**%d**", ks), fmt.Sprintf("**%d**", gs))
}

// renderDRAMIGGPUs renders the per-GPU free slices at the end.
func renderDRAMIGGPUs(b *strings.Builder, kube, ours draMIGOutcome) {
	b.WriteString("\nMIG, per GPU of " + draMIGNode + ": the free memory slices at the end (0-7; `.` used).\n\n")
	b.WriteString("| GPU | kube, at the end | gpusched, at the end |\n|---|---|---|\n")
	cell := func(f []bool) string {
		var s strings.Builder
		for k, ok := range f {
			if ok {
				fmt.Fprintf(&s, "%d", k)
			} else {
				s.WriteByte('.')
			}
		}
		return "`" + s.String() + "`"
	}
	for g := range draMIGGPUs {
		fmt.Fprintf(b, "| gpu-%d | %s | %s |\n", g, cell(kube.free[g]), cell(ours.free[g]))
	}
}

// renderDRAMIGWorkload renders the description of the MIG workload.
func renderDRAMIGWorkload(b *strings.Builder, profiles []nvdra.Profile) {
	jobs := draMIGWorkload()
	count := map[string]int{}
	for _, j := range jobs[:draMIGJobs] {
		count[j.profile]++
	}
	var mix []string
	for _, p := range profiles {
		if count[p.Name] > 0 {
			mix = append(mix, fmt.Sprintf("%s: %d", p.Name, count[p.Name]))
		}
	}
	fmt.Fprintf(b, "**MIG** (`draMIGWorkload`, seed %d): then, on the same control plane and scheduler, the waiting pods are "+
		"deleted and one H200 node `%s` of %d GPUs is published with dynamic MIG as NVIDIA's driver publishes it "+
		"(`internal/nvdra`: per GPU a counter set of %d memory slices and its engines, the GPU and one MIG device per profile "+
		"and placement of the real `h200-sxm-1` capture, `1g.18gb+me` included, each consuming its slices). "+
		"%d pods arrive one by one, each with a claim for one device of class `mig.nvidia.com` whose CEL selector names "+
		"the profile (%s); a placed pod leaves %d to %d arrivals later (never once the tail begins), one declared "+
		"unschedulable is turned away. Then %d more arrive with no departure left (%s, in that order); those that find "+
		"no room wait (a pod is counted waiting if it is still unbound at the end). "+
		"**MIG slots stranded** is the number of memory slices free at the end on GPUs where no waiting profile has a "+
		"legal placement (a start its profile allows with all the profile's slices free): free capacity the waiting "+
		"pods cannot use; 0 when no pod waits.\n\n",
		draMIGSeed, draMIGNode, draMIGGPUs, 8, draMIGJobs, strings.Join(mix, ", "), draMIGMinStay, draMIGMaxStay,
		len(draMIGTail), strings.Join(draMIGTail, ", "))
}

// draMIGWhy explains the MIG rows.
const draMIGWhy = "**MIG.** Both allocators see the same node (one H200 holds every MIG device), so only the GPU and " +
	"the placement differ. kube's allocator takes, for a MIG claim, the first device in its order of the slices and " +
	"their devices whose counters are all still free: on a GPU, the profile's placements by start. It looks at " +
	"neither what a placement cuts nor which GPU is already partitioned, so a small profile can take the one free " +
	"aligned run a large profile needs (a 4g.71gb only at slices 0-3, a 3g.71gb at 0-3 or 4-7, a 7g.141gb only on an " +
	"empty GPU). gpusched's MIG engine puts the instance on a GPU already " +
	"partitioned, the one left with the fewest possible placements (best fit), and there at the start that leaves " +
	"the most placements of all profiles possible; it opens an unpartitioned GPU only when none fits. On one node kube's first fit by start is itself a " +
	"packing order (it fills a GPU from slice 0 before the next), so the gap is narrower than for whole GPUs, where " +
	"kube's spreading over nodes makes most of it. The test checks that gpusched strands no more MIG slots than " +
	"kube's allocator.\n\n"
