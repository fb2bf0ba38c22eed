package plugin

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// MIG devices through partitionable devices (docs/dra.md).
//
// NVIDIA's DRA driver publishes, beside each MIG-capable GPU gpu-N, every
// MIG device the GPU could hold: one device per profile and legal
// placement (gpu-N-mig-1g18gb-19-4: profile 1g.18gb, GI profile 19, start
// slot 4), of type "mig" with its profile and parentUUID, consuming from
// the GPU's shared counter set (gpu-N-counter-set) its capacities and one
// counter per memory slice of its placement (memory-slice-4 …); the GPU
// itself consumes all of them, so a GPU is whole or partitioned, and two
// partitions never share a memory slice. linkMIG reads these devices
// back to (GPU index, profile, start, size).
//
// A request of the MIG device class (Args.DRAMIGDeviceClass) asks for one
// MIG device; its CEL selectors name the profile (evaluated on the MIG
// devices of the slices; they must leave one profile). The pod is a task
// of that MIG profile in gpusched: the library's MIG engine picks the GPU
// and the legal start slot (best fit, no overlap, the media-extension
// profile alone on its GPU), and gpusched writes the partition device of
// that GPU, profile and start into the claim. The slot mask the library
// keeps per GPU is exactly the memory-slice counters: it never hands out
// a slice twice, so the counters are never over-consumed. A restart reads
// the partition back from the claim's allocation.

// DefaultDRAMIGDeviceClass is the default Args.DRAMIGDeviceClass, the
// DeviceClass of MIG devices of NVIDIA's DRA driver.
const DefaultDRAMIGDeviceClass = "mig.nvidia.com"

const (
	attrTypeMIG    = "mig"
	attrUUID       = "uuid"
	attrParentUUID = "parentUUID"
	// attrParentIndex is a static MIG device's GPU index (older drivers).
	attrParentIndex = "parentIndex"
	// memSliceCounter prefixes the counters of a GPU's memory slices.
	memSliceCounter = "memory-slice-"
	// draPartAnnotation carries, on a pod as a cycle sees it (never
	// written to the apiserver), what its claim asks of one GPU instead
	// of whole GPUs: "mig:PROFILE" or "milli:N".
	draPartAnnotation = "gpusched.io/dra-part"
	// draMIGStartAnnotation carries, likewise, the start slot of the MIG
	// device its claim's allocation names (with the GPU in the indices
	// annotation).
	draMIGStartAnnotation = "gpusched.io/dra-mig-start"
)

// migDev is one MIG device (a partition) of a node's slices.
type migDev struct {
	name        string
	gpu         int // its GPU's index on the node
	profile     string
	start, size int
	spec        *resourceapi.Device
}

// partRequest is a request for part of one GPU: a MIG device, or a share
// through consumable capacity (dra_share.go).
type partRequest struct {
	mig bool
	// profile is the MIG profile the request's selectors name (podPart).
	profile string
	// profiles are, for a pod's MIG requests together (podPart), the
	// profile of each MIG device, in request order (a request of count n
	// n times); one for a pod of one MIG device.
	profiles []string
	// capacity is a share's capacity.requests.
	capacity map[resourceapi.QualifiedName]resource.Quantity
	// shares are, for a pod of several shares (podPart), each share's
	// request, in request order (dra_shares.go).
	shares []*partRequest
	// static: the MIG devices are static MIG devices (dra_static.go); a
	// pod's MIG requests are all static or none is.
	static bool
}

// linkMIG records the MIG devices ps of n: each one's GPU (the GPU whose
// uuid its parentUUID names, else the GPU consuming the counter set it
// consumes) and placement (its memory-slice counters). Devices it cannot
// place are left out.
func (d *drat) linkMIG(n *draNode, ps []*resourceapi.Device) {
	if n == nil {
		return
	}
	for _, p := range ps {
		m := &migDev{name: p.Name, gpu: -1, profile: attrString(p.Attributes, d.driver, attrProfile), spec: p, start: -1}
		parent := attrString(p.Attributes, d.driver, attrParentUUID)
		for i, g := range n.specs {
			if parent != "" && attrString(g.Attributes, d.driver, attrUUID) == parent || parent == "" && sameCounterSet(g, p) {
				m.gpu = i
				break
			}
		}
		for _, cc := range p.ConsumesCounters {
			for name := range cc.Counters {
				k, err := strconv.Atoi(strings.TrimPrefix(name, memSliceCounter))
				if !strings.HasPrefix(name, memSliceCounter) || err != nil {
					continue
				}
				if m.start < 0 || k < m.start {
					m.start = k
				}
				m.size++
			}
		}
		if m.gpu < 0 || m.start < 0 || m.profile == "" {
			d.log.V(2).Info("A MIG device without a GPU, placement or profile is left out", "device", p.Name)
			n.unlinked = append(n.unlinked, p)
			continue
		}
		n.migs = append(n.migs, m)
	}
	slices.SortFunc(n.migs, func(a, b *migDev) int { return strings.Compare(a.name, b.name) })
	n.migSpec = migGeometry(n.migs)
}

