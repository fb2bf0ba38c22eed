package plugin

import (
	"crypto/sha1"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Several shares of GPUs in one pod (docs/dra.md).
//
// Per KEP-5075 (consumable capacity), a device that allows multiple
// allocations may be given to several requests of one claim, and several
// times to one request of count n, each time as a share of its own (a
// result with its own shareID and consumed capacity); a distinctAttribute
// constraint is how a claim asks for distinct devices. So a pod whose GPU
// requests are all shares may ask for several: a request of count n,
// several requests, several claims. As for several MIG devices
// (dra_migs.go), such a pod is a job of one task per share (in the task
// group of its milli-GPU) and one CPU task, on one host; the library
// places each share on a GPU with room for it (two shares may go to one
// GPU, as kube's allocator may give them), keeping a GPU's shares at
// most one GPU, so no capacity is ever over-committed. The pod's
// assignment holds a GPU and a part ("milli:N") per share, in request
// order; each result names its GPU, with a shareID of its own. A restart
// reads the shares back from the claims' allocations
// (draSharesHeldAnnotation). A distinctAttribute constraint over shares
// is checked when the claims are written, as for MIG devices.

// draSharesHeldAnnotation carries, on a pod of several shares as a cycle
// sees it (never written to the apiserver), the GPUs its claims'
// allocations give its shares: "GPU,…", one per share of its
// draPartAnnotation ("milli:N,…"), in the same order.
const draSharesHeldAnnotation = "gpusched.io/dra-shares-held"

// sharesPart returns the part of a pod whose requests parts are all
// shares: the share itself for one request of count 1, else one share
// per device its requests ask for (shares).
func sharesPart(parts []*gpuRequest) *partRequest {
	if len(parts) == 1 && parts[0].count == 1 {
		return parts[0].part
	}
	p := &partRequest{}
	for _, r := range parts {
		for range r.count {
			p.shares = append(p.shares, r.part)
		}
	}
	return p
}

// sharesPod finishes dp, a pod of several shares (part.shares), as the
// cycle sees it (out, its copy): the milli-GPU of each share, the nodes
// it may use and, when its claims are allocated on heldOn, the GPUs they
// name.
func (d *drat) sharesPod(dp *draPod, out *v1.Pod, part *partRequest, claims []*resourceapi.ResourceClaim, heldOn string, nodes []string) *draPod {
	millis := make([]string, len(part.shares))
	for i, s := range part.shares {
		millis[i] = strconv.Itoa(max(d.shareMilli(s), 1))
	}
	out.Annotations[draPartAnnotation] = "milli:" + strings.Join(millis, ",")
	delete(out.Annotations, draSharesHeldAnnotation)
	onlyOn(out, nodes)
	if held, ok := d.heldShares(dp, claims, heldOn); ok {
		out.Annotations[draSharesHeldAnnotation] = held
	}
	dp.out = out
	return dp
}

// heldShares returns the GPUs on node that the allocations of dp's claims
// give its shares, "GPU,…" in the order of its requests; ok is false
// unless every share of its requests is named.
func (d *drat) heldShares(dp *draPod, claims []*resourceapi.ResourceClaim, node string) (string, bool) {
	var held []string
	for _, c := range dp.claims {
		k := slices.IndexFunc(claims, func(cl *resourceapi.ResourceClaim) bool { return cl.Name == c.name })
		if k < 0 || claims[k].Status.Allocation == nil {
			return "", false
		}
		idx, ok := d.indicesOf(claims[k], node, c.requests) // (dra.go: a GPU per result, as many as each request's count)
		if !ok {
			return "", false
		}
		for _, i := range idx {
			held = append(held, strconv.Itoa(i))
		}
	}
	return strings.Join(held, ","), true
}

// sharesDemand returns the milli-GPU of each share of p, a pod of
// several shares as the cycle sees it ("250,500"); "" for any other pod.
func sharesDemand(p *v1.Pod) string {
	m, ok := strings.CutPrefix(p.Annotations[draPartAnnotation], "milli:")
	if !ok || !strings.Contains(m, ",") {
		return ""
	}
	return m
}

// shareTasks returns the task demands of a pod of several shares
// demanding d: its CPU and memory in one task (none when it asks for
// neither), then one task per share.
func shareTasks(d demand) []demand {
	var out []demand
	if d.cpuMilli > 0 || d.memoryMiB > 0 {
		out = append(out, demand{cpuMilli: d.cpuMilli, memoryMiB: d.memoryMiB})
	}
	for _, m := range strings.Split(d.shares, ",") {
		n, _ := strconv.Atoi(m)
		out = append(out, demand{milli: max(n, 1), models: d.models})
	}
	return out
}

// severalHeld returns what p, a pod of several MIG devices or shares as
// the cycle sees it, holds: its MIG devices (migsOfPod), or its shares as
// heldMIG of profile "milli:N" (start 0); nil unless its claims name
// them all.
func severalHeld(p *v1.Pod) []heldMIG {
	if _, held := migsOfPod(p); held != nil {
		return held
	}
	millis := strings.Split(sharesDemand(p), ",")
	at := strings.Split(p.Annotations[draSharesHeldAnnotation], ",")
	if millis[0] == "" || len(at) != len(millis) {
		return nil
	}
	held := make([]heldMIG, len(at))
	for i, x := range at {
		gpu, err := strconv.Atoi(x)
		if err != nil {
			return nil
		}
		held[i] = heldMIG{profile: "milli:" + millis[i], gpu: gpu}
	}
	return held
}

// heldSeveralClaim returns the claim of the next MIG device or share of
// group g that a pod of several (held: severalHeld) holds on host hid and
// taken does not mark, marking it; ok is false when there is none.
func heldSeveralClaim(c *topology.Cluster, hid topology.HostID, g workload.TaskGroup, held []heldMIG, taken []bool) (topology.Claim, bool) {
	if g.GPUMilli == 0 {
		return heldMIGClaim(c, hid, g, held, taken) // (its CPU task too)
	}
	cl := topology.Claim{Host: hid, CPUMilli: g.CPUMilli, MemoryMiB: g.MemoryMiB}
	first, count := c.HostGPUs(hid)
	want := "milli:" + strconv.Itoa(g.GPUMilli)
	for i, m := range held {
		if taken[i] || m.profile != want || m.gpu < 0 || m.gpu >= count {
			continue
		}
		taken[i] = true
		cl.GPUs = []topology.GPUClaim{{GPU: first + topology.GPUID(m.gpu), Kind: topology.ClaimShare, Milli: int32(g.GPUMilli)}}
		return cl, true
	}
	return cl, false
}

// heldSeveralClaims returns the MIG devices or shares on host hid that p,
// a pod of several as the cycle sees it, holds; nil when it holds none or
// not all.
func heldSeveralClaims(c *topology.Cluster, hid topology.HostID, p *v1.Pod) []topology.GPUClaim {
	if sharesDemand(p) == "" {
		return heldMIGClaims(c, hid, p)
	}
	held := severalHeld(p)
	taken := make([]bool, len(held))
	var out []topology.GPUClaim
	for _, m := range held {
		milli, _ := strconv.Atoi(strings.TrimPrefix(m.profile, "milli:"))
		cl, ok := heldSeveralClaim(c, hid, workload.TaskGroup{GPUMilli: milli}, held, taken)
		if !ok {
			return nil
		}
		out = append(out, cl.GPUs...)
	}
	return out
}

// partName names what a task of g takes of a GPU: "MIG device PROFILE"
// or "share of N milli-GPU".
func partName(g workload.TaskGroup) string {
	if g.GPUMilli > 0 {
		return fmt.Sprintf("share of %d milli-GPU", g.GPUMilli)
	}
	return "MIG device " + g.MIGProfile
}

// shareID is the shareID of result i of claim c (reserved for the pod of
// UID c.uid): a UUID (RFC 4122 form, as the apiserver requires) made from
// the pod, the claim and i, so that the shares of one device never have
// one ID (a pod's shares are its claims' results) and writing the claim
// again gives the same one.
func shareID(c gpuClaim, i int) types.UID {
	sum := sha1.Sum([]byte(string(c.uid) + "/" + c.ns + "/" + c.name + "/" + strconv.Itoa(i)))
	sum[6] = sum[6]&0x0f | 0x50 // version 5 (name-based, SHA-1)
	sum[8] = sum[8]&0x3f | 0x80 // RFC 4122 variant
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
}
