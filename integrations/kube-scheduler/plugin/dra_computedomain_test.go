package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// gb200Slices publishes one GB200 compute tray as NVIDIA's DRA drivers
// do: its 4 GPUs (driver gpu.nvidia.com) with the clique's cliqueId, and
// the tray's ComputeDomain devices (driver compute-domain.nvidia.com):
// channel-0 and daemon-0, type and id attributes.
func gb200Slices(node, clique string) []*resourceapi.ResourceSlice {
	str := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &v} }
	gpus := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com", ResourceVersion: "1"},
		Spec: resourceapi.ResourceSliceSpec{Driver: DefaultDRADriver, NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	for i := range 4 {
		idx := int64(i)
		gpus.Spec.Devices = append(gpus.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": str("gpu"), "index": {IntValue: &idx}, "productName": str("NVIDIA GB200"), "cliqueId": str(clique),
			"uuid": str(fmt.Sprintf("GPU-%s-%d", node, i)),
		}})
	}
	cd := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-compute-domain.nvidia.com", ResourceVersion: "1"},
		Spec: resourceapi.ResourceSliceSpec{Driver: DefaultDRAChannelDriver, NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	for _, typ := range []string{"channel", "daemon"} {
		id := int64(0)
		cd.Spec.Devices = append(cd.Spec.Devices, resourceapi.Device{Name: typ + "-0", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": str(typ), "id": {IntValue: &id}}})
	}
	return []*resourceapi.ResourceSlice{gpus, cd}
}

// channelClaim is the claim kube-controller-manager makes for a pod from
// the ResourceClaimTemplate NVIDIA's ComputeDomain controller creates: one
// request "channel" of the default channel class, with the
// ComputeDomainChannelConfig naming the domain.
func channelClaim(name, domain string) *resourceapi.ResourceClaim {
	c := claimFor(name, DefaultDRAChannelClass, 1)
	c.Spec.Devices.Requests[0].Name = "channel"
	c.Spec.Devices.Requests[0].Exactly.Count = 0
	c.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{Requests: []string{"channel"},
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: DefaultDRAChannelDriver,
			Parameters: runtime.RawExtension{Raw: []byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"` + domain + `","allocationMode":"Single"}`)}}}}}
	return c
}

// nvl72 is a fakeDRA with two cliques of trays trays each (gb-r1-tNN,
// gb-r2-tNN) and the nodes.
func nvl72(trays int) (*fakeDRA, []*v1.Node) {
	f := newFakeDRA()
	var nodes []*v1.Node
	for r := 1; r <= 2; r++ {
		for t := 1; t <= trays; t++ {
			name := fmt.Sprintf("gb-r%d-t%02d", r, t)
			f.slices = append(f.slices, gb200Slices(name, fmt.Sprintf("5e1f0c2a-0000-4000-8000-00000000000%d.%d", r, r))...)
			nodes = append(nodes, node(name, -1, nil))
		}
	}
	return f, nodes
}

// cdGang adds a gang of n pods, each with a claim of gpus GPUs (4 when
// omitted) and a channel claim of domain, without a topology label.
func cdGang(f *fakeDRA, io *fakeIO, gang, domain string, n int, gpus ...int) {
	for i := range n {
		m := fmt.Sprintf("%s-%d", gang, i)
		f.put(claimFor(m+"-gpus", DefaultDRADeviceClass, append(gpus, 4)[0]))
		f.put(channelClaim(m+"-channel", domain))
		p := draPodOf(m, m+"-gpus", m+"-channel")
		p.Labels = map[string]string{DefaultGangLabel: gang, DefaultGangSizeKey: fmt.Sprint(n)}
		io.pods = append(io.pods, p)
	}
}

// withGang is a DRA host on two racks of 4 trays after a cycle with
// ComputeDomain gang a of n pods (cdGang).
func withGang(t *testing.T, n int) (*host, *fakeIO, *fakeDRA, []*v1.Node) {
	f, nodes := nvl72(4)
	h, io := newDRAHost(t, f, nodes...)
	cdGang(f, io, "a", "cd-a-uid", n)
	h.cycle(context.Background())
	return h, io, f, nodes
}

// TestDRAComputeDomainGang: a gang whose pods claim a ComputeDomain
// channel goes whole into one NVLink clique (no topology label needed),
// and gpusched allocates, with the GPU claims, each member's channel
// claim: channel-0 of compute-domain.nvidia.com on the member's node. No
// device is in two claims. A second such gang that fits no clique's free
// GPUs waits, naming the NVLink domain limit.
func TestDRAComputeDomainGang(t *testing.T) {
	h, io, f, _ := withGang(t, 3)
	ctx := context.Background()
	if len(io.activated) != 3 {
		t.Fatalf("activated %v, want gang a; pending %v", io.activated, io.pending)
	}
	racks := map[string]bool{}
	owner := map[string]string{}
	for i := range 3 {
		m := fmt.Sprintf("a-%d", i)
		uid := types.UID("uid-" + m)
		_, node := claimed(t, f, m+"-gpus", uid)
		racks[node[:5]] = true
		c := f.claims["default/"+m+"-channel"]
		if c.Status.Allocation == nil {
			t.Fatalf("channel claim of %s not allocated: %+v", m, c.Status)
		}
		if len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].UID != uid || !slices.Contains(c.Finalizers, resourceapi.Finalizer) {
			t.Errorf("channel claim of %s: reserved for %+v, finalizers %v", m, c.Status.ReservedFor, c.Finalizers)
		}
		r := c.Status.Allocation.Devices.Results
		if len(r) != 1 || r[0].Driver != DefaultDRAChannelDriver || r[0].Pool != node || r[0].Device != "channel-0" || r[0].Request != "channel" {
			t.Errorf("channel claim of %s on %s: results %+v, want channel-0 of its node", m, node, r)
		}
		if ns := c.Status.Allocation.NodeSelector; ns == nil || ns.NodeSelectorTerms[0].MatchFields[0].Values[0] != node {
			t.Errorf("channel claim of %s: node selector %+v, want %s", m, ns, node)
		}
		for _, cl := range []string{m + "-gpus", m + "-channel"} {
			for _, r := range f.claims["default/"+cl].Status.Allocation.Devices.Results {
				k := r.Driver + "/" + r.Pool + "/" + r.Device
				if o, dup := owner[k]; dup {
					t.Errorf("device %s in claims %s and %s", k, o, cl)
				}
				owner[k] = cl
			}
		}
	}
	if len(racks) != 1 {
		t.Errorf("gang a spans racks %v, want one clique", racks)
	}
	bindDRA(h, io)

	// Gang b needs 4 trays: the rack a uses has 1 free, the other 4.
	cdGang(f, io, "b", "cd-b-uid", 4)
	h.cycle(ctx)
	bound := map[string]bool{}
	for _, p := range io.pods {
		if a, ok := h.assignmentOf(p.UID); ok && strings.HasPrefix(p.Name, "b-") {
			bound[a.node[:5]] = true
		}
	}
	if len(bound) != 1 {
		t.Fatalf("gang b on racks %v; activated %v, pending %v", bound, io.activated, io.pending)
	}
	bindDRA(h, io)

	// Gang c needs 2 trays: 1 is free in all.
	cdGang(f, io, "c", "cd-c-uid", 2)
	h.cycle(ctx)
	if slices.ContainsFunc(io.activated, func(s string) bool { return strings.HasPrefix(s, "c-") }) {
		t.Fatalf("gang c let through: %v", io.activated)
	}
	t.Logf("c-0 waits: %s", io.pending["c-0"])
	if why := io.pending["c-0"]; !strings.Contains(why, "nvlink") {
		t.Errorf("c-0 waits with %q, want the NVLink clique limit", why)
	}
	for i := range 2 {
		if c := f.claims[fmt.Sprintf("default/c-%d-channel", i)]; c.Status.Allocation != nil {
			t.Errorf("channel claim of waiting c-%d written", i)
		}
	}
}

// TestDRAComputeDomainOneChannelPerNode: NVIDIA's driver publishes one
// IMEX channel per node. A pod with a channel claim goes only to a node
// whose channel no claim holds (not the half-used node packing would
// choose); a gang whose pods take half a tray or less waits, saying why,
// and nothing is written for it.
func TestDRAComputeDomainOneChannelPerNode(t *testing.T) {
	f, nodes := nvl72(2)
	h, io := newDRAHost(t, f, nodes...)
	ctx := context.Background()
	var at []string
	for _, name := range []string{"s1", "s2"} {
		f.put(claimFor(name+"-gpus", DefaultDRADeviceClass, 2))
		f.put(channelClaim(name+"-channel", "cd-"+name))
		io.pods = append(io.pods, draPodOf(name, name+"-gpus", name+"-channel"))
		h.cycle(ctx)
		a, ok := h.assignmentOf(types.UID("uid-" + name))
		if !ok {
			t.Fatalf("%s not placed: pending %v", name, io.pending)
		}
		if r := f.claims["default/"+name+"-channel"].Status.Allocation; r == nil || r.Devices.Results[0].Pool != a.node {
			t.Fatalf("%s on %s: channel claim %+v", name, a.node, r)
		}
		at = append(at, a.node)
		bindDRA(h, io)
	}
	if at[0] == at[1] {
		t.Errorf("s1 and s2 both on %s, whose one channel s1 holds", at[0])
	}

	writes := len(f.writes)
	cdGang(f, io, "h", "cd-h", 2, 2)
	h.cycle(ctx)
	if _, ok := h.assignmentOf("uid-h-0"); ok || len(f.writes) != writes {
		t.Fatalf("half-tray gang placed (writes %v)", f.writes[writes:])
	}
	if why := io.pending["h-0"]; !strings.Contains(why, "one IMEX channel per node") {
		t.Errorf("h-0 waits with %q", why)
	}
}

// TestDRAComputeDomainRestart: a restarted scheduler restores a bound
// ComputeDomain gang from its claims, rewrites none of them, and places
// the next gang on the other trays.
func TestDRAComputeDomainRestart(t *testing.T) {
	h, io, f, nodes := withGang(t, 4)
	ctx := context.Background()
	bindDRA(h, io)
	for i, p := range io.pods {
		q := p.DeepCopy()
		delete(q.Annotations, DefaultGPUIndicesAnnotation)
		io.pods[i] = q
	}
	before := map[string]string{}
	for k, c := range f.claims {
		before[k] = c.ResourceVersion
	}

	h2, io2 := newDRAHost(t, f, nodes...)
	io2.pods = slices.Clone(io.pods)
	cdGang(f, io2, "b", "cd-b-uid", 4)
	h2.cycle(ctx)
	if st, ok := h2.s.Job("default/gang/a"); !ok || st.State.String() != "running" {
		t.Fatalf("gang a not restored as running: %+v", st)
	}
	for k, rv := range before {
		if f.claims[k].ResourceVersion != rv {
			t.Errorf("claim %s rewritten at restart", k)
		}
	}
	racks := map[string]string{}
	for _, p := range io2.pods {
		node := p.Spec.NodeName
		if a, ok := h2.assignmentOf(p.UID); ok && node == "" {
			node = a.node
		}
		if node == "" {
			t.Fatalf("%s not placed: pending %v", p.Name, io2.pending)
		}
		racks[p.Name[:1]] += node[:5] + " "
		if !strings.HasPrefix(p.Name, "b-") {
			continue
		}
		if r := f.claims["default/"+p.Name+"-channel"].Status.Allocation; r == nil || r.Devices.Results[0].Pool != node {
			t.Errorf("%s on %s: channel claim %+v", p.Name, node, r)
		}
	}
	if racks["a"] == racks["b"] || strings.Count(racks["b"], racks["b"][:6]) != 4 {
		t.Errorf("gangs on racks %v, want one each", racks)
	}
}

// TestDRAComputeDomainDevicePluginGPUs: pods whose GPUs come from the
// device plugin (nvidia.com/gpu, as in NVIDIA's ComputeDomain examples)
// and whose channel comes from a ComputeDomain claim: the gang still goes
// into one clique (GPU feature discovery's clique label) and gpusched
// allocates the channel claims.
func TestDRAComputeDomainDevicePluginGPUs(t *testing.T) {
	f, dra := nvl72(3)
	f.slices = slices.DeleteFunc(f.slices, func(s *resourceapi.ResourceSlice) bool { return s.Spec.Driver == DefaultDRADriver })
	var nodes []*v1.Node
	for _, n := range dra {
		nodes = append(nodes, gpuNode(n.Name, 4, "NVIDIA-GB200", map[string]string{DefaultGPUCliqueLabel: "5e1f0c2a-0000-4000-8000-00000000000" + n.Name[4:5] + "." + n.Name[4:5]}))
	}
	h, io := newDRAHost(t, f, nodes...)
	for i := range 3 {
		m := fmt.Sprintf("w-%d", i)
		f.put(channelClaim(m+"-channel", "cd-w"))
		p := schedPod(m, 4, map[string]string{DefaultGangLabel: "w", DefaultGangSizeKey: "3"})
		c := m + "-channel"
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "imex", ResourceClaimName: &c}}
		io.pods = append(io.pods, p)
	}
	h.cycle(context.Background())
	racks := map[string]bool{}
	for i := range 3 {
		m := fmt.Sprintf("w-%d", i)
		a, ok := h.assignmentOf(types.UID("uid-" + m))
		if !ok {
			t.Fatalf("%s not placed: pending %v", m, io.pending)
		}
		racks[a.node[:5]] = true
		r := f.claims["default/"+m+"-channel"].Status.Allocation
		if r == nil || r.Devices.Results[0].Pool != a.node || r.Devices.Results[0].Device != "channel-0" {
			t.Errorf("%s on %s: channel claim %+v", m, a.node, r)
		}
	}
	if len(racks) != 1 {
		t.Errorf("gang on racks %v, want one clique", racks)
	}
}

// TestDRAComputeDomainChannelPlan: two pods of one batch on one tray (one
// channel): the second gets no channel, before anything is written.
func TestDRAComputeDomainChannelPlan(t *testing.T) {
	h, io, f, _ := withGang(t, 2)
	writes := len(f.writes)
	a0, _ := h.assignmentOf("uid-a-0")
	pods := []*v1.Pod{io.pods[0], io.pods[1]}
	// A fresh claim for a-1 (not yet holding a channel) planned on a-0's tray.
	c := f.claims["default/a-1-channel"].DeepCopy()
	c.Status = resourceapi.ResourceClaimStatus{}
	f.put(c)
	picks, failed := h.dra.channelPlan(pods, func(uid types.UID) (assignment, bool) { return a0, true })
	if picks["default/a-0-channel"] != "channel-0" || channelNode(failed[io.pods[1]]) != a0.node || failed[io.pods[0]] != nil {
		t.Errorf("picks %v, failed %v: want a-0 to keep channel-0 of %s and a-1 none", picks, failed, a0.node)
	}
	if len(f.writes) != writes {
		t.Errorf("channelPlan wrote %v", f.writes[writes:])
	}
}

// TestDRAComputeDomainPodsPinnedToClique: pods of one ComputeDomain that
// are not one gang, placed one by one, all go to the clique of the first:
// once its 4 trays are taken, the fifth waits though the other rack is
// free.
func TestDRAComputeDomainPodsPinnedToClique(t *testing.T) {
	f, nodes := nvl72(4)
	h, io := newDRAHost(t, f, nodes...)
	ctx := context.Background()
	rack := ""
	for i := range 5 {
		m := fmt.Sprintf("d%d", i)
		f.put(claimFor(m+"-gpus", DefaultDRADeviceClass, 4))
		f.put(channelClaim(m+"-channel", "cd-x"))
		io.pods = append(io.pods, draPodOf(m, m+"-gpus", m+"-channel"))
		h.cycle(ctx)
		a, ok := h.assignmentOf(types.UID("uid-" + m))
		if i == 4 {
			if ok {
				t.Errorf("d4 placed on %s; its ComputeDomain's clique is full", a.node)
			}
			if why := io.pending["d4"]; !strings.Contains(why, "runs in NVLink clique") {
				t.Errorf("d4 waits with %q, want its ComputeDomain's clique named", why)
			}
			break
		}
		if !ok {
			t.Fatalf("%s not placed: pending %v", m, io.pending)
		}
		if rack == "" {
			rack = a.node[:5]
		} else if a.node[:5] != rack {
			t.Errorf("%s on %s, away from its ComputeDomain's rack %s", m, a.node, rack)
		}
		bindDRA(h, io)
	}
}

// TestDRAComputeDomainGangPartlyBound: a cycle that runs while only one
// member of a ComputeDomain gang is bound sees the gang as before (its
// bound member requires one NVLink clique like the others, so the
// members agree on the topology): the job is not declared invalid, and
// the others bind on their assignments. (Seen in e2e TestDRAGB200: "gang
// members disagree on size, minimum or topology (big-0 differs)".)
func TestDRAComputeDomainGangPartlyBound(t *testing.T) {
	h, io, _, _ := withGang(t, 3)
	if len(io.activated) != 3 {
		t.Fatalf("activated %v, want gang a; pending %v", io.activated, io.pending)
	}
	a0, _ := h.assignmentOf(io.pods[0].UID)
	b := io.pods[0].DeepCopy()
	b.Spec.NodeName = a0.node
	io.pods[0] = b
	h.cycle(context.Background())
	for _, p := range io.pods {
		if _, ok := h.assignmentOf(p.UID); !ok {
			t.Errorf("%s lost its assignment with a-0 bound: %q", p.Name, io.pending[p.Name])
		}
	}
	if why := io.pending["a-1"]; strings.Contains(why, "disagree") {
		t.Errorf("a-1: %q", why)
	}
}
