package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// draScaleConfigs are the profiles BenchmarkDRAScale measures, one per
// scheduler, with a client fast enough not to be the bottleneck: kube's
// default profile alone, and BenchmarkScale's scheduler-mode profile alone.
var draScaleConfigs = map[string]string{
	"default-scheduler": draKubeConfig + draScaleClient,
	schedModeName:       strings.Replace(draKubeConfig, "- schedulerName: default-scheduler\n", draScaleSchedMode, 1) + draScaleClient,
	"gpusched":          placementDRAConfig + draScaleClient,
}

// draScaleSchedMode is the scheduler-mode profile BenchmarkDRAScale
// measures (BenchmarkScale reads its profiles from deploy/ instead).
const draScaleSchedMode = `- schedulerName: gpusched-queue
  plugins:
    multiPoint:
      enabled:
      - {name: GPUSched, weight: 100}
    bind:
      enabled:
      - {name: GPUSched}
    postFilter:
      disabled:
      - {name: DefaultPreemption}
  pluginConfig:
  - name: GPUSched
    args: {mode: scheduler, cycleIntervalMilliseconds: 100, gangTimeoutSeconds: 120}
`

const draScaleClient = `clientConnection:
  qps: 5000
  burst: 10000
`

// BenchmarkDRAScale measures pods bound per second with DRA claims on the
// real apiserver: GPUSCHED_DRA_SCALE_NODES (1,000) fake DGX H100 nodes,
// each publishing its 8 GPUs as a ResourceSlice (publishDGX), and
// GPUSCHED_DRA_SCALE_PODS (2,000) pods with one ResourceClaim each for
// GPUSCHED_DRA_SCALE_GPUS (1) GPUs, created together; the claims are
// created before the clock starts. Each profile runs on its own control
// plane and scheduler: default-scheduler (kube's DynamicResources
// allocates the claims), gpusched's scheduler mode and its placement mode
// (gpusched writes them); GPUSCHED_DRA_SCALE_PROFILE (comma-separated)
// picks some. Metrics: pods/s (first pod created to last bound) and the
// process's CPU ms per pod bound (apiserver, etcd, scheduler and client
// together). Run by hand with -benchtime=1x (README).
func BenchmarkDRAScale(b *testing.B) {
	profiles := []string{"default-scheduler", schedModeName, "gpusched"}
	if only := os.Getenv("GPUSCHED_DRA_SCALE_PROFILE"); only != "" {
		profiles = strings.Split(only, ",")
	}
	for _, prof := range profiles {
		b.Run("profile="+prof, func(b *testing.B) {
			for range b.N {
				runDRAScale(b, prof)
			}
		})
	}
}

func runDRAScale(b *testing.B, prof string) {
	nodes := scaleEnv("GPUSCHED_DRA_SCALE_NODES", 1000)
	pods := scaleEnv("GPUSCHED_DRA_SCALE_PODS", 2000)
	gpus := scaleEnv("GPUSCHED_DRA_SCALE_GPUS", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cp := startControlPlane(b)
	c := fastClient(b, cp)
	createGPUClass(ctx, b, c)
	parallel(ctx, b, nodes, func(i int) {
		n := fmt.Sprintf("dgx-%05d", i)
		createNode(ctx, b, c, nodeSpec{Name: n, CPU: "128", Memory: "2Ti"})
		publishDGX(ctx, b, c, n)
	})
	parallel(ctx, b, pods, func(i int) {
		createClaim(ctx, b, c, fmt.Sprintf("p-%05d-gpus", i), gpuClass, gpus)
	})
	startInProcess(b, cp, draScaleConfigs[prof], app.WithPlugin(plugin.Name, plugin.New))
	// gpusched lets a pod through once its claims are written; a loaded
	// machine may still pause long between bindings.
	defer func(d time.Duration) { measureIdle = d }(measureIdle)
	measureIdle = 5 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("GPUSCHED_DRA_SCALE_IDLE")); err == nil {
		measureIdle = d
	}
	time.Sleep(2 * time.Second) // the scheduler's informers list the nodes, slices and claims
	var bound int
	var d time.Duration
	cpu0 := processCPU(os.Getpid())
	func() {
		bound, d = measure(ctx, b, c, "default", pods, func(i int) podSpec {
			return podSpec{Name: fmt.Sprintf("p-%05d", i), SchedulerName: prof, CPU: "100m",
				Claims: []string{fmt.Sprintf("p-%05d-gpus", i)}}
		})
	}()
	cpu := processCPU(os.Getpid()) - cpu0
	rate := float64(bound) / d.Seconds()
	var ms float64
	if bound > 0 {
		ms = float64(cpu.Milliseconds()) / float64(bound)
	}
	if bound < pods {
		dumpUnbound(ctx, c, "default", 20)
	}
	line := fmt.Sprintf("%d nodes, %s: %d of %d pods with a %d-GPU claim bound, %.1f pods/s (%.2f ms CPU each)", nodes, prof, bound, pods, gpus, rate, ms)
	b.Log(line)
	fmt.Fprintln(os.Stderr, line) // (a benchmark's log is cut to its first lines)
	b.ReportMetric(rate, "pods/s")
	b.ReportMetric(ms, "cpu-ms/pod")
}

