package plugin

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpusched/gpusched/topology"
)

// Static MIG (docs/dra.md, "Static MIG").
//
// Without its DynamicMIG feature gate (the default), NVIDIA's DRA driver
// publishes a GPU in MIG mode only through the MIG devices that exist on
// it (mig-parted made them): gpu-M-mig-ID-START-SIZE, of type "mig", with
// its profile, parentUUID, productName …, and a capacity memorySlice<K>
// per memory slice of its placement; neither the GPU itself nor counters.
// Such a device is free or allocated, nothing else: its placement is
// fixed, so there is nothing for the library's MIG engine to choose on
// its GPU. gpusched models it so:
//
//   - the node's GPUs are its whole GPUs (indices 0..W-1, as published)
//     then one GPU per parent of static MIG devices (W..), which takes no
//     job in the library (Draining in scheduler mode, failed in
//     placement mode, DRAStaticMIGAnnotation): a static-MIG GPU is never
//     given away whole or shared, and the whole GPUs stay the library's;
//   - a pod whose MIG requests' selectors match static MIG devices (and no
//     partitionable one) is, to the library, a pod of its CPU and memory
//     restricted to the nodes where every one of its requests finds a
//     free device (staticNodes), and of those to the nodes in use when
//     one has them (packSingles; a gang's members: reserveGangs): the
//     library decides when and on which of those nodes it runs (queue,
//     quota, gang, CPU and memory fit);
//   - gpusched's DRA concern picks the devices on that node (pickStatic):
//     of the free devices of the request's profile that match its
//     selectors and whose taints it tolerates, one on a GPU some of whose
//     devices are in use, the fullest first (fewest free devices), then
//     the lowest GPU and start: whole free GPUs of static MIG devices stay
//     free for the pods that need several of their devices;
//   - a device is taken when a claim's allocation names it (any claim's:
//     kube's allocator's too), so a restart reads them back from the
//     claims, and a device given this cycle is not given again.
//
// A device tainted NoExecute that its pod's request does not tolerate
// strikes the pod (dra_taint.go), as for a partitionable MIG device.

// DRAStaticMIGAnnotation carries, on a node as a cycle sees it (never
// written to the apiserver), the indices of its GPUs in static MIG mode,
// comma-separated: GPUs the library gives no job (see above).
const DRAStaticMIGAnnotation = "gpusched.io/dra-static-mig"

// memSliceCapacity prefixes a static MIG device's capacities per memory
// slice ("memorySlice3").
const memSliceCapacity = "memorySlice"

// staticMIG is one MIG device that exists on a GPU in static MIG mode.
type staticMIG struct {
	name        string
	gpu         int // its GPU's index on the node (after the whole GPUs)
	profile     string
	start, size int
	spec        *resourceapi.Device
}

// linkStatic records, of the MIG devices ps of n, those of GPUs in
// static MIG mode: devices with memory-slice capacities and no counters
// whose parent GPU n does not publish. It returns the others (for
// linkMIG). The static GPUs get indices after n's whole GPUs, ordered by
// the minor their device names carry ("gpu-5-mig-…"), then parentUUID.
func (d *drat) linkStatic(n *draNode, ps []*resourceapi.Device) []*resourceapi.Device {
	published := map[string]bool{}
	for _, g := range n.specs {
		if u := attrString(g.Attributes, d.driver, attrUUID); u != "" {
			published[u] = true
		}
	}
	type found struct {
		parent string
		minor  int
		m      *staticMIG
	}
	var all []found
	var rest []*resourceapi.Device
	for _, p := range ps {
		start, size := capacitySlices(p)
		parent := attrString(p.Attributes, d.driver, attrParentUUID)
		if parent == "" {
			if i := attrInt(p.Attributes, d.driver, attrParentIndex); i != 1<<40 {
				parent = "index " + strconv.FormatInt(i, 10)
			}
		}
		profile := attrString(p.Attributes, d.driver, attrProfile)
		if len(p.ConsumesCounters) > 0 || size == 0 || parent == "" || published[parent] || profile == "" {
			rest = append(rest, p)
			continue
		}
		minor := 1 << 20
		if m, _, ok := strings.Cut(strings.TrimPrefix(p.Name, "gpu-"), "-mig-"); ok && strings.HasPrefix(p.Name, "gpu-") {
			if k, err := strconv.Atoi(m); err == nil && k >= 0 {
				minor = k
			}
		}
		all = append(all, found{parent: parent, minor: minor, m: &staticMIG{name: p.Name, profile: profile, start: start, size: size, spec: p}})
	}
	slices.SortFunc(all, func(a, b found) int {
		return cmp.Or(cmp.Compare(a.minor, b.minor), strings.Compare(a.parent, b.parent), cmp.Compare(a.m.start, b.m.start), strings.Compare(a.m.name, b.m.name))
	})
	var parents []string
	for _, f := range all {
		k := slices.Index(parents, f.parent)
		if k < 0 {
			k = len(parents)
			parents = append(parents, f.parent)
		}
		f.m.gpu = len(n.devices) + k
		n.statics = append(n.statics, f.m)
		if n.product == "" {
			if p := attrString(f.m.spec.Attributes, d.driver, attrProductName); p != "" {
				n.product = strings.ReplaceAll(strings.TrimSpace(p), " ", "-")
			}
		}
	}
	n.staticGPUs = len(parents)
	return rest
}

