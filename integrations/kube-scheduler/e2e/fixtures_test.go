package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

const gpuResource v1.ResourceName = "nvidia.com/gpu"

// kubernetesClient is the typed clientset the tests use.
type kubernetesClient = kubernetes.Interface

func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} } //nolint:gosec // loopback test server

// nodeSpec is one GPU node as GPU feature discovery would label it.
type nodeSpec struct {
	Name    string
	GPUs    int
	Product string // nvidia.com/gpu.product
	Clique  string // nvidia.com/gpu.clique, optional
	Labels  map[string]string
	CPU     string // allocatable CPU, default "64"
	Memory  string // allocatable memory, default "512Gi"
}

// createNode creates a Ready node with GPU allocatable and GFD labels, then
// removes the taints the NodeRestriction/TaintNodesByCondition admission adds
// at creation (node.kubernetes.io/not-ready), which no node controller is
// running to remove.
func createNode(ctx context.Context, t testing.TB, c kubernetes.Interface, s nodeSpec) {
	t.Helper()
	cpu, mem := s.CPU, s.Memory
	if cpu == "" {
		cpu = "64"
	}
	if mem == "" {
		mem = "512Gi"
	}
	labels := map[string]string{
		"kubernetes.io/hostname": s.Name,
		"kubernetes.io/os":       "linux",
		"nvidia.com/gpu.count":   strconv.Itoa(s.GPUs),
		"nvidia.com/gpu.present": "true",
	}
	if s.Product != "" {
		labels["nvidia.com/gpu.product"] = s.Product
	}
	if s.Clique != "" {
		labels["nvidia.com/gpu.clique"] = s.Clique
	}
	for k, v := range s.Labels {
		labels[k] = v
	}
	res := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(cpu),
		v1.ResourceMemory: resource.MustParse(mem),
		v1.ResourcePods:   resource.MustParse("110"),
		gpuResource:       *resource.NewQuantity(int64(s.GPUs), resource.DecimalSI),
	}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: labels},
		Status: v1.NodeStatus{
			Capacity:    res,
			Allocatable: res,
			Phase:       v1.NodeRunning,
			Conditions: []v1.NodeCondition{{
				Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
		},
	}
	created, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", s.Name, err)
	}
	// Status is kept on create for nodes, but make sure of it.
	if created.Status.Allocatable.Name(gpuResource, resource.DecimalSI).Value() != int64(s.GPUs) {
		created.Status = node.Status
		if created, err = c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update node status %s: %v", s.Name, err)
		}
	}
	if len(created.Spec.Taints) > 0 {
		created.Spec.Taints = nil
		if _, err := c.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("untaint node %s: %v", s.Name, err)
		}
	}
}

// podSpec is a pod that requests whole GPUs.
type podSpec struct {
	Name          string
	Namespace     string
	SchedulerName string
	GPUs          int
	CPU           string // request, default 1
	Labels        map[string]string
	Annotations   map[string]string
	NodeSelector  map[string]string
	// PriorityClassName names a PriorityClass; the apiserver's Priority
	// admission sets the pod's priority from it.
	PriorityClassName string
	// PodGroup names the pod's PodGroup (spec.schedulingGroup).
	PodGroup string
	// Claims name ResourceClaims (in the pod's namespace) its container uses.
	Claims []string
	// Affinity is the pod's affinity, if any.
	Affinity *v1.Affinity
	// Spread is the pod's topology spread constraints, if any.
	Spread []v1.TopologySpreadConstraint
}

func createPod(ctx context.Context, t testing.TB, c kubernetes.Interface, s podSpec) *v1.Pod {
	t.Helper()
	cpu := s.CPU
	if cpu == "" {
		cpu = "1"
	}
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("1Gi")}
	lim := v1.ResourceList{}
	if s.GPUs > 0 {
		q := *resource.NewQuantity(int64(s.GPUs), resource.DecimalSI)
		req[gpuResource], lim[gpuResource] = q, q
	}
	ns := s.Namespace
	if ns == "" {
		ns = "default"
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns, Labels: s.Labels, Annotations: s.Annotations},
		Spec: v1.PodSpec{
			SchedulerName:             s.SchedulerName,
			NodeSelector:              s.NodeSelector,
			PriorityClassName:         s.PriorityClassName,
			Affinity:                  s.Affinity,
			TopologySpreadConstraints: s.Spread,
			Containers: []v1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: req, Limits: lim},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if s.PodGroup != "" {
		pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &s.PodGroup}
	}
	for _, cl := range s.Claims {
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: cl, ResourceClaimName: &cl})
		pod.Spec.Containers[0].Resources.Claims = append(pod.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: cl})
	}
	created, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", s.Name, err)
	}
	return created
}

func createNamespace(ctx context.Context, t testing.TB, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// waitBound waits until every named pod has a node and returns them.
func waitBound(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string, names []string, timeout time.Duration) map[string]*v1.Pod {
	t.Helper()
	got := map[string]*v1.Pod{}
	err := waitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			if _, ok := got[n]; ok {
				continue
			}
			p, err := c.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Spec.NodeName == "" {
				return false, nil
			}
			got[n] = p
		}
		return true, nil
	})
	if err != nil {
		var pending []string
		for _, n := range names {
			if _, ok := got[n]; !ok {
				pending = append(pending, n)
			}
		}
		t.Fatalf("pods not bound after %v: %v (%v)\n%s", timeout, pending, err, describeEvents(ctx, c, ns))
	}
	return got
}

// listPods returns the pods of ns sorted by name.
func listPods(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string) []v1.Pod {
	t.Helper()
	pl, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(pl.Items, func(a, b v1.Pod) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return pl.Items
}

// podEvents returns the events about one pod, oldest first.
func podEvents(ctx context.Context, c kubernetes.Interface, ns, pod string) ([]v1.Event, error) {
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": pod}.AsSelector().String()
	el, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	return el.Items, nil
}

func describeEvents(ctx context.Context, c kubernetes.Interface, ns string) string {
	el, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "events: " + err.Error()
	}
	s := "events:\n"
	for _, e := range el.Items {
		ts := e.EventTime.Time
		if ts.IsZero() {
			ts = e.LastTimestamp.Time
		}
		s += fmt.Sprintf("  %s %s %s/%s %s (x%d): %s\n", ts.Format("15:04:05.000"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, max(e.Count, 1), e.Message)
	}
	return s
}

// writeFile writes content to a file in a fresh temp dir and returns its path.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
