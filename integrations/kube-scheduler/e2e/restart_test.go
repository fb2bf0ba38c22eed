package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// schedulerProcess is a kube-scheduler binary the test may kill.
type schedulerProcess struct {
	cmd    *exec.Cmd
	exited chan error
	log    string
}

// startSchedulerProcess starts bin with config and waits until it is
// healthy; the test's cleanup stops it if it still runs.
func startSchedulerProcess(t testing.TB, bin string, cp *controlPlane, config string) *schedulerProcess {
	t.Helper()
	configFile := writeConfig(t, cp, config)
	logFile := filepath.Join(t.TempDir(), "kube-scheduler.log")
	out, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	// GPUSCHED_SCHEDULER_FLAGS adds flags (e.g. --vmodule=host=4 for
	// scheduler mode's per-cycle log line).
	cmd := exec.Command(bin, append([]string{"--config=" + configFile,
		"--authentication-kubeconfig=" + cp.Kubeconfig, "--authorization-kubeconfig=" + cp.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port[0]), "--cert-dir=" + t.TempDir(), "--v=2"},
		strings.Fields(os.Getenv("GPUSCHED_SCHEDULER_FLAGS"))...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sp := &schedulerProcess{cmd: cmd, exited: make(chan error, 1), log: logFile}
	go func() { sp.exited <- cmd.Wait(); out.Close() }()
	t.Cleanup(func() {
		sp.stop()
		if t.Failed() || testing.Verbose() {
			if b, err := os.ReadFile(logFile); err == nil {
				t.Logf("kube-scheduler log (tail):\n%s", tail(b, 6000))
			}
		}
	})
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
	healthz := fmt.Sprintf("https://127.0.0.1:%d/healthz", port[0])
	if err := waitFor(context.Background(), 60*time.Second, func(context.Context) (bool, error) {
		select {
		case err := <-sp.exited:
			b, _ := os.ReadFile(logFile)
			return false, fmt.Errorf("kube-scheduler exited: %v\n%s", err, tail(b, 8000))
		default:
		}
		resp, err := client.Get(healthz)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("kube-scheduler binary not healthy: %v", err)
	}
	return sp
}

// stop asks the process to stop (SIGINT), and kills it after 20 s.
func (sp *schedulerProcess) stop() {
	if sp.cmd.ProcessState != nil {
		return
	}
	_ = sp.cmd.Process.Signal(os.Interrupt)
	select {
	case <-sp.exited:
	case <-time.After(20 * time.Second):
		sp.kill()
	}
}

// kill stops the process at once (SIGKILL: no cleanup of any kind).
func (sp *schedulerProcess) kill() {
	if sp.cmd.ProcessState != nil {
		return
	}
	_ = sp.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-sp.exited:
	case <-time.After(10 * time.Second):
	}
}

// waitFirstBound watches (not polls) the pods the label selector picks
// until one is bound, to act while the others are still being bound.
func waitFirstBound(ctx context.Context, t *testing.T, c kubernetesClient, selector string) {
	t.Helper()
	w, err := c.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case ev := <-w.ResultChan():
			if p, ok := ev.Object.(*v1.Pod); ok && p.Spec.NodeName != "" {
				break wait
			}
		case <-deadline:
			t.Fatalf("no pod of %s bound\n%s", selector, describeEvents(ctx, c, "default"))
		}
	}
	w.Stop()
}

// checkGPUsOnce fails if two live bound pods hold one GPU of a node.
func checkGPUsOnce(ctx context.Context, t *testing.T, c kubernetesClient) {
	t.Helper()
	held := map[string]string{}
	for _, p := range listPods(ctx, t, c, "default") {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		idx := indices(t, &p)
		if len(idx) != gpuRequest(&p) {
			t.Errorf("%s bound with %s=%q for %d GPUs", p.Name, indicesKey, p.Annotations[indicesKey], gpuRequest(&p))
		}
		for _, i := range idx {
			k := fmt.Sprintf("%s/%d", p.Spec.NodeName, i)
			if o, dup := held[k]; dup {
				t.Errorf("GPU %s bound to %s and %s", k, o, p.Name)
			}
			held[k] = p.Name
		}
	}
}