// capacitySlices returns the first memory slice and the number of slices
// of a device's memorySlice<K> capacities; 0, 0 when it has none or they
// are not consecutive.
func capacitySlices(p *resourceapi.Device) (start, size int) {
	var ks []int
	for name := range p.Capacity {
		k, err := strconv.Atoi(strings.TrimPrefix(string(name), memSliceCapacity))
		if strings.HasPrefix(string(name), memSliceCapacity) && err == nil && k >= 0 && k < topology.MaxMIGSlots {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	for i := 1; i < len(ks); i++ {
		if ks[i] != ks[i-1]+1 {
			return 0, 0
		}
	}
	if len(ks) == 0 {
		return 0, 0
	}
	return ks[0], len(ks)
}

// staticIndices are the indices of n's static-MIG GPUs, comma-separated.
func (n *draNode) staticIndices() string {
	var out []string
	for i := range n.staticGPUs {
		out = append(out, strconv.Itoa(len(n.devices)+i))
	}
	return strings.Join(out, ",")
}

// staticParent returns, per static GPU of n, one of its devices (its
// attributes stand for the GPU's: NUMA node, PCIe root).
func (n *draNode) staticParent() []*resourceapi.Device {
	out := make([]*resourceapi.Device, n.staticGPUs)
	for _, m := range n.statics {
		if k := m.gpu - len(n.devices); k >= 0 && k < len(out) && out[k] == nil {
			out[k] = m.spec
		}
	}
	return out
}

// staticOwners returns, when some node has static MIG devices, the
// static devices the allocations of claims name ("pool/device" → the
// claim's "namespace/name"); nil when no node has any.
func (d *drat) staticOwners(claims []*resourceapi.ResourceClaim) map[string]string {
	any := false
	for _, n := range d.nodes {
		any = any || len(n.statics) > 0
	}
	if !any {
		return nil
	}
	out := map[string]string{}
	d.takenBy(claims, func(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult) {
		out[r.Pool+"/"+r.Device] = c.Namespace + "/" + c.Name
	})
	return out
}

// takenBy calls take for each device of the driver the allocations of
// claims name, with its claim: any claim's, kube's allocator's too (and
// foreign claims, dra_foreign.go).
func (d *drat) takenBy(claims []*resourceapi.ResourceClaim, take func(*resourceapi.ResourceClaim, resourceapi.DeviceRequestAllocationResult)) {
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver == d.driver {
				take(c, r)
			}
		}
	}
}

// setOwners sets d.owners and d.ownersKey from claims.
func (d *drat) setOwners(claims []*resourceapi.ResourceClaim) {
	d.owners = d.staticOwners(claims)
	d.ownersKey = staticKey(d.owners)
}

// gpuSlots is the number of GPUs of a pod's binding c's requests take:
// a whole GPU each, one per MIG device or share; none for static MIG
// devices (staticResults).
func (c gpuClaim) gpuSlots() int {
	n := 0
	for _, r := range c.requests {
		if !isStatic(r) {
			n += r.count
		}
	}
	return n
}

// staticKey identifies owners (the static devices taken): a pod's view,
// which depends on them, is made again when they change.
func staticKey(owners map[string]string) string {
	if owners == nil {
		return ""
	}
	var b strings.Builder
	for _, k := range sortedKeys(owners) {
		b.WriteString(k + "=" + owners[k] + ";")
	}
	return b.String()
}

// isStatic reports whether r asks for a static MIG device.
func isStatic(r gpuRequest) bool { return r.part != nil && r.part.static }

