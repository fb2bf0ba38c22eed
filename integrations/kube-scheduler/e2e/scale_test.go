package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// scaleClient is the client connection every measured scheduler process
// gets, the same for all: the manifests leave kube's default (50 QPS,
// burst 100), which would cap each profile at 50 API writes a second.
const scaleClient = "clientConnection:\n  qps: 5000\n  burst: 10000\n"

// scaleEnv reads a positive integer from the environment, or def.
func scaleEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// scaleProfile is one measured profile: the scheduler configuration its
// process runs, as deploy/ writes it.
type scaleProfile struct {
	short string // default, placement, scheduler
	name  string // the profile's schedulerName
	// config is the KubeSchedulerConfiguration, with scaleClient added.
	config string
	// pctScore is the profile's percentageOfNodesToScore as loaded
	// ("adaptive" when unset: kube's default).
	pctScore string
	// queues is scheduler mode's queue tree ConfigMap (its quotas scaled
	// to the cluster by scaleQueues); nil for the other profiles.
	queues *deployMode
	// ready is the log line after which the process schedules.
	ready string
	// levels are the profile's topologyLevels node labels, outermost
	// first, with their names.
	levels []plugin.TopologyLevel
}

// scaleProfiles returns default-scheduler (kube's default configuration:
// one profile, leader election on), placement mode as
// deploy/scheduler-config.yaml configures it, and scheduler mode as
// deploy/scheduler-mode.yaml does (its queue tree's quotas scaled to the
// cluster's GPUs).
func scaleProfiles(b *testing.B) []scaleProfile {
	b.Helper()
	var placement string
	for _, u := range readManifests(b, "../deploy/scheduler-config.yaml") {
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		if c, ok := data["scheduler-config.yaml"]; ok {
			placement = c
		}
	}
	d := loadDeployMode(b)
	profs := []scaleProfile{
		{short: "default", config: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n", ready: leaseAcquired},
		{short: "placement", config: placement, ready: leaseAcquired},
		// delayCacheUntilActive: the informers start once it leads.
		{short: "scheduler", config: d.config, queues: &d, ready: "Sync completed"},
	}
	for i := range profs {
		p := &profs[i]
		if p.config == "" || strings.Contains(p.config, "clientConnection:") {
			b.Fatalf("%s profile: no configuration in deploy/, or one that sets clientConnection (the benchmark sets it)", p.short)
		}
		p.config = strings.TrimRight(p.config, "\n") + "\n" + scaleClient
		sc, err := options.LoadConfigFromFile(ktesting.NewLogger(b, ktesting.NewConfig()), writeFile(b, "scheduler-config.yaml", p.config))
		if err != nil {
			b.Fatalf("%s profile: %v", p.short, err)
		}
		if len(sc.Profiles) != 1 {
			b.Fatalf("%s profile: %d profiles in its configuration, want 1", p.short, len(sc.Profiles))
		}
		prof := sc.Profiles[0]
		p.name, p.pctScore = prof.SchedulerName, "adaptive"
		if prof.PercentageOfNodesToScore != nil {
			p.pctScore = strconv.Itoa(int(*prof.PercentageOfNodesToScore))
		}
		for _, pc := range prof.PluginConfig {
			if pc.Name != plugin.Name {
				continue
			}
			a, err := plugin.DecodeArgs(pc.Args)
			if err != nil {
				b.Fatalf("%s profile: %v", p.short, err)
			}
			p.levels = a.TopologyLevels
		}
	}
	if len(profs[2].levels) < 2 {
		b.Fatal("deploy/scheduler-mode.yaml: the cluster workload needs two topologyLevels (block, tor)")
	}
	return profs
}

// scaleQueues returns the queue tree with every GPU quota (nominal,
// borrowing, lending, max) multiplied so that the leaves' nominal GPUs
// sum to gpus, and the leaves' names in tree order.
func scaleQueues(b *testing.B, tree string, gpus int) (string, []string) {
	b.Helper()
	var root map[string]any
	if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(tree), 4096).Decode(&root); err != nil {
		b.Fatalf("queue tree: %v", err)
	}
	var leaves []map[string]any
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		kids, _ := n["children"].([]any)
		if len(kids) == 0 {
			leaves = append(leaves, n)
		}
		for _, k := range kids {
			if m, ok := k.(map[string]any); ok {
				walk(m)
			}
		}
	}
	r, _ := root["root"].(map[string]any)
	walk(r)
	gpuQuota := func(n map[string]any) map[string]any {
		qs, _ := n["quotas"].([]any)
		for _, q := range qs {
			if m, ok := q.(map[string]any); ok && m["resource"] == "gpu" {
				return m
			}
		}
		return nil
	}
	sum := 0.0
	var names []string
	for _, l := range leaves {
		names = append(names, fmt.Sprint(l["name"]))
		if q := gpuQuota(l); q != nil {
			v, _ := q["nominal"].(float64)
			sum += v
		}
	}
	if sum <= 0 || len(names) < 2 {
		b.Fatalf("queue tree: %d leaves with %v nominal GPUs; the cluster workload needs two queues with GPU quotas", len(names), sum)
	}
	f := float64(gpus) / sum
	var scale func(n map[string]any)
	scale = func(n map[string]any) {
		if q := gpuQuota(n); q != nil {
			for _, k := range []string{"nominal", "borrowingLimit", "lendingLimit", "max"} {
				if v, ok := q[k].(float64); ok {
					q[k] = int64(v * f)
				}
			}
		}
		kids, _ := n["children"].([]any)
		for _, k := range kids {
			if m, ok := k.(map[string]any); ok {
				scale(m)
			}
		}
	}
	scale(r)
	out, err := json.Marshal(root)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := plugin.ParseQueueConfig(out, "scaled queue tree"); err != nil {
		b.Fatal(err)
	}
	return string(out), names
}

