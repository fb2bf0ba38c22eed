package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpusched/gpusched/internal/devname"
)

// ComputeDomains: multi-node NVLink (GB200 NVL72) in scheduler mode
// (docs/dra.md, "ComputeDomains").
//
// NVIDIA's DRA driver gives a workload spread over the trays of an NVL72
// rack its IMEX channel through a ComputeDomain (resource.nvidia.com): the
// driver's controller creates, for each ComputeDomain, a
// ResourceClaimTemplate with one request "channel" of the DeviceClass
// compute-domain-default-channel.nvidia.com (device.driver ==
// 'compute-domain.nvidia.com', type 'channel', id 0) and an opaque
// ComputeDomainChannelConfig naming the domain; the pods of the workload
// name that template in their resourceClaims. The driver's kubelet plugin
// publishes on each node one such channel device, channel-0 (besides
// daemon-0, for the IMEX daemon's own pods), so one pod per node holds a
// channel of a ComputeDomain.
//
// gpusched makes such a claim ("channel claim") part of its decision:
//
//   - a gang (gpusched.io/gang) whose pods have channel claims and no
//     required topology must fit one NVLink clique (gang-topology
//     "nvlink": one NVL72 rack, the nodes whose GPUs share a cliqueId);
//     a gang no clique has room for waits, saying so;
//   - a pod with a channel claim is planned only on nodes publishing a
//     channel device no claim holds (the node label IMEXChannelLabel on
//     the nodes as the cycle sees them, and a node selector on the pod as
//     the cycle sees it);
//   - pods of one ComputeDomain that are not one gang stay in the clique
//     where the domain already has a pod (pinDomains);
//   - when its job is bound, each channel claim is written with the GPU
//     claims, in the same step: channel-0 of the pod's node, reserved for
//     the pod; two members on one node with one channel are refused
//     before anything is written, and the node excluded for the job.
//
// The ComputeDomain object itself is not read: its controller and the
// IMEX daemons it runs need nothing from the scheduler.

// NVIDIA's ComputeDomain devices.
const (
	// DefaultDRAChannelDriver is the driver of NVIDIA's ComputeDomain
	// devices (IMEX channels and daemons).
	DefaultDRAChannelDriver = "compute-domain.nvidia.com"
	// DefaultDRAChannelClass is the DeviceClass of the IMEX channel the
	// ResourceClaimTemplate of a ComputeDomain requests.
	DefaultDRAChannelClass = "compute-domain-default-channel.nvidia.com"
	// IMEXChannelLabel is set ("free") on a node, as a cycle sees it
	// (never written to the apiserver), that publishes an IMEX channel
	// device no ResourceClaim holds; pods with channel claims are planned
	// only on such nodes.
	IMEXChannelLabel = "gpusched.io/imex-channel"
)

// cdChannels is the ComputeDomain part of the DRA concern: the channel
// devices of each node and which are free. Its methods run on the cycle
// goroutine.
type cdChannels struct {
	driver, class string
	// Args.GangLabel, GangSizeKey, GangTopologyKey
	gangLabel, gangSize, topology string

	sliceKey string
	nodes    map[string]*chanNode // node → its channel devices
	// free per node: the channel devices no allocated claim names (view).
	free      map[string][]string
	nodeCache map[string]chanNodeCopy
	// pinned: the pods pinDomains pinned to a clique, by UID; held: those
	// it left out, with why (their clique has no free channel).
	pinned map[types.UID]pinnedPod
	held   []podEvent
}

type pinnedPod struct {
	src, out *v1.Pod
	clique   string
}

type chanNode struct {
	pool    string
	devices []string
}

type chanNodeCopy struct{ src, out *v1.Node }

// chanClaim is a pod's channel claim: its requests' names and the
// ComputeDomain it names (the domainID of its ComputeDomainChannelConfig;
// "" when none).
type chanClaim struct {
	claimRef
	requests []string
	domain   string
}

func newCDChannels(args *Args) *cdChannels {
	return &cdChannels{driver: DefaultDRAChannelDriver, class: DefaultDRAChannelClass, gangLabel: args.GangLabel, gangSize: args.GangSizeKey,
		topology: args.GangTopologyKey, nodeCache: map[string]chanNodeCopy{}, pinned: map[types.UID]pinnedPod{}}
}