// pickStatic picks on node n, for each request of reqs that asks for
// static MIG devices (in order, r.count each), the devices it gets: of
// the devices free for it (free: taken by no claim, or by one of mine)
// of its profile that match its selectors and whose NoSchedule and
// NoExecute taints it tolerates, first those mine hold already, then
// one on a GPU some of whose devices are in use, on the fullest such GPU
// (fewest free devices), then the lowest GPU, start and name. ok is false
// when some request finds too few.
func (d *drat) pickStatic(n *draNode, reqs []gpuRequest, owners map[string]string, mine func(owner string) bool) (picks [][]*staticMIG, ok bool) {
	picked := map[*staticMIG]bool{}
	free := func(m *staticMIG) bool {
		o := owners[n.pool+"/"+m.name]
		return !picked[m] && (o == "" || mine(o))
	}
	for _, r := range reqs {
		var got []*staticMIG
		if !isStatic(r) {
			picks = append(picks, nil)
			continue
		}
		key := selKey(r.sels)
		for range r.count {
			var best *staticMIG
			var bestKey [4]int
			for _, m := range n.statics {
				if m.profile != r.part.profile || !free(m) {
					continue
				}
				if ok, err := d.matches(m.spec, r.sels, key); !ok || err != nil {
					continue
				}
				if _, bad := untolerated(m.spec.Taints, r.tols, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute); bad {
					continue
				}
				used, left := 0, 0
				for _, o := range n.statics {
					if o.gpu != m.gpu {
						continue
					}
					if free(o) {
						left++
					} else {
						used++
					}
				}
				held := 1
				if o := owners[n.pool+"/"+m.name]; o != "" {
					held = 0 // (mine already)
				}
				idle := 1
				if used > 0 {
					idle = 0
				}
				k := [4]int{held, idle, left, m.gpu}
				if best == nil || slices.Compare(k[:], bestKey[:]) < 0 {
					best, bestKey = m, k
				}
			}
			if best == nil {
				return nil, false
			}
			picked[best] = true
			got = append(got, best)
		}
		picks = append(picks, got)
	}
	return picks, true
}

// staticNodes returns the nodes (sorted) where every static MIG request
// of dp's claims finds its devices free (pickStatic, over its claims
// together).
func (d *drat) staticNodes(dp *draPod, owners map[string]string) []string {
	var reqs []gpuRequest
	mine := map[string]bool{}
	for _, c := range dp.claims {
		reqs = append(reqs, c.requests...)
		mine[c.ns+"/"+c.name] = true
	}
	out := []string{}
	for _, name := range sortedKeys(d.nodes) {
		n := d.nodes[name]
		if len(n.statics) == 0 {
			continue
		}
		if _, ok := d.pickStatic(n, reqs, owners, func(o string) bool { return mine[o] }); ok {
			out = append(out, name)
		}
	}
	return out
}

// staticPod finishes dp, a pod whose GPU requests are static MIG devices,
// as the cycle sees it: its CPU and memory, and, unbound, only the nodes
// where its devices are free (with shared, the nodes of its claims other
// pods hold: dra_shared.go). It waits, saying why, when there is none.
func (d *drat) staticPod(dp *draPod, shared []string, owners map[string]string) *draPod {
	dp.static = true
	out := dp.src.DeepCopy()
	delete(out.Annotations, d.indices)
	delete(out.Annotations, draPartAnnotation)
	if dp.src.Spec.NodeName == "" {
		nodes := onSharedNodes(d.staticNodes(dp, owners), shared)
		if len(nodes) == 0 {
			var profiles []string
			for _, c := range dp.claims {
				for _, r := range c.requests {
					if isStatic(r) && !slices.Contains(profiles, r.part.profile) {
						profiles = append(profiles, r.part.profile)
					}
				}
			}
			dp.why = fmt.Sprintf("no node has free static MIG devices (%s) for all its requests: devices their CEL selectors match, whose taints they tolerate, that no claim holds", strings.Join(profiles, ", "))
			return dp
		}
		onlyOn(out, nodes)
	}
	dp.out = out
	return dp
}

// staticResults adds to alloc, c's allocation on node, the static MIG
// devices of c's static requests, picked (pickStatic) among those owners
// (the devices taken, "pool/device" → claim) leaves free or gives c; it
// marks them c's in owners.
func (d *drat) staticResults(alloc *resourceapi.AllocationResult, c gpuClaim, node string, owners map[string]string) error {
	if !slices.ContainsFunc(c.requests, isStatic) {
		return nil
	}
	n := d.nodes[node]
	if n == nil {
		return fmt.Errorf("node %s publishes no static MIG devices", node)
	}
	if owners == nil {
		return fmt.Errorf("the claims holding static MIG devices could not be read")
	}
	me := c.ns + "/" + c.name
	picks, ok := d.pickStatic(n, c.requests, owners, func(o string) bool { return o == me })
	if !ok {
		return fmt.Errorf("node %s has no free static MIG devices left for it (taken this cycle)", node)
	}
	for i, r := range c.requests {
		for _, m := range picks[i] {
			owners[n.pool+"/"+m.name] = me
			alloc.Devices.Results = append(alloc.Devices.Results, resourceapi.DeviceRequestAllocationResult{
				Request: r.name, Driver: d.driver, Pool: n.pool, Device: m.name, Tolerations: r.tols})
		}
	}
	return nil
}