// counterSetGPUs returns a GPU device for each counter set that MIG
// devices of ps (partitionable: memory-slice counters) consume and no GPU
// of gpus consumes or is named by their parentUUID: NVIDIA's driver with
// dynamic MIG leaves out an Ampere GPU in MIG mode (its mode cannot change
// without a reset) and publishes its counter set and MIG devices only, as
// importers/dra's parentsOf reads them. The GPU is named after its
// counter set (gpu-N-counter-set: gpu-N) and takes the attributes of its
// first MIG device (by name: product, architecture, PCIe root …), as type
// "gpu", with the parent's UUID and the minor its name carries. It is a
// GPU for MIG devices only (draNode.migOnly): never given whole or shared.
func (d *drat) counterSetGPUs(gpus, ps []*resourceapi.Device) []*resourceapi.Device {
	ps = slices.SortedFunc(slices.Values(ps), func(a, b *resourceapi.Device) int { return strings.Compare(a.Name, b.Name) })
	var out []*resourceapi.Device
	for _, p := range ps {
		set := migCounterSet(p)
		parent := attrString(p.Attributes, d.driver, attrParentUUID)
		if set == "" || slices.ContainsFunc(append(slices.Clip(gpus), out...), func(g *resourceapi.Device) bool {
			return sameCounterSet(g, p) || parent != "" && attrString(g.Attributes, d.driver, attrUUID) == parent
		}) {
			continue
		}
		attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
		for k, v := range p.Attributes {
			switch strings.TrimPrefix(string(k), d.driver+"/") {
			case attrProfile, attrParentUUID, attrUUID, attrType, attrIndex, attrMinor:
			default:
				attrs[k] = v
			}
		}
		gpu := "gpu"
		attrs[attrType] = resourceapi.DeviceAttribute{StringValue: &gpu}
		if parent != "" {
			attrs[attrUUID] = resourceapi.DeviceAttribute{StringValue: &parent}
		}
		name := strings.TrimSuffix(set, "-counter-set")
		if k, err := strconv.ParseInt(strings.TrimPrefix(name, "gpu-"), 10, 64); err == nil && k >= 0 && strings.HasPrefix(name, "gpu-") {
			attrs[attrMinor] = resourceapi.DeviceAttribute{IntValue: &k}
		}
		out = append(out, &resourceapi.Device{Name: name, Attributes: attrs,
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set}}})
	}
	return out
}

// migCounterSet is the counter set of p's memory-slice counters; "" when
// it consumes none.
func migCounterSet(p *resourceapi.Device) string {
	for _, cc := range p.ConsumesCounters {
		for name := range cc.Counters {
			if strings.HasPrefix(name, memSliceCounter) {
				return cc.CounterSet
			}
		}
	}
	return ""
}

// DRAMIGAnnotation carries, on a node as a cycle sees it (never written
// to the apiserver), the MIG geometry its DRA slices publish, as JSON of
// topology.MIGSpec: the profiles of its MIG devices, each with its size
// and every start slot a GPU of the node publishes it at (the media
// extension profiles, "+me", one per GPU). BuildTopology gives it to the
// node's GPU model, over a machine preset's: gpusched places MIG devices
// on any GPU model the driver partitions, as the driver says.
const DRAMIGAnnotation = "gpusched.io/dra-mig"