// isChannel reports whether c is a channel claim: one request of one
// device (ExactCount 1) of the channel class, with no selectors,
// tolerations or admin access: the form of the ComputeDomain template.
func (cd *cdChannels) isChannel(c *resourceapi.ResourceClaim) bool {
	if len(c.Spec.Devices.Requests) != 1 || len(c.Spec.Devices.Constraints) > 0 {
		return false
	}
	for _, r := range c.Spec.Devices.Requests {
		e := r.Exactly
		if e == nil || e.DeviceClassName != cd.class || len(e.Selectors) > 0 || len(e.Tolerations) > 0 ||
			(e.AdminAccess != nil && *e.AdminAccess) || e.AllocationMode == resourceapi.DeviceAllocationModeAll || e.Count > 1 {
			return false
		}
	}
	return true
}

// readSlices rebuilds the channel devices per node when the driver's
// slices (or the DeviceTaintRules) changed: devices whose type attribute
// is "channel" and that have no NoSchedule or NoExecute taint (their own
// or a rule's, dra_taint.go), by name.
func (cd *cdChannels) readSlices(list []*resourceapi.ResourceSlice, rules []*resourceapi.DeviceTaintRule) {
	var kb strings.Builder
	var mine []*resourceapi.ResourceSlice
	for _, s := range list {
		if s.Spec.Driver == cd.driver && s.Spec.NodeName != nil && *s.Spec.NodeName != "" {
			mine = append(mine, s)
		}
	}
	slices.SortFunc(mine, func(a, b *resourceapi.ResourceSlice) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range mine {
		kb.WriteString(s.Name + "@" + s.ResourceVersion + ";")
	}
	kb.WriteString(rulesKey(rules))
	if kb.String() == cd.sliceKey && cd.nodes != nil {
		return
	}
	cd.sliceKey = kb.String()
	cd.nodes = map[string]*chanNode{}
	newest := map[string]int64{}
	for _, s := range mine {
		newest[s.Spec.Pool.Name] = max(newest[s.Spec.Pool.Name], s.Spec.Pool.Generation)
	}
	for _, s := range mine {
		if s.Spec.Pool.Generation < newest[s.Spec.Pool.Name] {
			continue
		}
		for _, dev := range s.Spec.Devices {
			if attrString(dev.Attributes, cd.driver, attrType) != "channel" {
				continue
			}
			ts := taintsOf(dev.Taints, rules, cd.driver, s.Spec.Pool.Name, dev.Name)
			if _, bad := untolerated(ts, nil, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute); bad {
				continue
			}
			n := cd.nodes[*s.Spec.NodeName]
			if n == nil {
				n = &chanNode{pool: s.Spec.Pool.Name}
				cd.nodes[*s.Spec.NodeName] = n
			}
			if n.pool == s.Spec.Pool.Name {
				n.devices = append(n.devices, dev.Name)
			}
		}
	}
	for _, n := range cd.nodes {
		slices.SortFunc(n.devices, devname.Compare) // (channel-2 before channel-10)
	}
}

// readChannelSlices reads the channel devices of the slices.
func (d *drat) readChannelSlices() {
	list, err := d.io.listSlices()
	if err != nil {
		return
	}
	rules, err := d.io.listTaintRules()
	if err == nil {
		d.cd.readSlices(list, rules)
	}
}

// channelView completes a cycle's view (drat.view): the channel devices
// free on each node (not named by an allocated claim, but those view
// releases), the node label of nodes with one free, and the channel
// claims of the pods.
func (d *drat) channelView(nodes []*v1.Node, claims []*resourceapi.ResourceClaim) []*v1.Node {
	cd := d.cd
	stale := map[string]bool{}
	for _, c := range d.stale {
		stale[c.ns+"/"+c.name] = true
	}
	cd.free = cd.freeOf(claims, stale)
	out := make([]*v1.Node, len(nodes))
	seen := map[string]bool{}
	for i, n := range nodes {
		out[i] = n
		seen[n.Name] = true
		if len(cd.free[n.Name]) == 0 {
			continue
		}
		if c, ok := cd.nodeCache[n.Name]; ok && c.src == n {
			out[i] = c.out
			continue
		}
		x := n.DeepCopy()
		if x.Labels == nil {
			x.Labels = map[string]string{}
		}
		x.Labels[IMEXChannelLabel] = "free"
		cd.nodeCache[n.Name] = chanNodeCopy{src: n, out: x}
		out[i] = x
	}
	for name := range cd.nodeCache {
		if !seen[name] || len(cd.free[name]) == 0 {
			delete(cd.nodeCache, name)
		}
	}
	return out
}

// freeOf returns, per node, its channel devices that no allocated claim
// of claims names, but those of skip (namespace/name).
func (cd *cdChannels) freeOf(claims []*resourceapi.ResourceClaim, skip map[string]bool) map[string][]string {
	taken := map[string]bool{}
	for _, c := range claims {
		if c.Status.Allocation == nil || skip[c.Namespace+"/"+c.Name] {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver == cd.driver {
				taken[r.Pool+"/"+r.Device] = true
			}
		}
	}
	free := map[string][]string{}
	for name, n := range cd.nodes {
		for _, dev := range n.devices {
			if !taken[n.pool+"/"+dev] {
				free[name] = append(free[name], dev)
			}
		}
	}
	return free
}

// withChannels completes dp (once) with p's channel claims; a pod with
// any is seen, in a gang with no required topology, in one NVLink clique
// (bound or not: the topology is the gang's), and, unbound, requiring a
// node with a free channel.
func (d *drat) withChannels(dp *draPod) *draPod {
	if dp.shaped {
		return dp
	}
	dp.shaped = true
	p := dp.src
	for _, rc := range p.Spec.ResourceClaims {
		name := claimName(p, rc)
		if name == "" {
			continue
		}
		c, err := d.io.claim(p.Namespace, name)
		if err != nil || c == nil || !d.cd.isChannel(c) {
			continue
		}
		cc := chanClaim{claimRef: claimRef{ns: c.Namespace, name: c.Name, uid: p.UID}, domain: d.cd.domainOf(c)}
		for _, r := range c.Spec.Devices.Requests {
			cc.requests = append(cc.requests, r.Name)
		}
		dp.channels = append(dp.channels, cc)
	}
	if len(dp.channels) == 0 || dp.out == nil {
		return dp
	}
	// The clique topology is the gang's, so its bound members carry it
	// too (a gang partly bound is one job); only the unbound need a node
	// with a free channel.
	bound := p.Spec.NodeName != ""
	clique := dp.out.Labels[d.cd.gangLabel] != "" && dp.out.Labels[d.cd.topology] == "" && dp.out.Annotations[d.cd.topology] == ""
	if bound && !clique {
		return dp
	}
	inGang := p.Labels[d.cd.gangLabel] != "" && p.Labels[d.cd.gangSize] != "1" && p.Annotations[d.cd.gangSize] != "1"
	if !bound && inGang && d.sharesNode(dp.out) {
		dp.out, dp.why = nil, fmt.Sprintf("its pods have ComputeDomain channel claims and take %d GPUs each: two could share a node, "+
			"and NVIDIA's driver publishes one IMEX channel per node (one pod of a ComputeDomain per node); give each pod more than half a node's GPUs", podGPUs(dp.out, d.gpuResource))
		return dp
	}
	out := dp.out
	if out == p {
		out = p.DeepCopy()
	}
	if !bound {
		if out.Spec.NodeSelector == nil {
			out.Spec.NodeSelector = map[string]string{}
		}
		out.Spec.NodeSelector[IMEXChannelLabel] = "free"
	}
	if clique {
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[d.cd.topology] = "nvlink"
	}
	dp.out = out
	return dp
}

// errNoChannel: a pod's node has no channel device left for it.
type errNoChannel struct{ node string }

func (e errNoChannel) Error() string {
	return fmt.Sprintf("node %s has no free IMEX channel device of %s (NVIDIA's driver publishes one per node: one pod of a ComputeDomain per node)", e.node, DefaultDRAChannelDriver)
}

// channelPlan picks, for each pod of a batch about to be let through,
// the channel device of its node each of its channel claims gets: one
// its claim already holds there, else a free one no other pod of the
// batch took. A pod none is left for gets errNoChannel.
func (d *drat) channelPlan(pods []*v1.Pod, assignmentOf func(types.UID) (assignment, bool)) (map[string]string, map[*v1.Pod]error) {
	picks := map[string]string{} // claim ns/name → device
	failed := map[*v1.Pod]error{}
	used := map[string]bool{} // node/device
	var later []*v1.Pod
	// Claims already holding a channel on the pod's node keep it.
	for _, p := range pods {
		dp := d.pods[p.UID]
		a, ok := assignmentOf(p.UID)
		if dp == nil || len(dp.channels) == 0 || !ok {
			continue
		}
		later = append(later, p)
		n := d.cd.nodes[a.node]
		for _, c := range dp.channels {
			cur, _ := d.io.claim(c.ns, c.name)
			if cur == nil || cur.Status.Allocation == nil || n == nil {
				continue
			}
			for _, r := range cur.Status.Allocation.Devices.Results {
				if r.Driver == d.cd.driver && r.Pool == n.pool && slices.Contains(n.devices, r.Device) && !used[a.node+"/"+r.Device] {
					picks[c.ns+"/"+c.name] = r.Device
					used[a.node+"/"+r.Device] = true
					break
				}
			}
		}
	}
	for _, p := range later {
		a, _ := assignmentOf(p.UID)
		for _, c := range d.pods[p.UID].channels {
			if picks[c.ns+"/"+c.name] != "" {
				continue
			}
			i := slices.IndexFunc(d.cd.free[a.node], func(dev string) bool { return !used[a.node+"/"+dev] })
			if i < 0 {
				failed[p] = errNoChannel{node: a.node}
				break
			}
			dev := d.cd.free[a.node][i]
			picks[c.ns+"/"+c.name] = dev
			used[a.node+"/"+dev] = true
		}
	}
	return picks, failed
}

// writeChannels writes p's channel claims with the devices picks names
// on node; it returns the claims written.
func (d *drat) writeChannels(ctx context.Context, p *v1.Pod, node string, picks map[string]string, now time.Time) ([]gpuClaim, error) {
	dp := d.pods[p.UID]
	n := d.cd.nodes[node]
	if dp == nil || len(dp.channels) == 0 {
		return nil, nil
	}
	if n == nil {
		return nil, errNoChannel{node: node}
	}
	var wrote []gpuClaim
	for _, c := range dp.channels {
		dev := picks[c.ns+"/"+c.name]
		if dev == "" {
			return wrote, errNoChannel{node: node}
		}
		a := d.channelAllocation(c, node, n.pool, dev, now)
		g := gpuClaim{claimRef: c.claimRef}
		if err := d.write(ctx, g, p, a); err != nil {
			return wrote, fmt.Errorf("ResourceClaim %s/%s: %w", c.ns, c.name, err)
		}
		wrote = append(wrote, g)
	}
	return wrote, nil
}

// channelAllocation is the AllocationResult giving each request of c
// channel device dev of node (its pool).
func (d *drat) channelAllocation(c chanClaim, node, pool, dev string, now time.Time) *resourceapi.AllocationResult {
	a := &resourceapi.AllocationResult{
		NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}},
		AllocationTimestamp: &metav1.Time{Time: now},
	}
	for _, r := range c.requests {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: r, Driver: d.cd.driver, Pool: pool, Device: dev})
	}
	return a
}