// TestRestartSafety kills the built scheduler binary (SIGKILL) in the middle
// of a gang's admission and in the middle of a preemption, and starts a new
// one: it rebuilds its state from the apiserver, no GPU is bound twice, no pod
// disappears but the preemption's victims, and the work goes on.
func TestRestartSafety(t *testing.T) {
	if testing.Short() && os.Getenv("GPUSCHED_KUBE_SCHEDULER") == "" {
		t.Skip("-short: not building the kube-scheduler binary")
	}
	bin := schedulerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp := startControlPlane(t)
	c := cp.Client
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, queuesYAML)
	createPriorityClass(ctx, t, c, "gpu-low", 100)
	createPriorityClass(ctx, t, c, "gpu-high", 1000)
	for i := range 4 {
		createNode(ctx, t, c, nodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: 8, Product: h100})
	}
	sp := startSchedulerProcess(t, bin, cp, schedModeConfig)
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range listPods(context.Background(), t, c, "default") {
				t.Logf("pod %s node=%q %s=%q phase=%s gates=%d", p.Name, p.Spec.NodeName, indicesKey, p.Annotations[indicesKey], p.Status.Phase, len(p.Spec.SchedulingGates))
			}
		}
	})

	// A 16-pod gang of 1 GPU each; the scheduler is killed as soon as the
	// first member is bound.
	var gang []string
	for i := range 16 {
		p := createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("g-%02d", i), SchedulerName: schedModeName, GPUs: 1, PriorityClassName: "gpu-low",
			Labels: map[string]string{queueLabel: "batch", gangLabelKey: "g", plugin.DefaultGangSizeKey: "16"}})
		gang = append(gang, p.Name)
	}
	boundCount := func(names []string) int {
		n := 0
		for _, p := range listPods(ctx, t, c, "default") {
			for _, m := range names {
				if p.Name == m && p.Spec.NodeName != "" {
					n++
				}
			}
		}
		return n
	}
	waitFirstBound(ctx, t, c, gangLabelKey+"=g")
	sp.kill()
	// Bindings the killed scheduler had sent land within moments.
	time.Sleep(time.Second)
	atKill := boundCount(gang)
	t.Logf("killed with %d of 16 gang members bound", atKill)
	checkGPUsOnce(ctx, t, c)
	sp = startSchedulerProcess(t, bin, cp, schedModeConfig)
	// Fill every GPU the gang does not hold with low-priority 1-GPU pods:
	// the new scheduler must not give them the gang's GPUs.
	// The new scheduler completes the gang (members PreBind had annotated
	// go to their GPUs) or keeps its bound members and says why the others
	// wait (README, Restart).
	partly := false
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		if boundCount(gang) == 16 {
			return true, nil
		}
		for _, n := range gang {
			if strings.Contains(podCondition(ctx, c, "default", n), "partly bound") {
				partly = true
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("after the restart the gang (%d of 16 bound) is neither completed nor explained\n%s", boundCount(gang), describeEvents(ctx, c, "default"))
	}
	// A partly bound gang's members that PreBind had annotated are still
	// being bound by the new scheduler: wait until the count holds for 2 s.
	settled := boundCount(gang)
	for stable := time.Now(); time.Since(stable) < 2*time.Second; time.Sleep(200 * time.Millisecond) {
		if n := boundCount(gang); n != settled {
			settled, stable = n, time.Now()
		}
	}
	t.Logf("after the restart: %d of 16 gang members bound (partly bound: %v)", settled, partly)
	var fill []string
	for i := range 32 - settled {
		fill = append(fill, createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("f-%02d", i), SchedulerName: schedModeName, GPUs: 1,
			PriorityClassName: "gpu-low", Labels: map[string]string{queueLabel: "batch"}}).Name)
	}
	waitBound(ctx, t, c, "default", fill, 60*time.Second)
	checkGPUsOnce(ctx, t, c)
	total := 16 + len(fill)
	if n := len(listPods(ctx, t, c, "default")); n != total {
		t.Fatalf("%d pods after the restart, want %d: none may be lost", n, total)
	}

	// Preemption: a high-priority 8-GPU pod in the same queue evicts
	// low-priority pods; the scheduler is killed as soon as the first
	// victim is gone.
	before := map[string]bool{}
	for _, p := range listPods(ctx, t, c, "default") {
		before[p.Name] = true
	}
	createPod(ctx, t, c, podSpec{Name: "high", SchedulerName: schedModeName, GPUs: 8, PriorityClassName: "gpu-high",
		Labels: map[string]string{queueLabel: "batch"}})
	if err := waitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		return len(listPods(ctx, t, c, "default")) < total+1, nil
	}); err != nil {
		t.Fatalf("no victim evicted for the high-priority pod: %v\n%s", err, describeEvents(ctx, c, "default"))
	}
	sp.kill()
	startSchedulerProcess(t, bin, cp, schedModeConfig)
	got := waitBound(ctx, t, c, "default", []string{"high"}, 90*time.Second)
	if len(indices(t, got["high"])) != 8 {
		t.Errorf("high: %s=%q, want 8 indices", indicesKey, got["high"].Annotations[indicesKey])
	}
	checkGPUsOnce(ctx, t, c)
	var evicted []string
	now := map[string]bool{}
	for _, p := range listPods(ctx, t, c, "default") {
		now[p.Name] = true
	}
	for n := range before {
		if !now[n] {
			evicted = append(evicted, n)
		}
	}
	t.Logf("evicted for the high-priority pod: %v", evicted)
	if len(evicted) == 0 {
		t.Error("no pod evicted for the high-priority pod")
	}
}