// migGeometry is the MIG geometry of migs, as JSON of topology.MIGSpec;
// "" for none, or for one gpusched cannot model (a profile published in
// two sizes, 16 slots or more).
func migGeometry(migs []*migDev) string {
	if len(migs) == 0 {
		return ""
	}
	spec := topology.MIGSpec{}
	byName := map[string]int{}
	for _, m := range migs {
		spec.Slots = max(spec.Slots, m.start+m.size)
		k, ok := byName[m.profile]
		if !ok {
			k = len(spec.Profiles)
			byName[m.profile] = k
			p := topology.MIGProfileSpec{Name: m.profile, Size: m.size}
			if mem, ok := m.spec.Capacity["memory"]; ok {
				p.MemoryMiB = mem.Value.Value() >> 20
			}
			p.ComputeSlices, _ = strconv.Atoi(strings.SplitN(m.profile, "g", 2)[0])
			if strings.HasSuffix(m.profile, "+me") {
				p.Exclusive = topology.MediaExtensions
			}
			spec.Profiles = append(spec.Profiles, p)
		}
		p := &spec.Profiles[k]
		if p.Size != m.size {
			return "" // one profile of two sizes: not a geometry gpusched can use
		}
		if !slices.Contains(p.Starts, m.start) {
			p.Starts = append(p.Starts, m.start)
		}
		p.ComputeSlices = min(max(p.ComputeSlices, 0), 64)
	}
	if spec.Slots >= topology.MaxMIGSlots || len(spec.Profiles) > 64 {
		return ""
	}
	slices.SortFunc(spec.Profiles, func(a, b topology.MIGProfileSpec) int { return strings.Compare(a.Name, b.Name) })
	for i := range spec.Profiles {
		slices.Sort(spec.Profiles[i].Starts)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return ""
	}
	return string(b)
}

// sameCounterSet reports whether a and b consume from one counter set.
func sameCounterSet(a, b *resourceapi.Device) bool {
	for _, x := range a.ConsumesCounters {
		for _, y := range b.ConsumesCounters {
			if x.CounterSet == y.CounterSet {
				return true
			}
		}
	}
	return false
}

// partOf marks rq, a request of e, as a MIG or share request, and says
// what of it gpusched cannot allocate.
func (d *drat) partOf(rq *gpuRequest, e *resourceapi.ExactDeviceRequest, kind reqKind) string {
	switch {
	case kind == kindMIG:
		rq.part = &partRequest{mig: true}
		if e.Capacity != nil && len(e.Capacity.Requests) > 0 {
			return fmt.Sprintf("request %q: capacity requests on a MIG device are not supported", rq.name)
		}
	case e.Capacity != nil && len(e.Capacity.Requests) > 0:
		rq.part = &partRequest{capacity: e.Capacity.Requests} // (count n: n shares, dra_shares.go)
	}
	return ""
}

// podPart returns the MIG or share request of dp (nil: whole GPUs), the
// MIG profiles found from its selectors, or why gpusched cannot allocate
// it: a pod takes whole GPUs, MIG devices (any number, of any requests:
// dra_migs.go) or shares (any number: dra_shares.go).
func (d *drat) podPart(dp *draPod) (*partRequest, string) {
	var parts []*gpuRequest
	n, migs := 0, 0
	for _, c := range dp.claims {
		for i, r := range c.requests {
			n++
			if r.part != nil {
				parts = append(parts, &c.requests[i])
				if r.part.mig {
					migs++
				}
			}
		}
	}
	switch {
	case len(parts) == 0:
		return nil, ""
	case n > len(parts) || migs > 0 && migs < len(parts):
		return nil, fmt.Sprintf("request %q: a pod with MIG devices or GPU shares has no other GPU request", parts[0].name)
	case migs == 0:
		return sharesPart(parts), "" // (dra_shares.go)
	}
	var profiles []string
	statics := 0
	for _, part := range parts {
		prof, static, why := d.migProfile(part)
		if why != "" {
			return nil, why
		}
		part.part.profile, part.part.static = prof, static
		if static {
			statics++
		}
		for range part.count {
			profiles = append(profiles, prof)
		}
	}
	switch {
	case statics > 0 && statics < len(parts):
		return nil, fmt.Sprintf("request %q: a pod's MIG requests are all of static MIG devices or none is (dra_static.go)", parts[0].name)
	case statics > 0:
		return &partRequest{mig: true, static: true, profile: profiles[0], profiles: profiles}, ""
	case len(profiles) == 1:
		parts[0].part.profiles = profiles
		return parts[0].part, ""
	}
	return &partRequest{mig: true, profile: profiles[0], profiles: profiles}, ""
}