// staticHeld reports whether every static request of dp's claims is
// allocated on node (claims: its claims as read).
func (d *drat) staticHeld(dp *draPod, claims []*resourceapi.ResourceClaim, node string) bool {
	n := d.nodes[node]
	if n == nil {
		return false
	}
	for _, c := range dp.claims {
		k := slices.IndexFunc(claims, func(cl *resourceapi.ResourceClaim) bool { return cl.Name == c.name })
		if k < 0 || claims[k].Status.Allocation == nil {
			return false
		}
		for _, r := range c.requests {
			got := 0
			for _, res := range claims[k].Status.Allocation.Devices.Results {
				if res.Request == r.name && res.Pool == n.pool && slices.ContainsFunc(n.statics, func(m *staticMIG) bool { return m.name == res.Device }) {
					got++
				}
			}
			if isStatic(r) && got != r.count {
				return false
			}
		}
	}
	return true
}

// staticSpecs returns the devices of n's static MIG devices.
func (n *draNode) staticSpecs() []*resourceapi.Device {
	out := make([]*resourceapi.Device, len(n.statics))
	for i, m := range n.statics {
		out[i] = m.spec
	}
	return out
}

// staticOf returns n's static MIG device named dev; nil when none is.
func (n *draNode) staticOf(dev string) *staticMIG {
	for _, m := range n.statics {
		if m.name == dev {
			return m
		}
	}
	return nil
}

// ownersLocked sets the drat's owners (setOwners) from the informer's
// claims and the claims x holds (assumed, not written yet) and returns
// them. x.mu is held.
func (x *placeDRA) ownersLocked() map[string]string {
	if x.d.staticOwners(nil) == nil {
		x.d.owners, x.d.ownersKey = nil, ""
		return nil // (no static MIG devices: no claims to list)
	}
	claims, err := x.d.io.listClaims()
	if err != nil {
		return x.d.owners
	}
	owners := x.d.staticOwners(claims)
	if owners != nil {
		for _, uid := range sortedKeys(x.holds) {
			for _, c := range x.holds[uid].claims {
				for _, r := range c.alloc.Devices.Results {
					if r.Driver == x.d.driver {
						owners[r.Pool+"/"+r.Device] = c.ns + "/" + c.name
					}
				}
			}
		}
	}
	x.d.owners, x.d.ownersKey = owners, staticKey(owners)
	return owners
}

