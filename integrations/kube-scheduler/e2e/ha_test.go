package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// haConfig is the deploy configuration with lease timings short enough
// for a test (kube-scheduler's defaults, 15 s / 10 s / 2 s, would make
// each takeover wait up to 17 s); everything else is deploy's.
func (d deployMode) haConfig(t *testing.T) string {
	t.Helper()
	const at = "leaderElection:\n"
	if !strings.Contains(d.config, at) {
		t.Fatal("deploy configuration: no leaderElection block")
	}
	return strings.Replace(d.config, at, at+"  leaseDuration: 6s\n  renewDeadline: 4s\n  retryPeriod: 1s\n", 1)
}

// logSays reports whether the process's log contains s.
func (sp *schedulerProcess) logSays(s string) bool {
	b, err := os.ReadFile(sp.log)
	return err == nil && strings.Contains(string(b), s)
}

const (
	leaseAcquired = "Successfully acquired lease"
	cyclesStart   = "Leading: gpusched cycles start"
)

// waitLeads waits until sp acquired the leader lease.
func waitLeads(ctx context.Context, t testing.TB, sp *schedulerProcess, name string, timeout time.Duration) {
	t.Helper()
	if err := waitFor(ctx, timeout, func(context.Context) (bool, error) { return sp.logSays(leaseAcquired), nil }); err != nil {
		t.Fatalf("%s did not acquire the leader lease within %v", name, timeout)
	}
}

// checkStandbyIdle fails if the standby acted before it led: it ran a
// gpusched cycle or holds the lease.
func checkStandbyIdle(t *testing.T, sp *schedulerProcess, name string) {
	t.Helper()
	if sp.logSays(leaseAcquired) || sp.logSays(cyclesStart) {
		t.Fatalf("%s, the standby, leads or ran gpusched cycles while the leader lives", name)
	}
}

// livePods returns the live pods of the default namespace by name.
func livePods(ctx context.Context, t *testing.T, c kubernetesClient) map[string]v1.Pod {
	t.Helper()
	m := map[string]v1.Pod{}
	for _, p := range listPods(ctx, t, c, "default") {
		if p.DeletionTimestamp == nil {
			m[p.Name] = p
		}
	}
	return m
}