// measureIdle is how long measure waits for a binding before it stops.
var measureIdle = 30 * time.Second

// measure creates n pods in ns and returns how many were bound and the time
// from the first creation to the last binding; it stops waiting when no
// pod was bound for measureIdle (a loaded machine may pause 30 s).
func measure(ctx context.Context, b *testing.B, c kubernetes.Interface, ns string, n int, spec func(int) podSpec) (int, time.Duration) {
	var lastCreated, lastBind time.Time
	return measureWith(ctx, b, c, ns, n, spec, &lastCreated, &lastBind)
}

func measureWith(ctx context.Context, b *testing.B, c kubernetes.Interface, ns string, n int, spec func(int) podSpec, lastCreated, lastBind *time.Time) (int, time.Duration) {
	pl, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rv := pl.ResourceVersion
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { w.Stop() }()
	start := time.Now()
	go parallel(ctx, b, n, func(i int) {
		createPod(ctx, b, c, spec(i))
	})
	boundAt := map[string]bool{}
	var binds []time.Duration // each binding, from start
	defer func() { fmt.Fprintln(os.Stderr, bindTimeline(binds)) }()
	created := 0
	idle := time.NewTimer(measureIdle)
	defer idle.Stop()
	for len(boundAt) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The apiserver ends watches now and then: resume.
				w, err = c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
				if err != nil {
					b.Fatal(err)
				}
				continue
			}
			p, isPod := ev.Object.(*v1.Pod)
			if !isPod {
				continue
			}
			rv = p.ResourceVersion
			if ev.Type == watch.Added {
				created++
				if created == n {
					*lastCreated = time.Now()
				}
			}
			if p.Spec.NodeName != "" && !boundAt[p.Name] {
				boundAt[p.Name] = true
				*lastBind = time.Now()
				binds = append(binds, lastBind.Sub(start))
				idle.Reset(measureIdle)
			}
		case <-idle.C:
			if created >= n {
				return len(boundAt), lastBind.Sub(start)
			}
			idle.Reset(measureIdle)
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		}
	}
	return len(boundAt), lastBind.Sub(start)
}

// bindTimeline says how many pods were bound in each 10 s from the first
// creation ("bound per 10 s: 3 0 331 ..."): whether bindings came
// steadily or in bursts.
func bindTimeline(binds []time.Duration) string {
	var per []string
	for i, k := 0, 0; k < len(binds); i++ {
		n := 0
		for ; k < len(binds) && binds[k] < time.Duration(i+1)*10*time.Second; k++ {
			n++
		}
		per = append(per, strconv.Itoa(n))
	}
	return "bound per 10 s: " + strings.Join(per, " ")
}

// dumpUnbound prints to stderr, for at most max pods of ns not bound, its
// PodScheduled condition and its claims' allocations and reservations:
// where a stranded pod stands.
func dumpUnbound(ctx context.Context, c kubernetes.Interface, ns string, max int) {
	pl, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "listing pods:", err)
		return
	}
	n := 0
	for _, p := range pl.Items {
		if p.Spec.NodeName != "" {
			continue
		}
		if n++; n > max {
			continue
		}
		var conds []string
		for _, cd := range p.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s %s %q", cd.Type, cd.Status, cd.Reason, cd.Message))
		}
		fmt.Fprintf(os.Stderr, "unbound %s uid %s rv %s nominated %q: %s\n", p.Name, p.UID, p.ResourceVersion, p.Status.NominatedNodeName, strings.Join(conds, "; "))
		for _, rc := range p.Spec.ResourceClaims {
			if rc.ResourceClaimName == nil {
				continue
			}
			cl, err := c.ResourceV1().ResourceClaims(ns).Get(ctx, *rc.ResourceClaimName, metav1.GetOptions{})
			if err != nil {
				fmt.Fprintln(os.Stderr, "  claim:", err)
				continue
			}
			var devs, res []string
			if a := cl.Status.Allocation; a != nil {
				for _, r := range a.Devices.Results {
					devs = append(devs, r.Pool+"/"+r.Device)
				}
			}
			for _, r := range cl.Status.ReservedFor {
				res = append(res, r.Name+"/"+string(r.UID))
			}
			fmt.Fprintf(os.Stderr, "  claim %s rv %s finalizers %v allocated %v reserved for %v\n", cl.Name, cl.ResourceVersion, cl.Finalizers, devs, res)
		}
	}
	fmt.Fprintf(os.Stderr, "%d pods not bound\n", n)
}