// BenchmarkScale measures default-scheduler and the two gpusched profiles
// with deploy/'s settings, each in its own scheduler process (the built
// binary, $GPUSCHED_KUBE_SCHEDULER or built now), one at a time against
// the same in-process apiserver and fake GPU nodes (8 GPUs, GFD labels,
// a block and ToR label per node; binding needs no kubelet), on two
// workloads (GPUSCHED_SCALE_WORKLOADS, default "uniform,cluster"):
//
//   - uniform: 1-GPU pods (GPUSCHED_SCALE_SINGLES, default 10,000), then
//     20 gangs of 32 pods × 8 GPUs, then one gang of 256 pods × 8 GPUs;
//   - cluster (clusterWorkload): mixed 1/2/4/8-GPU pods and 32–256-pod
//     gangs with a required block, from one queue borrowing past its
//     quota, then the other queue's pods, which reclaim (default-scheduler
//     and placement mode: placement only, the same pods).
//
// Every profile runs GPUSCHED_SCALE_RUNS times (default 3), in a rotated
// order each run; the log has each run and the median [min–max] of pods
// bound per second and of time-to-bind p50/p99 (each pod's creation to
// its binding, as the watch sees them), and the metrics are the medians.
// GPUSCHED_SCALE_PROFILES limits the profiles measured (default,
// placement, scheduler; comma separated), and GPUSCHED_SCALE_CPUPROFILE=
// PREFIX writes a CPU profile of the scheduler process during each
// workload (its first GPUSCHED_SCALE_CPUPROFILE_SECONDS, default 30) to
// PREFIX-RUN-PROFILE-WORKLOAD.prof; GPUSCHED_SCALE_LOGS=DIR keeps each
// scheduler process's log there (RUN-PROFILE.log). The sizes are 1,000 and 5,000 nodes (GPUSCHED_SCALE_NODES: others,
// comma separated). Each run's line also goes to stderr as it ends (a
// benchmark's log shows only when it ends). Run with -benchtime=1x.
func BenchmarkScale(b *testing.B) {
	sizes := []int{1000, 5000}
	if v := os.Getenv("GPUSCHED_SCALE_NODES"); v != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("GPUSCHED_SCALE_NODES=%q: want node counts, comma separated", v)
			}
			sizes = append(sizes, n)
		}
	}
	for _, nodes := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			for range b.N {
				runScale(b, nodes)
			}
		})
	}
}

// scaleRun is one workload's figures in one run of one profile.
type scaleRun struct {
	podsPerSec float64
	p50, p99   time.Duration // time to bind
	bound, all int
	// binds counts every binding of the workload (its other phases
	// too): the scheduler's CPU is per binding.
	binds int
	// extra: the workload's other figures by name.
	extra map[string]float64
}