// TestHALeaderKilled (issue 26, defect 1): two scheduler binaries with
// deploy/scheduler-mode.yaml's configuration (leader election,
// delayCacheUntilActive; shorter lease timings) against one apiserver
// that authorizes by RBAC, each running as deploy/rbac.yaml's service
// account.
// The standby does nothing while the leader lives. The leader is killed
// (SIGKILL) right after the first member of a 16-pod gang is bound: the
// standby takes over and binds the whole gang (every member's plan was
// written before any was let through). A new standby starts; the leader
// is killed again right after the first victim of a preemption is
// evicted: the standby takes over and binds the preemptor. Throughout, no
// GPU is held by two live pods, and no pod is lost but the victims.
func TestHALeaderKilled(t *testing.T) {
	bin := deployBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	d := loadDeployMode(t)
	config := d.haConfig(t)
	cp := startControlPlane(t, rbacFlags...)
	c := cp.Client
	d.setup(ctx, t, c)
	// The schedulers run as deploy/rbac.yaml's service account, with
	// what it grants only.
	sa := asServiceAccount(ctx, t, cp)
	for i := range 4 {
		createNode(ctx, t, c, nodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: 8, Product: h100})
	}
	d.fillGuarantees(ctx, t, c) // 8 more nodes would do; 11 keep it simple
	createPriorityClass(ctx, t, c, "prio-100", 100)
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range listPods(context.Background(), t, c, "default") {
				t.Logf("pod %s node=%q %s=%q deleting=%v", p.Name, p.Spec.NodeName, indicesKey, p.Annotations[indicesKey], p.DeletionTimestamp != nil)
			}
		}
	})

	first := startSchedulerProcess(t, bin, sa, config)
	waitLeads(ctx, t, first, "the first scheduler", 30*time.Second)
	second := startSchedulerProcess(t, bin, sa, config)

	// A 16-pod gang; the leader is killed once its first member is bound.
	var gang []string
	for i := range 16 {
		gang = append(gang, createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("g-%02d", i), SchedulerName: schedModeName, GPUs: 1,
			Labels: map[string]string{gangLabelKey: "g", plugin.DefaultGangSizeKey: "16"}}).Name)
	}
	waitFirstBound(ctx, t, c, gangLabelKey+"=g")
	checkStandbyIdle(t, second, "the second scheduler")
	first.kill()
	killed := time.Now()
	n := 0
	for _, p := range livePods(ctx, t, c) {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	t.Logf("leader killed with %d of 16 gang members bound", n)
	waitLeads(ctx, t, second, "the standby", 30*time.Second)
	waitBound(ctx, t, c, "default", gang, 60*time.Second)
	t.Logf("the standby led and bound the whole gang %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	checkGPUsOnce(ctx, t, c)

	// A new standby; the other 16 GPUs filled with 1-GPU pods.
	third := startSchedulerProcess(t, bin, sa, config)
	var fill []string
	for i := range 16 {
		fill = append(fill, createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("f-%02d", i), SchedulerName: schedModeName, GPUs: 1}).Name)
	}
	waitBound(ctx, t, c, "default", fill, 60*time.Second)
	checkGPUsOnce(ctx, t, c)
	before := livePods(ctx, t, c)
	evicted := evictions(ctx, t, c, "")

	// An 8-GPU pod of priority 100: victims are evicted; the leader is
	// killed as soon as the first is gone.
	createPod(ctx, t, c, podSpec{Name: "p", SchedulerName: schedModeName, GPUs: 8, PriorityClassName: "prio-100"})
	if err := waitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		return len(livePods(ctx, t, c)) < len(before)+1, nil
	}); err != nil {
		t.Fatalf("no victim evicted for p: %v\n%s", err, describeEvents(ctx, c, "default"))
	}
	checkStandbyIdle(t, third, "the third scheduler")
	second.kill()
	killed = time.Now()
	t.Logf("leader killed with %d pods evicted so far", len(before)+1-len(livePods(ctx, t, c)))
	waitLeads(ctx, t, third, "the new standby", 30*time.Second)
	got := waitBound(ctx, t, c, "default", []string{"p"}, 60*time.Second)
	t.Logf("the new standby led and bound p %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	if len(indices(t, got["p"])) != 8 {
		t.Errorf("p: %s=%q, want 8 indices", indicesKey, got["p"].Annotations[indicesKey])
	}
	checkGPUsOnce(ctx, t, c)
	// A victim gang is evicted whole: the new leader evicts the members
	// the killed one had not (their pods carry the mark it wrote first).
	gangLeft := func() int {
		n := 0
		for name := range livePods(ctx, t, c) {
			if strings.HasPrefix(name, "g-") {
				n++
			}
		}
		return n
	}
	if err := waitFor(ctx, 30*time.Second, func(context.Context) (bool, error) { n := gangLeft(); return n == 0 || n == 16, nil }); err != nil {
		t.Errorf("the gang has %d of its 16 pods left: a victim evicted in part", gangLeft())
	}
	checkGPUsOnce(ctx, t, c)
	// Every pod that is gone was evicted (the apiserver's count of
	// eviction requests, whatever their answer: one the killed leader was
	// sending may have set the pod's deletionTimestamp and been cut off
	// before the pod was removed, which kubelet would finish; the killed
	// leader's events may be lost with it), and every pod left is bound.
	now := livePods(ctx, t, c)
	var victims []string
	for name := range before {
		if _, ok := now[name]; !ok {
			victims = append(victims, name)
		}
	}
	slices.Sort(victims)
	if n := evictions(ctx, t, c, "") - evicted; n != len(victims) {
		t.Errorf("%d pods gone (%v), %d evicted: pods lost otherwise", len(victims), victims, n)
	}
	for name, p := range now {
		if p.Spec.NodeName == "" {
			t.Errorf("%s is not bound", name)
		}
	}
	t.Logf("victims of p: %v", victims)
	checkNotForbidden(t, first, second, third)
}