// testStaleNomination sets up, without killing anything, what a scheduler
// killed between kube-scheduler's NominatedNodeName write and a gang
// member's Binding leaves behind (seen in TestRestartSafety): three of a
// 4-pod gang bound on n0 with their GPU indices, the fourth unbound,
// nominated to n0, with no indices. The new scheduler keeps the bound
// members and explains why the fourth waits; it must clear that pod's
// nomination, or kube-scheduler keeps counting its GPU on n0, and a pod
// gpusched places on n0's last free GPU fails NodeResourcesFit for as long
// as the gang waits.
func testStaleNomination(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "n0", GPUs: 8, Product: h100})
	gang := map[string]string{queueLabel: "batch", gangLabelKey: "s", plugin.DefaultGangSizeKey: "4"}
	for i := range 4 {
		p := createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("s-%d", i), SchedulerName: schedModeName, GPUs: 1, Labels: gang})
		if i < 3 {
			b := &v1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID,
					Annotations: map[string]string{indicesKey: strconv.Itoa(i)}},
				Target: v1.ObjectReference{Kind: "Node", Name: "n0"},
			}
			if err := c.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
				t.Fatalf("bind %s: %v", p.Name, err)
			}
			continue
		}
		p.Status.NominatedNodeName = "n0"
		if _, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("nominate %s: %v", p.Name, err)
		}
	}
	start()
	waitCondition(ctx, t, c, "default", "s-3", "partly bound (3 of 4 pods)")
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Get(ctx, "s-3", metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == "", err
	}); err != nil {
		t.Fatalf("s-3 keeps its stale nominated node: %v", err)
	}
	// n0 has 5 free GPUs: 5 new pods bind there.
	var fill []string
	for i := range 5 {
		fill = append(fill, createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("f-%d", i), SchedulerName: schedModeName, GPUs: 1,
			Labels: map[string]string{queueLabel: "batch"}}).Name)
	}
	waitBound(ctx, t, c, "default", fill, 60*time.Second)
	checkGPUsOnce(ctx, t, c)
	if p, _ := c.CoreV1().Pods("default").Get(ctx, "s-3", metav1.GetOptions{}); p != nil && p.Spec.NodeName != "" {
		t.Errorf("s-3 bound to %s, want it waiting: its gang was partly bound", p.Spec.NodeName)
	}
}