// channelNode returns the node a channel failure names ("" for others).
func channelNode(err error) string {
	var e errNoChannel
	if errors.As(err, &e) {
		return e.node
	}
	return ""
}

// refs returns the claims of dp gpusched allocates: its GPU and channel
// claims.
func (dp *draPod) refs() []claimRef {
	out := make([]claimRef, 0, len(dp.claims)+len(dp.channels))
	for _, c := range dp.claims {
		out = append(out, c.claimRef)
	}
	for _, c := range dp.channels {
		out = append(out, c.claimRef)
	}
	return out
}

// sharesNode reports whether two pods like p could share a node of
// channel devices: p takes at most half the GPUs of the largest.
func (d *drat) sharesNode(p *v1.Pod) bool {
	most := 0
	for name := range d.cd.nodes {
		if g := d.nodes[name]; g != nil {
			most = max(most, len(g.devices))
		}
	}
	return most > 0 && 2*podGPUs(p, d.gpuResource) <= most
}

// podGPUs is the sum of p's containers' requests of res.
func podGPUs(p *v1.Pod, res v1.ResourceName) int {
	n := 0
	for _, c := range p.Spec.Containers {
		q := c.Resources.Requests[res]
		n += int(q.Value())
	}
	return n
}

// domainOf returns the domainID of c's ComputeDomainChannelConfig.
func (cd *cdChannels) domainOf(c *resourceapi.ResourceClaim) string {
	for _, cfg := range c.Spec.Devices.Config {
		if o := cfg.Opaque; o != nil && o.Driver == cd.driver {
			var x struct {
				Kind     string `json:"kind"`
				DomainID string `json:"domainID"`
			}
			if json.Unmarshal(o.Parameters.Raw, &x) == nil && x.Kind == "ComputeDomainChannelConfig" && x.DomainID != "" {
				return x.DomainID
			}
		}
	}
	return ""
}

