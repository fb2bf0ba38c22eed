package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// The fake cluster's network: 16 nodes (128 GPUs) under a ToR switch, 16
// ToRs (256 nodes, 2,048 GPUs) in a block.
const (
	nodesPerRack  = 16
	nodesPerBlock = 256
)

// phaseResult is what phaseRun saw of one batch of pods.
type phaseResult struct {
	start, lastCreated, lastBind time.Time
	ttb                          []time.Duration // each bound pod's creation to binding
	// evicted counts pods bound before this phase that were deleted
	// during it (preemption's victims).
	evicted int
}

func (r phaseResult) rate() float64 {
	if len(r.ttb) == 0 {
		return 0
	}
	return float64(len(r.ttb)) / r.lastBind.Sub(r.start).Seconds()
}

// phaseRun creates pods in ns (32 at a time) and waits until every one is
// bound, or until all are created and either none was bound for
// GPUSCHED_SCALE_IDLE_SECONDS (default 30: a loaded machine may pause that
// long) or every unbound one is marked Unschedulable by kube-scheduler
// and none was bound for 3 s.
func phaseRun(ctx context.Context, b *testing.B, c kubernetes.Interface, ns string, pods []podSpec) phaseResult {
	idleFor := time.Duration(scaleEnv("GPUSCHED_SCALE_IDLE_SECONDS", 30)) * time.Second
	const quiet = 3 * time.Second
	pl, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	before := map[string]bool{}
	for _, p := range pl.Items {
		before[p.Name] = p.Spec.NodeName != ""
	}
	rv := pl.ResourceVersion
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { w.Stop() }()
	var r phaseResult
	r.start = time.Now()
	go parallel(ctx, b, len(pods), func(i int) { createPod(ctx, b, c, pods[i]) })
	created := map[string]time.Time{}
	bound := map[string]bool{}
	unsched := map[string]bool{}
	lastProgress := time.Now()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for len(bound) < len(pods) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The apiserver ends watches now and then: resume.
				if w, err = c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv}); err != nil {
					b.Fatal(err)
				}
				continue
			}
			p, isPod := ev.Object.(*v1.Pod)
			if !isPod {
				continue
			}
			rv = p.ResourceVersion
			now := time.Now()
			if _, old := before[p.Name]; old {
				if ev.Type == watch.Deleted && before[p.Name] {
					r.evicted++
				}
				continue
			}
			if ev.Type == watch.Added {
				created[p.Name] = now
				if len(created) == len(pods) {
					r.lastCreated = now
				}
			}
			unsched[p.Name] = unschedulable(p)
			if p.Spec.NodeName != "" && !bound[p.Name] {
				bound[p.Name] = true
				r.ttb = append(r.ttb, now.Sub(created[p.Name]))
				r.lastBind, lastProgress = now, now
			}
		case <-tick.C:
			if len(created) < len(pods) {
				lastProgress = time.Now()
				continue
			}
			if time.Since(lastProgress) >= idleFor {
				return r
			}
			if time.Since(lastProgress) >= quiet && allUnschedulable(unsched, bound) {
				return r
			}
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		}
	}
	return r
}

// allUnschedulable: every pod not bound is marked Unschedulable.
func allUnschedulable(unsched, bound map[string]bool) bool {
	for n, u := range unsched {
		if !bound[n] && !u {
			return false
		}
	}
	return true
}

// uniformWorkload is BenchmarkScale's first workload: 1-GPU pods
// (GPUSCHED_SCALE_SINGLES, default 10,000; the run's pods/s and time to
// bind are theirs), then 20 gangs of 32 pods × 8 GPUs (gangpods/s), then
// one gang of 256 pods × 8 GPUs (gang256-s: its last pod's creation to
// its last binding; -1 when not all bound). Each phase starts on an empty
// cluster.
func uniformWorkload(ctx context.Context, b *testing.B, c kubernetes.Interface, ns, sched string) scaleRun {
	n := scaleEnv("GPUSCHED_SCALE_SINGLES", 10000)
	pods := make([]podSpec, n)
	for i := range pods {
		pods[i] = podSpec{Name: fmt.Sprintf("s-%05d", i), Namespace: ns, SchedulerName: sched, GPUs: 1, CPU: "100m"}
	}
	s := phaseRun(ctx, b, c, ns, pods)
	clearPods(ctx, b, c, ns)
	r := scaleRun{podsPerSec: s.rate(), p50: percentile(s.ttb, 0.5), p99: percentile(s.ttb, 0.99), bound: len(s.ttb), all: n, binds: len(s.ttb), extra: map[string]float64{}}

	pods = pods[:0]
	for i := range 20 * 32 {
		pods = append(pods, gangPod(ns, sched, fmt.Sprintf("g%02d", i/32), i%32, gangKind{pods: 32, gpus: 8}, ""))
	}
	g := phaseRun(ctx, b, c, ns, pods)
	clearPods(ctx, b, c, ns)
	r.extra["gangpods/s"] = g.rate()
	r.binds += len(g.ttb)

	pods = pods[:0]
	for i := range 256 {
		pods = append(pods, gangPod(ns, sched, "big", i, gangKind{pods: 256, gpus: 8}, ""))
	}
	g = phaseRun(ctx, b, c, ns, pods)
	clearPods(ctx, b, c, ns)
	r.binds += len(g.ttb)
	r.extra["gang256-s"] = -1
	if len(g.ttb) == 256 {
		r.extra["gang256-s"] = g.lastBind.Sub(g.lastCreated).Seconds()
	}
	return r
}