// migProfile returns the one MIG profile the selectors of part (a MIG
// request) match on the slices' partitionable MIG devices, else on their
// static MIG devices (static), or why there is not one.
func (d *drat) migProfile(part *gpuRequest) (string, bool, string) {
	if !hasCEL(part.sels) {
		return "", false, fmt.Sprintf("request %q: name the MIG profile with a CEL selector (device.attributes['%s'].profile == '1g.18gb')", part.name, d.driver)
	}
	f := d.migProfiles(part.sels)
	switch {
	case f.err != nil:
		return "", false, fmt.Sprintf("request %q: %v", part.name, f.err)
	case len(f.profiles) == 0 && f.unlinked != "":
		return "", false, fmt.Sprintf("request %q: the MIG devices its CEL selectors match (on %s) are published without their GPU or its shared counters, "+
			"and not as static MIG devices (memorySlice capacities, a parentUUID); gpusched cannot place them (docs/dra.md)", part.name, f.unlinked)
	case len(f.profiles) == 0:
		return "", false, fmt.Sprintf("request %q: no MIG device of the slices matches its CEL selectors", part.name)
	case len(f.profiles) == 1:
		return f.profiles[0], f.static, ""
	default:
		return "", false, fmt.Sprintf("request %q: its CEL selectors match the MIG profiles %s; gpusched needs them to name one", part.name, strings.Join(f.profiles, ", "))
	}
}

// migFound is what migProfiles found for a set of selectors.
type migFound struct {
	// profiles are the profiles (sorted) of the partitionable MIG devices
	// the selectors match, or if none, of the static ones (static).
	profiles []string
	static   bool
	// unlinked: with no profile, the first node (by name) with a MIG
	// device linkMIG left out that the selectors match; "" for none.
	unlinked string
	// err: a selector could not be evaluated.
	err error
}

// migProfiles returns what the nodes' MIG devices sels match: the
// profiles of the partitionable ones, or if none, of the static ones.
// Remembered for the current slices (celMemo.profiles), so that pods of
// one template look at each node's MIG devices once, not once each.
func (d *drat) migProfiles(sels []resourceapi.DeviceSelector) migFound {
	d.celFresh()
	key := selKey(sels)
	if f, seen := d.cel.profiles[key]; seen {
		return f
	}
	f := d.findMIGProfiles(sels, key)
	d.cel.profiles[key] = f
	return f
}

// findMIGProfiles is migProfiles without the memo.
func (d *drat) findMIGProfiles(sels []resourceapi.DeviceSelector, key string) migFound {
	profiles := map[string]bool{}
	for pass := range 2 {
		for _, name := range sortedKeys(d.nodes) {
			n := d.nodes[name]
			devs := n.migsOf("")
			if pass == 1 {
				devs = n.staticSpecs()
			}
			for _, dev := range devs {
				ok, err := d.matches(dev, sels, key)
				if err != nil {
					return migFound{err: err}
				}
				if ok {
					profiles[attrString(dev.Attributes, d.driver, attrProfile)] = true
				}
			}
		}
		if len(profiles) > 0 {
			return migFound{profiles: sortedKeys(profiles), static: pass == 1}
		}
	}
	return migFound{unlinked: d.unlinkedMatch(sels, key)}
}

// unlinkedMatch returns the first node (by name) with a MIG device
// linkMIG left out that sels match; "" when none.
func (d *drat) unlinkedMatch(sels []resourceapi.DeviceSelector, key string) string {
	for _, name := range sortedKeys(d.nodes) {
		for _, p := range d.nodes[name].unlinked {
			if ok, err := d.matches(p, sels, key); ok && err == nil {
				return name
			}
		}
	}
	return ""
}

// allocatedPart returns the MIG request of dp, a bound pod whose
// selectors no longer name one profile (the slices changed), with the
// profile of the MIG device its claim's allocation on node names; why
// when there is none.
func (d *drat) allocatedPart(dp *draPod, claims []*resourceapi.ResourceClaim, node string) (*partRequest, string) {
	why := dp.why
	n := d.nodes[node]
	if migDevices(dp) != 1 {
		return nil, why // (several: their profiles must be found from the selectors)
	}
	for _, c := range dp.claims {
		for _, r := range c.requests {
			if r.part == nil || !r.part.mig || n == nil {
				continue
			}
			for _, cl := range claims {
				if cl.Name != c.name || cl.Status.Allocation == nil {
					continue
				}
				for _, res := range cl.Status.Allocation.Devices.Results {
					if res.Request != r.name || res.Pool != n.pool {
						continue
					}
					if m := n.migOf(res.Device); m != nil {
						r.part.profile = m.profile
						return r.part, ""
					}
				}
			}
		}
	}
	return nil, why
}

