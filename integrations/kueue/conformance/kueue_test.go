package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const kueueGroup = "kueue.x-k8s.io"

var (
	crdGVR      = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	workloadGVR = gvr("workloads")
	cqGVR       = gvr("clusterqueues")
)

func gvr(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: kueueGroup, Version: "v1beta2", Resource: resource}
}

var resources = map[string]string{
	"ClusterQueue": "clusterqueues", "Cohort": "cohorts", "LocalQueue": "localqueues", "ResourceFlavor": "resourceflavors",
	"Workload": "workloads", "WorkloadPriorityClass": "workloadpriorityclasses", "Topology": "topologies",
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// kueueCRDs returns the directory of Kueue's CRDs: $GPUSCHED_KUEUE_CRDS,
// else config/components/crd/bases of the Kueue module ../manager builds.
func kueueCRDs(t *testing.T) string {
	if d := os.Getenv("GPUSCHED_KUEUE_CRDS"); d != "" {
		return d
	}
	out, err := goCmd("../manager", "mod", "download", "-json", "sigs.k8s.io/kueue")
	if err != nil {
		t.Skipf("Kueue conformance: cannot find Kueue's module for its CRDs (set GPUSCHED_KUEUE_CRDS): %v", err)
	}
	var m struct{ Dir, Version string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Skipf("Kueue conformance: go mod download said %q", out)
	}
	return filepath.Join(m.Dir, "config", "components", "crd", "bases")
}

// kueueVersion is the Kueue version ../manager requires.
func kueueVersion() string {
	out, err := goCmd("../manager", "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/kueue")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// managerBinary returns $GPUSCHED_KUEUE_MANAGER, or builds ../manager
// (skipping the test when it cannot).
func managerBinary(t *testing.T) string {
	if b := os.Getenv("GPUSCHED_KUEUE_MANAGER"); b != "" {
		return b
	}
	bin := filepath.Join(t.TempDir(), "kueue-manager")
	t.Logf("building Kueue's manager (../manager); set GPUSCHED_KUEUE_MANAGER to skip this")
	if _, err := goCmd("../manager", "build", "-ldflags=-s -w", "-o", bin, "."); err != nil {
		t.Skipf("Kueue conformance: cannot build Kueue's manager: %v", err)
	}
	return bin
}

// installCRDs creates every CRD of dir and waits until they are
// established.
func (a *apiserver) installCRDs(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Skipf("Kueue conformance: no CRDs in %s", dir)
	}
	ctx := context.Background()
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeAll(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, o := range objs {
			if _, err := a.dyn.Resource(crdGVR).Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatalf("CRD %s: %v", o.GetName(), err)
			}
			names = append(names, o.GetName())
		}
	}
	for _, n := range names {
		err := poll(ctx, time.Minute, func() (bool, error) {
			o, err := a.dyn.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return condition(o, "Established") == "True", nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", n, err)
		}
	}
}

func decodeAll(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// condition returns the status of an object's condition, or "".
func condition(o *unstructured.Unstructured, typ string) string {
	c := findCondition(o, typ)
	if c == nil {
		return ""
	}
	s, _ := c["status"].(string)
	return s
}

func findCondition(o *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// manager is Kueue's manager process.
type manager struct {
	cmd *exec.Cmd
	log string
}

func startManager(t *testing.T, bin, kubeconfig string, fairSharing bool) *manager {
	t.Helper()
	log := filepath.Join(t.TempDir(), "kueue-manager.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-zap-log-level=info"}
	if fairSharing {
		args = append(args, "-fair-sharing")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Skipf("Kueue conformance: cannot start Kueue's manager: %v", err)
	}
	m := &manager{cmd: cmd, log: log}
	t.Cleanup(func() { m.stop(); f.Close() })
	return m
}

func (m *manager) stop() {
	if m.cmd.Process == nil || m.cmd.ProcessState != nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
}

// tail returns the end of the manager's log.
func (m *manager) tail() string {
	data, _ := os.ReadFile(m.log)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// createConfig creates a scenario's Kueue objects (not the manager
// Configuration, which is a flag of the manager) and waits until its
// ClusterQueues are active.
func (a *apiserver) createConfig(ctx context.Context, s *Scenario) error {
	objs, err := decodeAll([]byte(s.Config + s.LocalQueues()))
	if err != nil {
		return err
	}
	for _, o := range objs {
		if !strings.HasPrefix(o.GetAPIVersion(), kueueGroup+"/") {
			continue
		}
		res := resources[o.GetKind()]
		var err error
		if ns := o.GetNamespace(); ns != "" {
			_, err = a.dyn.Resource(gvr(res)).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
		} else {
			_, err = a.dyn.Resource(gvr(res)).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	for _, q := range s.Queues {
		err := poll(ctx, time.Minute, func() (bool, error) {
			o, err := a.dyn.Resource(cqGVR).Get(ctx, q, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return condition(o, "Active") == "True", nil
		})
		if err != nil {
			return fmt.Errorf("ClusterQueue %s not active: %w", q, err)
		}
	}
	return nil
}

// workloadObject is a Workload of w.Pods pods of w.GPUs GPUs each.
func workloadObject(w Workload) *unstructured.Unstructured {
	gpus := resource.NewQuantity(int64(w.GPUs), resource.DecimalSI).String()
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kueueGroup + "/v1beta2",
		"kind":       "Workload",
		"metadata":   map[string]any{"name": w.Name, "namespace": Namespace},
		"spec": map[string]any{
			"queueName": w.Queue,
			"priority":  int64(w.Priority),
			"podSets": []any{map[string]any{
				"name":  "main",
				"count": int64(w.Pods),
				"template": map[string]any{"spec": map[string]any{
					"restartPolicy": "Never",
					"containers": []any{map[string]any{
						"name": "c", "image": "registry.k8s.io/pause:3.10",
						"resources": map[string]any{"requests": map[string]any{"nvidia.com/gpu": gpus}},
					}},
				}},
			}},
		},
	}}
}

// kueueRun drives Kueue through a scenario.
type kueueRun struct {
	a         *apiserver
	s         *Scenario
	names     []string // workloads submitted so far
	finished  map[string]bool
	preempted []string
}

// setCondition sets a condition in a workload's status and, with
// clearAdmission, drops its admission (what a job integration does when
// it has stopped an evicted job, and Kueue's own tests do by hand).
func setCondition(o *unstructured.Unstructured, typ, status, reason string, clearAdmission bool) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	now := time.Now().UTC().Format(time.RFC3339)
	c := map[string]any{"type": typ, "status": status, "reason": reason, "message": "by the conformance harness", "lastTransitionTime": now}
	replaced := false
	for i, x := range conds {
		if m, ok := x.(map[string]any); ok && m["type"] == typ {
			conds[i], replaced = c, true
		}
	}
	if !replaced {
		conds = append(conds, c)
	}
	if clearAdmission {
		for i, x := range conds {
			if m, ok := x.(map[string]any); ok && m["type"] == "Admitted" && m["status"] == "True" {
				conds[i] = map[string]any{"type": "Admitted", "status": "False", "reason": "NoReservation", "message": "by the conformance harness", "lastTransitionTime": now}
			}
		}
		unstructured.RemoveNestedField(o.Object, "status", "admission")
	}
	_ = unstructured.SetNestedSlice(o.Object, conds, "status", "conditions")
}

// updateStatus applies fn to a workload's status, retrying conflicts.
func (r *kueueRun) updateStatus(ctx context.Context, name string, fn func(o *unstructured.Unstructured) bool) error {
	wc := r.a.dyn.Resource(workloadGVR).Namespace(Namespace)
	for range 20 {
		o, err := wc.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !fn(o) {
			return nil
		}
		if _, err = wc.UpdateStatus(ctx, o, metav1.UpdateOptions{}); err == nil {
			return nil
		} else if !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("workload %s: status update kept conflicting", name)
}

// settle waits until what the report compares has not changed for a
// while (longer while a workload is still unprocessed), finishing the evictions of preempted workloads as
// a job integration would.
func (r *kueueRun) settle(ctx context.Context) error {
	wc := r.a.dyn.Resource(workloadGVR).Namespace(Namespace)
	var last string
	stableSince := time.Now()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		list, err := wc.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var fp strings.Builder
		processed := true
		var evicted []string
		for i := range list.Items {
			o := &list.Items[i]
			if !slices.Contains(r.names, o.GetName()) || r.finished[o.GetName()] {
				continue
			}
			qr := condition(o, "QuotaReserved")
			fmt.Fprintf(&fp, "%s:%s;", o.GetName(), qr)
			if qr == "" {
				processed = false
			}
			if condition(o, "Evicted") == "True" && qr == "True" {
				evicted = append(evicted, o.GetName())
			}
		}
		sort.Strings(evicted)
		for _, name := range evicted {
			err := r.updateStatus(ctx, name, func(o *unstructured.Unstructured) bool {
				if condition(o, "QuotaReserved") != "True" {
					return false
				}
				setCondition(o, "QuotaReserved", "False", "Pending", true)
				return true
			})
			if err != nil {
				return err
			}
			r.preempted = append(r.preempted, name)
		}
		// What the report compares (not resource versions: Kueue keeps
		// rewriting the status of a StrictFIFO head it retries).
		obs, err := r.observe(ctx)
		if err != nil {
			return err
		}
		fp.WriteString(obs.String())
		// A workload Kueue has not looked at yet has no QuotaReserved
		// condition; one behind a StrictFIFO head never gets one, so
		// unprocessed workloads only make the wait longer.
		quiet := 1500 * time.Millisecond
		if !processed {
			quiet = 5 * time.Second
		}
		if fp.String() != last || len(evicted) > 0 {
			last, stableSince = fp.String(), time.Now()
		} else if time.Since(stableSince) > quiet {
			return nil
		}
		time.Sleep(150 * time.Millisecond)
	}
	return errors.New("Kueue did not settle in 90s")
}

// observe reads what Kueue did.
func (r *kueueRun) observe(ctx context.Context) (Observation, error) {
	obs := Observation{Flavors: map[string]string{}, Borrowed: map[string]int64{}, Preempted: slices.Clone(r.preempted)}
	list, err := r.a.dyn.Resource(workloadGVR).Namespace(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return obs, err
	}
	for i := range list.Items {
		o := &list.Items[i]
		if !slices.Contains(r.names, o.GetName()) || r.finished[o.GetName()] || condition(o, "QuotaReserved") != "True" {
			continue
		}
		obs.Admitted = append(obs.Admitted, o.GetName())
		psa, _, _ := unstructured.NestedSlice(o.Object, "status", "admission", "podSetAssignments")
		for _, p := range psa {
			if m, ok := p.(map[string]any); ok {
				if fl, ok := m["flavors"].(map[string]any); ok {
					if f, ok := fl["nvidia.com/gpu"].(string); ok {
						obs.Flavors[o.GetName()] = f
					}
				}
			}
		}
	}
	sort.Strings(obs.Admitted)
	for _, q := range r.s.Queues {
		o, err := r.a.dyn.Resource(cqGVR).Get(ctx, q, metav1.GetOptions{})
		if err != nil {
			return obs, err
		}
		fus, _, _ := unstructured.NestedSlice(o.Object, "status", "flavorsReservation")
		var b int64
		for _, fu := range fus {
			m, _ := fu.(map[string]any)
			rs, _ := m["resources"].([]any)
			for _, x := range rs {
				rm, _ := x.(map[string]any)
				if rm["name"] != "nvidia.com/gpu" {
					continue
				}
				if s, ok := rm["borrowed"].(string); ok {
					if qty, err := resource.ParseQuantity(s); err == nil {
						b += qty.Value()
					}
				}
			}
		}
		if b != 0 {
			obs.Borrowed[q] = b
		}
	}
	return obs, nil
}

// runKueue plays a scenario on Kueue and returns its observation after
// every step.
func runKueue(ctx context.Context, a *apiserver, s *Scenario) ([]Observation, error) {
	if err := a.createConfig(ctx, s); err != nil {
		return nil, err
	}
	r := &kueueRun{a: a, s: s, finished: map[string]bool{}}
	wc := a.dyn.Resource(workloadGVR).Namespace(Namespace)
	var out []Observation
	for _, st := range s.Steps {
		for _, w := range st.Submit {
			if _, err := wc.Create(ctx, workloadObject(w), metav1.CreateOptions{}); err != nil {
				return nil, fmt.Errorf("workload %s: %w", w.Name, err)
			}
			r.names = append(r.names, w.Name)
			if err := r.settle(ctx); err != nil {
				return nil, err
			}
		}
		for _, name := range st.Finish {
			err := r.updateStatus(ctx, name, func(o *unstructured.Unstructured) bool {
				setCondition(o, "Finished", "True", "Succeeded", false)
				return true
			})
			if err != nil {
				return nil, err
			}
			r.finished[name] = true
		}
		if err := r.settle(ctx); err != nil {
			return nil, err
		}
		o, err := r.observe(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// ensureNamespace creates the scenarios' namespace.
func (a *apiserver) ensureNamespace(ctx context.Context) error {
	_, err := a.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