// gangKind is a gang's shape: pods × GPUs each, required in one domain
// of level (a topologyLevels name; "" none).
type gangKind struct {
	pods, gpus int
	level      string
}

// gangPod is member i of gang name.
func gangPod(ns, sched, name string, i int, k gangKind, queue string) podSpec {
	labels := map[string]string{gangLabelKey: name, plugin.DefaultGangSizeKey: strconv.Itoa(k.pods)}
	if k.level != "" {
		labels[plugin.DefaultGangTopologyKey] = k.level
	}
	if queue != "" {
		labels[plugin.DefaultQueueLabel] = queue
	}
	return podSpec{Name: fmt.Sprintf("%s-%03d", name, i), Namespace: ns, SchedulerName: sched, GPUs: k.gpus, CPU: "1", Labels: labels}
}

// mixedPods is one queue's share of the cluster workload: gangs of the
// kinds given (largest first, cycling, while they fit) for gangShare of
// its GPUs, then 1-, 2-, 4- and 8-GPU pods, a quarter of the rest each,
// in a shuffled (fixed) order.
func mixedPods(ns, sched, prefix, queue string, gpus int, gangShare float64, kinds []gangKind, seed uint64) []podSpec {
	var pods []podSpec
	used, gangs := 0, 0
	for k := 0; ; k++ {
		fits := false
		for j := range kinds {
			kind := kinds[(k+j)%len(kinds)]
			if float64(used+kind.pods*kind.gpus) > gangShare*float64(gpus) {
				continue
			}
			for i := range kind.pods {
				pods = append(pods, gangPod(ns, sched, fmt.Sprintf("%s-g%02d", prefix, gangs), i, kind, queue))
			}
			used += kind.pods * kind.gpus
			gangs++
			fits = true
			break
		}
		if !fits {
			break
		}
	}
	var singles []podSpec
	quarter := (gpus - used) / 4
	for _, g := range []int{1, 2, 4, 8} {
		for range quarter / g {
			singles = append(singles, podSpec{Namespace: ns, SchedulerName: sched, GPUs: g, CPU: "100m",
				Labels: map[string]string{plugin.DefaultQueueLabel: queue}})
		}
	}
	rng := rand.New(rand.NewPCG(seed, 26))
	rng.Shuffle(len(singles), func(i, j int) { singles[i], singles[j] = singles[j], singles[i] })
	for i := range singles {
		singles[i].Name = fmt.Sprintf("%s-s%05d", prefix, i)
	}
	return append(pods, singles...)
}

// clusterWorkload is BenchmarkScale's second workload, shaped like a
// shared GPU cluster: the first queue of the tree (research in deploy/)
// submits 85% of the cluster's GPUs, half of them in gangs (256 × 4 GPUs,
// 128 × 8 and 64 × 8 required in one block, 32 × 4 in one ToR), the rest
// 1/2/4/8-GPU pods, so it borrows beyond its nominal quota; once those
// are bound (or stay pending), the second queue submits 30% of the GPUs
// (within its quota: a third in 32-pod gangs), which scheduler mode
// reclaims from the borrower. default-scheduler and placement mode get
// the same pods and only place them. The figures cover both phases:
// pods/s from the first creation to the last binding.
func clusterWorkload(ctx context.Context, b *testing.B, c kubernetes.Interface, ns, sched string, nodes int, levels []plugin.TopologyLevel, queues []string) scaleRun {
	gpus := 8 * nodes
	block, tor := levels[0].Name, levels[1].Name
	a := mixedPods(ns, sched, "a", queues[0], gpus*85/100, 0.5,
		[]gangKind{{256, 4, block}, {128, 8, block}, {64, 8, block}, {32, 4, tor}}, 1)
	bp := mixedPods(ns, sched, "b", queues[1], gpus*30/100, 1.0/3,
		[]gangKind{{32, 8, block}, {32, 4, tor}}, 2)
	ra := phaseRun(ctx, b, c, ns, a)
	rb := phaseRun(ctx, b, c, ns, bp)
	clearPods(ctx, b, c, ns)
	ttb := append(ra.ttb, rb.ttb...)
	last := ra.lastBind
	if len(rb.ttb) > 0 {
		last = rb.lastBind
	}
	r := scaleRun{p50: percentile(ttb, 0.5), p99: percentile(ttb, 0.99), bound: len(ttb), all: len(a) + len(bp), binds: len(ttb),
		extra: map[string]float64{"bound-first": float64(len(ra.ttb)), "bound-second": float64(len(rb.ttb)), "evicted": float64(rb.evicted),
			"first-pods/s": ra.rate(), "first-p50-ms": float64(percentile(ra.ttb, 0.5).Milliseconds())}}
	if len(ttb) > 0 {
		r.podsPerSec = float64(len(ttb)) / last.Sub(ra.start).Seconds()
	}
	return r
}