func runScale(b *testing.B, nodes int) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Hour)
	defer cancel()
	profs := scaleProfiles(b)
	bin := schedulerBinary(b)
	workloads := strings.Split(os.Getenv("GPUSCHED_SCALE_WORKLOADS"), ",")
	if os.Getenv("GPUSCHED_SCALE_WORKLOADS") == "" {
		workloads = []string{"uniform", "cluster"}
	}
	runs := scaleEnv("GPUSCHED_SCALE_RUNS", 3)
	cp := startControlPlane(b)
	c := fastClient(b, cp)
	levels := profs[2].levels
	parallel(ctx, b, nodes, func(i int) {
		createNode(ctx, b, c, nodeSpec{Name: fmt.Sprintf("gpu-%05d", i), GPUs: 8, Product: h100, CPU: "128", Memory: "2Ti",
			Labels: map[string]string{
				levels[0].NodeLabel: fmt.Sprintf("block-%02d", i/nodesPerBlock),
				levels[1].NodeLabel: fmt.Sprintf("rack-%03d", i/nodesPerRack),
			}})
	})
	d := profs[2].queues
	tree, queues := scaleQueues(b, d.queues, 8*nodes)
	d.queues = tree
	d.setup(ctx, b, c)
	for _, p := range profs {
		b.Logf("%s: profile %s, percentageOfNodesToScore %s", p.short, p.name, p.pctScore)
	}
	b.Logf("queue tree for %d GPUs: %s", 8*nodes, tree)

	res := map[string]map[string][]scaleRun{} // workload, profile
	for _, w := range workloads {
		res[w] = map[string][]scaleRun{}
	}
	only := os.Getenv("GPUSCHED_SCALE_PROFILES")
	for run := range runs {
		for k := range profs {
			p := profs[(k+run)%len(profs)]
			if only != "" && !slices.Contains(strings.Split(only, ","), p.short) {
				continue
			}
			load := loadAvg()
			sp := startSchedulerProcess(b, bin, cp, p.config)
			if err := waitFor(ctx, 2*time.Minute, func(context.Context) (bool, error) { return sp.logSays(p.ready), nil }); err != nil {
				b.Fatalf("%s: no %q in the scheduler's log within 2 minutes", p.short, p.ready)
			}
			for _, w := range workloads {
				ns := fmt.Sprintf("%s-%s-%d", w, p.short, run)
				createNamespace(ctx, b, c, ns)
				var r scaleRun
				prof := cpuProfile(ctx, b, cp, sp, fmt.Sprintf("%d-%s-%s", run+1, p.short, w))
				cpu, apiCPU := processCPU(sp.cmd.Process.Pid), processCPU(os.Getpid())
				switch w {
				case "uniform":
					r = uniformWorkload(ctx, b, c, ns, p.name)
				case "cluster":
					r = clusterWorkload(ctx, b, c, ns, p.name, nodes, levels, queues)
				default:
					b.Fatalf("GPUSCHED_SCALE_WORKLOADS: unknown workload %q (uniform, cluster)", w)
				}
				if r.binds > 0 {
					r.extra["sched-cpu-ms/bind"] = float64((processCPU(sp.cmd.Process.Pid) - cpu).Milliseconds()) / float64(r.binds)
					r.extra["test-cpu-ms/bind"] = float64((processCPU(os.Getpid()) - apiCPU).Milliseconds()) / float64(r.binds)
				}
				prof()
				line := fmt.Sprintf("run %d, %d nodes, %s, %s: %d of %d pods bound, %.1f pods/s, time to bind p50 %v p99 %v %v (load average before: %s)",
					run+1, nodes, w, p.short, r.bound, r.all, r.podsPerSec, r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.extra, load)
				if sp.logSays(leaseLost) {
					// An apiserver too loaded to renew the lease in time
					// (its renew deadline, 10 s) stops the process: what
					// it measured is not the profile's pace.
					line += " NOT COUNTED: the scheduler process lost its leader lease"
				} else {
					res[w][p.short] = append(res[w][p.short], r)
				}
				b.Log(line)
				fmt.Fprintf(os.Stderr, "%s BenchmarkScale: %s\n", time.Now().Format(time.TimeOnly), line)
			}
			sp.stop()
			if dir := os.Getenv("GPUSCHED_SCALE_LOGS"); dir != "" {
				if log, err := os.ReadFile(sp.log); err == nil {
					_ = os.WriteFile(fmt.Sprintf("%s/%d-%s.log", dir, run+1, p.short), log, 0o644)
				}
			}
		}
	}
	b.Logf("load average at the end: %s", loadAvg())
	for _, w := range workloads {
		for _, p := range profs {
			rs := res[w][p.short]
			rate := spread(rs, func(r scaleRun) float64 { return r.podsPerSec })
			p50 := spread(rs, func(r scaleRun) float64 { return float64(r.p50.Milliseconds()) })
			p99 := spread(rs, func(r scaleRun) float64 { return float64(r.p99.Milliseconds()) })
			cpu := spread(rs, func(r scaleRun) float64 { return r.extra["sched-cpu-ms/bind"] })
			line := fmt.Sprintf("%d nodes, %s workload, %d runs counted, median [min–max]: %-9s pods/s %s, time to bind p50 %s ms, p99 %s ms, scheduler CPU per binding %s ms",
				nodes, w, len(rs), p.short, rate, p50, p99, cpu)
			b.Log(line)
			// The benchmark's log can be cut short by the apiserver's.
			fmt.Fprintf(os.Stderr, "BenchmarkScale: %s\n", line)
			b.ReportMetric(rate.median, w+"-pods/s-"+p.short)
			b.ReportMetric(p50.median, w+"-p50-ms-"+p.short)
			b.ReportMetric(p99.median, w+"-p99-ms-"+p.short)
		}
		if def := median(res[w]["default"], func(r scaleRun) float64 { return r.podsPerSec }); def > 0 {
			b.ReportMetric(median(res[w]["scheduler"], func(r scaleRun) float64 { return r.podsPerSec })/def, w+"-sched/default")
			b.ReportMetric(median(res[w]["placement"], func(r scaleRun) float64 { return r.podsPerSec })/def, w+"-placement/default")
		}
	}
}