// migOf returns n's partitionable MIG device named dev; nil when none is
// (staticOf: its static ones).
func (n *draNode) migOf(dev string) *migDev {
	for _, m := range n.migs {
		if m.name == dev {
			return m
		}
	}
	return nil
}

// migsOf returns the MIG devices of n of profile ("": all).
func (n *draNode) migsOf(profile string) []*resourceapi.Device {
	var out []*resourceapi.Device
	for _, m := range n.migs {
		if m.profile == profile || profile == "" {
			out = append(out, m.spec)
		}
	}
	return out
}

// partPod finishes dp, whose claim asks for part, as the cycle sees it:
// what it asks of one GPU, the nodes it may use, and, when its claim is
// allocated on heldOn, the GPU (and MIG start) it holds.
func (d *drat) partPod(dp *draPod, part *partRequest, claims []*resourceapi.ResourceClaim, heldOn string, nodes []string) *draPod {
	out := dp.src.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	delete(out.Annotations, d.indices)
	d.onlyModels(out, nodes)
	if len(part.profiles) > 1 {
		return d.migsPod(dp, out, part, claims, heldOn, nodes) // (dra_migs.go)
	}
	if len(part.shares) > 1 {
		return d.sharesPod(dp, out, part, claims, heldOn, nodes) // (dra_shares.go)
	}
	if part.mig {
		out.Annotations[draPartAnnotation] = "mig:" + part.profile
	} else {
		// (At least 1: a bound pod's share stays one when no node could
		// take it now.)
		out.Annotations[draPartAnnotation] = "milli:" + strconv.Itoa(max(d.shareMilli(part), 1))
	}
	onlyOn(out, nodes)
	if gpu, start, ok := d.heldPart(claims, heldOn, part); ok {
		out.Annotations[d.indices] = strconv.Itoa(gpu)
		if part.mig {
			out.Annotations[draMIGStartAnnotation] = strconv.Itoa(start)
		}
	}
	dp.out = out
	return dp
}

// heldPart returns the GPU (and MIG start) on node that the allocation of
// the claim with part names; ok is false when none does.
func (d *drat) heldPart(claims []*resourceapi.ResourceClaim, node string, part *partRequest) (gpu, start int, ok bool) {
	n := d.nodes[node]
	if n == nil {
		return 0, 0, false
	}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		reqs, _, _ := d.classify(c)
		for _, r := range reqs {
			if r.part == nil || r.part.mig != part.mig {
				continue
			}
			for _, res := range c.Status.Allocation.Devices.Results {
				if res.Request != r.name || res.Driver != d.driver || res.Pool != n.pool {
					continue
				}
				if !part.mig {
					if i, ok := n.index[res.Device]; ok {
						return i, 0, true
					}
					continue
				}
				if m := n.migOf(res.Device); m != nil && m.profile == part.profile {
					return m.gpu, m.start, true
				}
			}
		}
	}
	return 0, 0, false
}

// partResults turns the results allocation wrote for c's part requests
// (the GPU device) into the parts a names: the MIG devices of the GPU,
// profile and start (taken[i]: part i of a given already, dra_migs.go),
// or the share of the GPU (dra_share.go).
func (d *drat) partResults(alloc *resourceapi.AllocationResult, c gpuClaim, a assignment, taken []bool) error {
	n := d.nodes[a.node]
	for i := range alloc.Devices.Results {
		res := &alloc.Devices.Results[i]
		k := slices.IndexFunc(c.requests, func(r gpuRequest) bool { return r.name == res.Request })
		if k < 0 || n == nil {
			continue
		}
		r := c.requests[k]
		gpu := n.index[res.Device]
		switch {
		case r.part != nil && r.part.mig:
			m, err := d.migResult(n, a, r, taken)
			if err != nil {
				return err
			}
			res.Device = m.name
		default:
			if err := d.shareResult(res, n.specs[gpu], r, c, i); err != nil {
				return fmt.Errorf("request %q: %w", r.name, err)
			}
		}
	}
	return nil
}