// pinDomains keeps the pods of one ComputeDomain in one NVLink clique
// when they are not one gang: a waiting pod whose ComputeDomain already
// has a pod bound or planned on a node of a clique is seen requiring
// that clique (a node selector on the clique label, as the cycle sees
// it). Of a domain found on several cliques, the first by name counts.
// A pod whose clique has no node with a free channel is left out, saying
// so. Pods with a binding of gpusched's (assigned) are left as they are.
func (d *drat) pinDomains(nodes []*v1.Node, pods []*v1.Pod, assigned func(types.UID) bool) []*v1.Pod {
	cliqueOf := map[string]string{}
	open := map[string]bool{} // clique → a node of it has a free channel
	for _, n := range nodes {
		if c := n.Labels[d.cliqueLabel]; c != "" {
			cliqueOf[n.Name] = c
			open[c] = open[c] || n.Labels[IMEXChannelLabel] == "free"
		}
	}
	d.cd.held = d.cd.held[:0]
	at := map[string]string{} // domain → clique
	var waiting []*draPod
	for _, uid := range sortedKeys(d.pods) {
		dp := d.pods[uid]
		if len(dp.channels) == 0 || dp.channels[0].domain == "" || isTerminal(dp.src) {
			continue
		}
		node := dp.src.Spec.NodeName
		if node == "" {
			node = dp.src.Annotations[PlannedNodeAnnotation]
		}
		if node == "" {
			if !assigned(dp.src.UID) {
				waiting = append(waiting, dp)
			}
			continue
		}
		dom := dp.channels[0].domain
		if c := cliqueOf[node]; c != "" && (at[dom] == "" || c < at[dom]) {
			at[dom] = c
		}
	}
	swap := map[*v1.Pod]*v1.Pod{}
	keep := map[types.UID]bool{}
	for _, dp := range waiting {
		clique := at[dp.channels[0].domain]
		if clique == "" || dp.out == nil {
			continue
		}
		if !open[clique] {
			d.cd.held = append(d.cd.held, podEvent{pod: dp.src, what: fmt.Sprintf("gpusched: its ComputeDomain %s runs in NVLink clique %s, "+
				"where no node has a free IMEX channel (one pod of a ComputeDomain per node; its pods stay in one clique)", dp.channels[0].domain, clique)})
			swap[dp.out] = nil
			continue
		}
		keep[dp.src.UID] = true
		if pp, ok := d.cd.pinned[dp.src.UID]; ok && pp.src == dp.out && pp.clique == clique {
			swap[dp.out] = pp.out
			continue
		}
		x := dp.out.DeepCopy()
		if x.Spec.NodeSelector == nil {
			x.Spec.NodeSelector = map[string]string{}
		}
		x.Spec.NodeSelector[d.cliqueLabel] = clique
		d.cd.pinned[dp.src.UID] = pinnedPod{src: dp.out, out: x, clique: clique}
		swap[dp.out] = x
	}
	for uid := range d.cd.pinned {
		if !keep[uid] {
			delete(d.cd.pinned, uid)
		}
	}
	if len(swap) == 0 {
		return pods
	}
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		if x, ok := swap[p]; !ok {
			out = append(out, p)
		} else if x != nil {
			out = append(out, x)
		}
	}
	return out
}