// leaseLost is what kube-scheduler logs when it loses its leader lease
// (and exits).
const leaseLost = "Leaderelection lost"

// loadAvg is /proc/loadavg's first three fields, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// stat is a median with the smallest and largest value.
type stat struct{ median, min, max float64 }

func (s stat) String() string { return fmt.Sprintf("%.1f [%.1f–%.1f]", s.median, s.min, s.max) }

func spread(rs []scaleRun, f func(scaleRun) float64) stat {
	if len(rs) == 0 {
		return stat{}
	}
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	return stat{median: median(rs, f), min: vs[0], max: vs[len(vs)-1]}
}

// median of f over rs (the mean of the middle two for an even count).
func median(rs []scaleRun, f func(scaleRun) float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}

// percentile returns the q-quantile (0..1) of ds, nearest rank.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s)) + 0.5)
	return s[min(max(i-1, 0), len(s)-1)]
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
	time.Sleep(time.Second) // let the scheduler's informers catch up
}

// unschedulable reports whether kube-scheduler marked p unschedulable
// (PodScheduled False, reason Unschedulable).
func unschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// processCPU is the CPU time (user and system) process pid has used so
// far, from /proc (Linux); 0 where it cannot be read.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticksPerSecond
}

// cpuProfile starts a CPU profile of the scheduler process (its
// /debug/pprof/profile, as the apiserver's loopback user) when
// GPUSCHED_SCALE_CPUPROFILE names a file prefix; the function it returns
// waits for the profile and writes it to PREFIX-name.prof.
func cpuProfile(ctx context.Context, b *testing.B, cp *controlPlane, sp *schedulerProcess, name string) func() {
	pre := os.Getenv("GPUSCHED_SCALE_CPUPROFILE")
	if pre == "" {
		return func() {}
	}
	secs := scaleEnv("GPUSCHED_SCALE_CPUPROFILE_SECONDS", 30)
	url := fmt.Sprintf("https://127.0.0.1:%s/debug/pprof/profile?seconds=%d", securePort(b, sp), secs)
	done := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			done <- err
			return
		}
		req.Header.Set("Authorization", "Bearer "+cp.Config.BearerToken)
		client := &http.Client{Timeout: time.Duration(secs+60) * time.Second, Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
		resp, err := client.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", resp.Status, tail(body, 300))
		}
		if err == nil {
			err = os.WriteFile(pre+"-"+name+".prof", body, 0o644)
		}
		done <- err
	}()
	return func() {
		if err := <-done; err != nil {
			b.Logf("CPU profile %s: %v", name, err)
		}
	}
}

// fastClient is a client of cp fast enough not to be a scale benchmark's
// bottleneck (QPS 5,000, burst 10,000).
func fastClient(b testing.TB, cp *controlPlane) kubernetes.Interface {
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