// claimsOf returns p's claims as the informer shows them.
func (x *placeDRA) claimsOf(p *v1.Pod) []*resourceapi.ResourceClaim {
	var out []*resourceapi.ResourceClaim
	for _, rc := range p.Spec.ResourceClaims {
		if name := claimName(p, rc); name != "" {
			if c, _ := x.d.io.claim(p.Namespace, name); c != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// reserveGangs gives each unplaced gang member of static MIG devices
// (members, by job) one node: the library places a gang's members in one
// decision, each on any node its filter allows, and two members on a node
// with one free device would leave one of them without it. Gang by gang
// (by job ID), member by member (by name), each takes its devices
// (pickStatic) on the node that leaves the fewest free static devices on
// nodes in use: a node some of whose static devices are taken, the one
// with the fewest free, then by name, among those with its devices free
// once the members before it took theirs; it is restricted to that node.
// A gang some member of which finds no node waits whole, saying why.
// pods are the cycle's pods; the members' entries are replaced or, for
// a gang that waits, dropped.
func (d *drat) reserveGangs(pods []*v1.Pod, members []staticMember) []*v1.Pod {
	var singles []staticMember
	members = slices.DeleteFunc(slices.Clone(members), func(m staticMember) bool {
		single := m.job == m.dp.src.Namespace+"/"+m.dp.src.Name
		if single {
			singles = append(singles, m)
		}
		return single
	})
	d.packSingles(pods, singles)
	if len(members) == 0 {
		return pods
	}
	owners := map[string]string{}
	for k, v := range d.owners {
		owners[k] = v
	}
	slices.SortStableFunc(members, func(a, b staticMember) int {
		return cmp.Or(strings.Compare(a.job, b.job), strings.Compare(a.dp.src.Name, b.dp.src.Name))
	})
	drop := map[int]bool{}
	for i := 0; i < len(members); {
		j := i
		for j < len(members) && members[j].job == members[i].job {
			j++
		}
		gang := members[i:j]
		i = j
		took := map[string]string{}
		nodes := make([]string, len(gang))
		why := ""
		for k, m := range gang {
			node, picks := d.bestStaticNode(m.dp, owners)
			if node == "" {
				why = fmt.Sprintf("its gang %s: no node has free static MIG devices for member %s once the members before it took theirs", m.job, m.dp.src.Name)
				break
			}
			nodes[k] = node
			for _, ms := range picks {
				for _, x := range ms {
					key := d.nodes[node].pool + "/" + x.name
					owners[key], took[key] = "gang "+m.job, owners[key]
				}
			}
		}
		if why != "" {
			for key, was := range took {
				owners[key] = was
			}
			for _, m := range gang {
				m.dp.unkept = why // (told by left; the cached view stays)
				drop[m.at] = true
			}
			continue
		}
		for k, m := range gang {
			p := pods[m.at].DeepCopy()
			onlyOn(p, []string{nodes[k]})
			pods[m.at] = p
		}
	}
	out := pods[:0]
	for i, p := range pods {
		if !drop[i] {
			out = append(out, p)
		}
	}
	return out
}

// bestStaticNode returns the node where dp's static MIG devices go when
// the devices owners names are taken (see reserveGangs) and the devices
// it picks there; "" when none has them all free.
func (d *drat) bestStaticNode(dp *draPod, owners map[string]string) (string, [][]*staticMIG) {
	var reqs []gpuRequest
	mine := map[string]bool{}
	for _, c := range dp.claims {
		reqs = append(reqs, c.requests...)
		mine[c.ns+"/"+c.name] = true
	}
	best, bestKey := "", [2]int{}
	var bestPicks [][]*staticMIG
	for _, name := range sortedKeys(d.nodes) {
		n := d.nodes[name]
		if len(n.statics) == 0 {
			continue
		}
		picks, ok := d.pickStatic(n, reqs, owners, func(o string) bool { return mine[o] })
		if !ok {
			continue
		}
		free := 0
		for _, m := range n.statics {
			if o := owners[n.pool+"/"+m.name]; o == "" || mine[o] {
				free++
			}
		}
		idle := 0
		if free == len(n.statics) {
			idle = 1
		}
		k := [2]int{idle, free}
		if best == "" || slices.Compare(k[:], bestKey[:]) < 0 {
			best, bestKey, bestPicks = name, k, picks
		}
	}
	return best, bestPicks
}

// freeStatics is the number of n's static MIG devices no claim holds that
// r's selectors match and whose NoSchedule and NoExecute taints r
// tolerates (firstAvailable's fits: the profile is found later).
func (d *drat) freeStatics(n *draNode, r gpuRequest) int {
	k, key := 0, selKey(r.sels)
	for _, m := range n.statics {
		if d.owners[n.pool+"/"+m.name] != "" {
			continue
		}
		if ok, err := d.matches(m.spec, r.sels, key); !ok || err != nil {
			continue
		}
		if _, bad := untolerated(m.spec.Taints, r.tols, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute); !bad {
			k++
		}
	}
	return k
}

// packSingles restricts each unplaced pod of static MIG devices that is
// no gang member (singles) to the nodes in use among those it may use:
// nodes some of whose static devices a claim holds, when one of them has
// its devices free, so that it goes beside the devices in use and the
// nodes whose devices are all free stay so (the library's own choice
// among the nodes knows nothing of the devices). A pod so restricted
// that is still unplaced next cycle (the nodes in use lack the CPU or
// memory for it, say) is given all its nodes that cycle. pods are the
// cycle's pods; entries of singles are replaced.
func (d *drat) packSingles(pods []*v1.Pod, singles []staticMember) {
	was := d.packed
	d.packed = map[types.UID]bool{}
	for _, m := range singles {
		uid := m.dp.src.UID
		if was[uid] {
			continue // (all its nodes this cycle)
		}
		var inUse []string
		for _, name := range d.staticNodes(m.dp, d.owners) {
			n := d.nodes[name]
			if slices.ContainsFunc(n.statics, func(x *staticMIG) bool { return d.owners[n.pool+"/"+x.name] != "" }) {
				inUse = append(inUse, name)
			}
		}
		if len(inUse) == 0 {
			continue
		}
		p := pods[m.at].DeepCopy()
		onlyOn(p, inUse)
		pods[m.at] = p
		d.packed[uid] = true
	}
}
