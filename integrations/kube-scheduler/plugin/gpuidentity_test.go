package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// withLostGPUs returns a copy of n whose device plugin offers alloc GPUs
// (nvidia.com/gpu.count stays), naming the unhealthy ones in the node
// annotation when failed is not empty.
func withLostGPUs(n *v1.Node, alloc int64, failed string) *v1.Node {
	c := n.DeepCopy()
	c.Status.Allocatable[DefaultGPUResource] = *resource.NewQuantity(alloc, resource.DecimalSI)
	if failed != "" {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[UnhealthyGPUsAnnotation] = failed
	}
	return c
}

// TestGPUFailureUsesNodeIdentity (issue 26, defect 8c): GPU 1 of n1 fails
// and the node names it; A runs on GPUs 0-3, B on 4-7. With
// deleteOnRecovery A, the job on the failed GPU, is deleted, not B (the
// job on the highest indices, which the plugin used to pick), live and
// after a restart.
func TestGPUFailureUsesNodeIdentity(t *testing.T) {
	n := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil)
	pods := []*v1.Pod{boundPod("a", "n1", 4, "0,1,2,3", nil), boundPod("b", "n1", 4, "4,5,6,7", nil)}
	for _, restart := range []bool{false, true} {
		h, io := newTestHost(t, n)
		h.args.DeleteOnRecovery = true
		io.pods = pods
		if !restart {
			h.cycle(context.Background())
		}
		io.nodes = []*v1.Node{withLostGPUs(n, 7, "1")}
		io.clock = io.clock.Add(time.Second)
		h.cycle(context.Background())
		h.cycle(context.Background())
		if !slices.Equal(io.deleted, []string{"a"}) {
			t.Errorf("restart %v: deleted %v, want [a] (the pod on the failed GPU 1); events %v", restart, io.deleted, io.events)
		}
	}
}

// TestGPUFailureUnknownIdentityNoGuess (issue 26, defect 8c): the node
// offers 7 of its 8 GPUs and does not say which failed. No pod is deleted
// by guess (A on 0-3 and B on 4-7 may each hold it), their pods are told
// that the mapping is unknown, and the lost GPU is taken out of a free
// one once there is one: after B ends, a 4-GPU pod does not fit (3 free).
func TestGPUFailureUnknownIdentityNoGuess(t *testing.T) {
	n := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io := newTestHost(t, n)
	h.args.DeleteOnRecovery = true
	ctx := context.Background()
	io.pods = []*v1.Pod{boundPod("a", "n1", 4, "0,1,2,3", nil), boundPod("b", "n1", 4, "4,5,6,7", nil)}
	h.cycle(ctx)
	io.nodes = []*v1.Node{withLostGPUs(n, 7, "")}
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	h.cycle(ctx)
	if len(io.deleted) > 0 {
		t.Fatalf("deleted %v by guess; events %v", io.deleted, io.events)
	}
	said := 0
	for _, e := range io.events {
		if strings.Contains(e, "which GPU") && strings.Contains(e, UnhealthyGPUsAnnotation) {
			said++
		}
	}
	if said != 2 {
		t.Errorf("%d events say the mapping is unknown, want 2 (a and b); events %v", said, io.events)
	}
	io.pods = []*v1.Pod{io.pods[0], schedPod("four", 4, nil), schedPod("three", 3, nil)} // b ends
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if _, ok := h.assignmentOf("uid-four"); ok {
		t.Error("a 4-GPU pod placed where 3 healthy GPUs are free")
	}
	if a, ok := h.assignmentOf("uid-three"); !ok || len(a.gpus) != 3 {
		t.Errorf("the 3-GPU pod not placed on the 3 healthy free GPUs: %+v %v; pending %v", a, ok, io.pending)
	}
}

// TestGPUFailureUnknownIdentityCertain: without the node's identity, a
// job that holds so many of the node's GPUs that the lost ones cannot all
// be elsewhere is certainly on one: it is recovered (here the only pod,
// on all 8 GPUs, of a node offering 6).
func TestGPUFailureUnknownIdentityCertain(t *testing.T) {
	n := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io := newTestHost(t, n)
	h.args.DeleteOnRecovery = true
	ctx := context.Background()
	io.pods = []*v1.Pod{boundPod("all", "n1", 8, "0,1,2,3,4,5,6,7", nil)}
	h.cycle(ctx)
	io.nodes = []*v1.Node{withLostGPUs(n, 6, "")}
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	h.cycle(ctx)
	if !slices.Equal(io.deleted, []string{"all"}) {
		t.Errorf("deleted %v, want [all]; events %v", io.deleted, io.events)
	}
}