// parseMIGPart reads "mig:PROFILE@START".
func parseMIGPart(s string) (profile string, start int, ok bool) {
	rest, ok := strings.CutPrefix(s, "mig:")
	if !ok {
		return "", 0, false
	}
	profile, st, ok := strings.Cut(rest, "@")
	start, err := strconv.Atoi(st)
	return profile, start, ok && err == nil
}

// partOfClaim is assignment.part of cl, one task's claim.
func partOfClaim(c *topology.Cluster, cl topology.Claim) string {
	if len(cl.GPUs) != 1 {
		return ""
	}
	switch x := cl.GPUs[0]; x.Kind {
	case topology.ClaimMIG:
		return fmt.Sprintf("mig:%s@%d", c.Model(c.HostModel(cl.Host)).MIGProfiles[x.Profile].Name, x.Start)
	case topology.ClaimShare:
		return fmt.Sprintf("milli:%d", x.Milli)
	}
	return ""
}

// claimAssignment is the assignment of cl, one task's claim, on its node:
// its GPUs (indices on the node) and part (partOfClaim); job is unset.
func claimAssignment(c *topology.Cluster, cl topology.Claim) assignment {
	first, _ := c.HostGPUs(cl.Host)
	a := assignment{node: c.HostName(cl.Host), part: partOfClaim(c, cl)}
	for _, g := range cl.GPUs {
		a.gpus = append(a.gpus, int(g.GPU-first))
	}
	return a
}

// heldPart makes cl (one GPU, whole) the MIG device or share task group g
// asks for, from pod p's annotations as the cycle sees them.
func heldPart(c *topology.Cluster, cl *topology.Claim, g workload.TaskGroup, p *v1.Pod) error {
	if len(cl.GPUs) != 1 || g.MIGProfile == "" && g.GPUMilli == 0 {
		return nil
	}
	x := &cl.GPUs[0]
	if g.GPUMilli > 0 {
		x.Kind, x.Milli = topology.ClaimShare, int32(g.GPUMilli)
		return nil
	}
	prof, ok := c.Model(c.HostModel(cl.Host)).MIGProfileByName(g.MIGProfile)
	start, err := strconv.Atoi(p.Annotations[draMIGStartAnnotation])
	if !ok || err != nil {
		return fmt.Errorf("%s: its ResourceClaim names no MIG device %s of node %s", podField(p, "resourceClaims"), g.MIGProfile, c.HostName(cl.Host))
	}
	x.Kind, x.Profile, x.Start = topology.ClaimMIG, prof, int8(start)
	return nil
}

// draModelsAnnotation carries, on a pod as a cycle sees it (never
// written to the apiserver), the GPU models (product label values) of the
// nodes a MIG device or share may come from, comma-separated: its task's
// acceptable models. The library then looks for the partition on those
// models' hosts only: with the node affinity alone, a MIG task whose
// profile another model also has (an A100 node's beside an H100 node's)
// was refused as fragmented when the other model's node came first
// (TestIndepMIGBesideOtherModel).
const draModelsAnnotation = "gpusched.io/dra-models"

// onlyModels sets draModelsAnnotation on out from the products of nodes;
// none when any node may be used or a node's product is unknown.
func (d *drat) onlyModels(out *v1.Pod, nodes []string) {
	delete(out.Annotations, draModelsAnnotation)
	var models []string
	for _, name := range nodes {
		n := d.nodes[name]
		if n == nil || n.product == "" {
			return
		}
		if !slices.Contains(models, n.product) {
			models = append(models, n.product)
		}
	}
	if len(models) > 0 {
		slices.Sort(models)
		out.Annotations[draModelsAnnotation] = strings.Join(models, ",")
	}
}

// partDemand reads draPartAnnotation: a MIG profile or a share in milli.
func partDemand(p *v1.Pod) (mig string, milli int) {
	v := p.Annotations[draPartAnnotation]
	if m, ok := strings.CutPrefix(v, "mig:"); ok {
		return m, 0
	}
	if m, ok := strings.CutPrefix(v, "milli:"); ok {
		n, _ := strconv.Atoi(m)
		return "", max(n, 0)
	}
	return "", 0
}

// gpusHeld is the number of GPUs a task of g holds: its whole GPUs, or
// the one GPU of its MIG device or share.
func gpusHeld(g workload.TaskGroup) int {
	if g.MIGProfile != "" || g.GPUMilli > 0 {
		return 1
	}
	return g.GPUs
}
