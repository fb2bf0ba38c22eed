package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// scaleConfig: the three profiles measured side by side in one scheduler,
// with a client fast enough not to be the bottleneck.
const scaleConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  qps: 5000
  burst: 10000
profiles:
- schedulerName: default-scheduler
- schedulerName: gpusched
  plugins:
    multiPoint:
      enabled:
      - {name: GPUSched, weight: 100}
    bind:
      enabled:
      - {name: GPUSched}
  pluginConfig:
  - name: GPUSched
    args: {policy: topology, gangTimeoutSeconds: 120}
- schedulerName: gpusched-queue
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

// scaleEnv reads a positive integer from the environment, or def.
func scaleEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkScale measures the three profiles on the real apiserver with
// fake GPU nodes (8 GPUs, GFD labels; binding needs no kubelet), one profile
// after the other on the same nodes, each phase on an empty cluster:
//
//   - 10,000 1-GPU pods (GPUSCHED_SCALE_SINGLES): pods bound per second,
//     from the first creation to the last binding;
//   - 20 gangs of 32 pods × 8 GPUs: pods bound per second;
//   - one gang of 256 pods × 8 GPUs: seconds from its last pod's creation
//     to its last binding.
//
// Metrics: singles/s, gangpods/s and gang256-s per profile (default,
// placement, scheduler), and the scheduler profile's 1-GPU rate over
// default-scheduler's (sched/default). Run with -benchtime=1x.
func BenchmarkScale(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			for range b.N {
				runScale(b, nodes)
			}
		})
	}
}

type scaleResult struct {
	singles, gangPods, gang256 float64
	// cpuSingles is the process's CPU time (apiserver, etcd, scheduler
	// and client together) per 1-GPU pod bound, in ms: it depends less on
	// what else runs on the machine than the rates do.
	cpuSingles float64
}

// phase measures one phase of runScale: the CPU the process spends in it,
// and a CPU profile of it when GPUSCHED_SCALE_CPUPROFILE names a file
// prefix (PREFIX-PROFILE-PHASE.prof).
func phase(b *testing.B, prof, name string, fn func()) (cpu time.Duration) {
	if pre := os.Getenv("GPUSCHED_SCALE_CPUPROFILE"); pre != "" {
		f, err := os.Create(fmt.Sprintf("%s-%s-%s.prof", pre, prof, name))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	start := processCPU()
	fn()
	return processCPU() - start
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runScale(b *testing.B, nodes int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cp := startControlPlane(b)
	b.Cleanup(func() { configz.Delete("componentconfig") })
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	parallel(ctx, b, nodes, func(i int) {
		createNode(ctx, b, c, nodeSpec{Name: fmt.Sprintf("gpu-%05d", i), GPUs: 8, Product: h100, CPU: "128", Memory: "2Ti"})
	})
	startInProcess(b, cp, scaleConfig, app.WithPlugin(plugin.Name, plugin.New))
	singles := scaleEnv("GPUSCHED_SCALE_SINGLES", 10000)
	res := map[string]scaleResult{}
	for _, prof := range []string{"default-scheduler", "gpusched", "gpusched-queue"} {
		ns := "scale-" + prof
		createNamespace(ctx, b, c, ns)
		var r scaleResult
		var bound int
		var d time.Duration
		cpu := phase(b, prof, "singles", func() {
			bound, d = measure(ctx, b, c, ns, singles, func(i int) podSpec {
				return podSpec{Name: fmt.Sprintf("s-%05d", i), Namespace: ns, SchedulerName: prof, GPUs: 1, CPU: "100m"}
			})
		})
		r.singles = float64(bound) / d.Seconds()
		if bound > 0 {
			r.cpuSingles = float64(cpu.Milliseconds()) / float64(bound)
		}
		clearPods(ctx, b, c, ns)
		phase(b, prof, "gangs", func() {
			bound, d = measure(ctx, b, c, ns, 20*32, func(i int) podSpec {
				return podSpec{Name: fmt.Sprintf("g%02d-%02d", i/32, i%32), Namespace: ns, SchedulerName: prof, GPUs: 8, CPU: "1",
					Labels: map[string]string{gangLabelKey: fmt.Sprintf("g%02d", i/32), plugin.DefaultGangSizeKey: "32"}}
			})
		})
		r.gangPods = float64(bound) / d.Seconds()
		clearPods(ctx, b, c, ns)
		lastCreated := time.Time{}
		var lastBind time.Time
		phase(b, prof, "gang256", func() {
			bound, _ = measureWith(ctx, b, c, ns, 256, func(i int) podSpec {
				return podSpec{Name: fmt.Sprintf("big-%03d", i), Namespace: ns, SchedulerName: prof, GPUs: 8, CPU: "1",
					Labels: map[string]string{gangLabelKey: "big", plugin.DefaultGangSizeKey: "256"}}
			}, &lastCreated, &lastBind)
		})
		if bound == 256 {
			r.gang256 = lastBind.Sub(lastCreated).Seconds()
		} else {
			r.gang256 = -1
		}
		clearPods(ctx, b, c, ns)
		res[prof] = r
		b.Logf("%d nodes, %s: %.0f 1-GPU pods/s (%.2f ms CPU each), %.0f gang pods/s, 256-pod gang bound %.2fs after its last pod",
			nodes, prof, r.singles, r.cpuSingles, r.gangPods, r.gang256)
	}
	for prof, short := range map[string]string{"default-scheduler": "default", "gpusched": "placement", "gpusched-queue": "scheduler"} {
		b.ReportMetric(res[prof].singles, "singles/s-"+short)
		b.ReportMetric(res[prof].gangPods, "gangpods/s-"+short)
		b.ReportMetric(res[prof].gang256, "gang256-s-"+short)
		b.ReportMetric(res[prof].cpuSingles, "cpu-ms/single-"+short)
	}
	if d := res["default-scheduler"].singles; d > 0 {
		b.ReportMetric(res["gpusched-queue"].singles/d, "sched/default")
		b.ReportMetric(res["gpusched"].singles/d, "placement/default")
	}
}

// parallel runs fn(0..n-1) on 32 workers.
func parallel(ctx context.Context, b *testing.B, n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
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

// clearPods deletes every pod of ns and waits until they are gone. A
// collection delete of 10,000 pods on a loaded machine can outlast the
// apiserver's request timeout: it is asked again until none is left.
func clearPods(ctx context.Context, b *testing.B, c kubernetes.Interface, ns string) {
	zero := int64(0)
	if err := waitFor(ctx, 10*time.Minute, func(ctx context.Context) (bool, error) {
		pl, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || len(pl.Items) == 0 {
			return err == nil, nil
		}
		if err := c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
			b.Logf("deleting the pods of %s (asked again): %v", ns, err)
		}
		return false, nil
	}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Second) // let the schedulers' informers catch up
}
