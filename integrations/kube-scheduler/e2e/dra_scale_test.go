package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// draScaleConfigs are the profiles BenchmarkDRAScale measures, one per
// scheduler, with a client fast enough not to be the bottleneck: kube's
// default profile alone, and BenchmarkScale's scheduler-mode profile alone.
var draScaleConfigs = map[string]string{
	"default-scheduler": draKubeConfig + draScaleClient,
	schedModeName: strings.Replace(draKubeConfig, "- schedulerName: default-scheduler\n",
		scaleConfig[strings.Index(scaleConfig, "- schedulerName: "+schedModeName+"\n"):], 1) + draScaleClient,
}

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
// allocates the claims) and gpusched's scheduler mode (gpusched writes
// them). Metrics: pods/s (first pod created to last bound) and the
// process's CPU ms per pod bound (apiserver, etcd, scheduler and client
// together). Run by hand with -benchtime=1x (README).
func BenchmarkDRAScale(b *testing.B) {
	for _, prof := range []string{"default-scheduler", schedModeName} {
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
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
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
	// gpusched writes the claims of the jobs a cycle binds before it lets
	// any of their pods through: a cycle that binds a thousand pods is
	// a long pause between bindings.
	defer func(d time.Duration) { measureIdle = d }(measureIdle)
	measureIdle = 5 * time.Minute
	time.Sleep(2 * time.Second) // the scheduler's informers list the nodes, slices and claims
	var bound int
	var d time.Duration
	cpu := phase(b, prof, "dra", func() {
		bound, d = measure(ctx, b, c, "default", pods, func(i int) podSpec {
			return podSpec{Name: fmt.Sprintf("p-%05d", i), SchedulerName: prof, CPU: "100m",
				Claims: []string{fmt.Sprintf("p-%05d-gpus", i)}}
		})
	})
	rate := float64(bound) / d.Seconds()
	var ms float64
	if bound > 0 {
		ms = float64(cpu.Milliseconds()) / float64(bound)
	}
	b.Logf("%d nodes, %s: %d of %d pods with a %d-GPU claim bound, %.0f pods/s (%.2f ms CPU each)", nodes, prof, bound, pods, gpus, rate, ms)
	b.ReportMetric(rate, "pods/s")
	b.ReportMetric(ms, "cpu-ms/pod")
}
