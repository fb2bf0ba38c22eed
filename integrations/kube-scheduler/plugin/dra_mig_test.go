package plugin

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/internal/nvdra"
	"github.com/gpusched/gpusched/topology"
)

// h200Capture is the real H200 capture (driver 580, one H200 in a VM).
const h200Capture = "../../../topology/nvml/testdata/golden/h200-sxm-1"

// h200MIG returns a fakeDRA publishing node with gpus H200s and, per GPU,
// the MIG devices of the capture's profiles and placements.
func h200MIG(t *testing.T, node string, gpus int) *fakeDRA {
	t.Helper()
	ps, err := nvdra.ReadCapture(h200Capture)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeDRA()
	f.slices = nvdra.Node{Name: node, GPUs: gpus, Product: "NVIDIA H200", Profiles: ps, Slots: 8}.Slices()
	for _, s := range f.slices {
		s.ResourceVersion = "1"
	}
	return f
}

// migClaim is a claim for one MIG device whose CEL selector names profile.
func migClaim(name, profile string) *resourceapi.ResourceClaim {
	return withCEL(claimFor(name, DefaultDRAMIGDeviceClass, 1), fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", profile))
}

// migOf returns the MIG device claim name is allocated, as
// (gpu, profile, start, size) read from the slices.
func migOf(t *testing.T, f *fakeDRA, name string) (dev string, gpu, start, size int, profile string) {
	t.Helper()
	c := f.claims["default/"+name]
	if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 {
		t.Fatalf("claim %s: allocation %+v", name, c.Status.Allocation)
	}
	dev = c.Status.Allocation.Devices.Results[0].Device
	for _, s := range f.slices {
		for _, d := range s.Spec.Devices {
			if d.Name != dev {
				continue
			}
			profile = *d.Attributes["profile"].StringValue
			gpu, start, size = migPlace(d)
			return
		}
	}
	t.Fatalf("claim %s names %s, no device of the slices", name, dev)
	return
}

// migPlace returns the GPU, start and size of MIG device d, read from
// its counters.
func migPlace(d resourceapi.Device) (gpu, start, size int) {
	fmt.Sscanf(d.ConsumesCounters[0].CounterSet, "gpu-%d-counter-set", &gpu)
	start = 99
	for k := range d.ConsumesCounters[0].Counters {
		var m int
		if _, err := fmt.Sscanf(k, "memory-slice-%d", &m); err == nil {
			start, size = min(start, m), size+1
		}
	}
	return gpu, start, size
}

// TestDRAMIG: MIG claims on an H200 published as NVIDIA's driver does with
// the capture's profiles. gpusched gives each pod a partition device of
// its profile at a legal start, never two on one memory slice and one
// 1g.18gb+me per GPU (the second waits); a restarted scheduler reads the
// partitions back from the claims and places a new pod around them, and
// none where no legal placement is free.
func TestDRAMIG(t *testing.T) {
	f := h200MIG(t, "h200-1", 1)
	for name, prof := range map[string]string{"four": "4g.71gb", "me": "1g.18gb+me", "me2": "1g.18gb+me", "wide": "1g.35gb", "one": "1g.18gb"} {
		f.put(migClaim(name, prof))
	}
	f.put(withCEL(claimFor("two", DefaultDRAMIGDeviceClass, 1), "device.attributes['gpu.nvidia.com'].profile.startsWith('1g.18gb')"))
	h, io := newDRAHost(t, f, node("h200-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p-four", "four"), draPodOf("p-me", "me"), draPodOf("p-two", "two")}
	h.cycle(ctx)
	if len(io.activated) != 2 {
		t.Fatalf("activated %v, want p-four, p-me; pending %v", io.activated, io.pending)
	}
	if !strings.Contains(io.pending["p-two"], "match the MIG profiles 1g.18gb, 1g.18gb+me") {
		t.Errorf("p-two: %q", io.pending["p-two"])
	}
	used := map[int]string{}
	check := func(claim, want string) {
		t.Helper()
		dev, gpu, start, size, prof := migOf(t, f, claim)
		if prof != want || gpu != 0 {
			t.Errorf("claim %s: %s (%s on GPU %d), want %s", claim, dev, prof, gpu, want)
		}
		for k := start; k < start+size; k++ {
			if used[k] != "" {
				t.Errorf("memory slice %d in claims %s and %s", k, used[k], claim)
			}
			used[k] = claim
		}
	}
	check("four", "4g.71gb")
	check("me", "1g.18gb+me")
	bindDRA(h, io)
	h.cycle(ctx)

	// The second media-extension pod cannot have the GPU's one set.
	io.pods = append(io.pods, draPodOf("p-me2", "me2"))
	h.cycle(ctx)
	if f.claims["default/me2"].Status.Allocation != nil {
		t.Fatalf("a second 1g.18gb+me on the GPU: %+v", f.claims["default/me2"].Status.Allocation)
	}

	// Restart: the partitions are read back from the claims.
	h2, io2 := newDRAHost(t, f, node("h200-1", -1, nil))
	io2.pods = append(io.pods[:2:2], draPodOf("p-one", "one"))
	h2.cycle(ctx)
	if len(io2.activated) != 1 || io2.activated[0] != "p-one" {
		t.Fatalf("after the restart activated %v, want p-one; pending %v", io2.activated, io2.pending)
	}
	check("one", "1g.18gb")
	bindDRA(h2, io2)
	io2.pods = append(io2.pods, draPodOf("p-wide", "wide"))
	h2.cycle(ctx)
	if c := f.claims["default/wide"]; c.Status.Allocation != nil {
		_, _, start, size, _ := migOf(t, f, "wide")
		t.Errorf("1g.35gb given slices %d..%d of a GPU with %v taken", start, start+size-1, used)
	}
	// The ledger holds what the claims name: 4g.71gb at 0..3, the
	// media extensions (bit 8) and two 1-slice devices.
	if m := h2.s.Ledger().GPU(0).MIGSlots; m&0x10f != 0x10f || bits.OnesCount16(m&0xff) != 6 {
		t.Errorf("after the restart the GPU's MIG slots are %09b", m)
	}
}

// TestDRAMIGCountersHold: every set of MIG instances the library's MIG
// geometry for the H200 lets one GPU hold at once (legal starts, no slot
// twice, one media-extension instance) consumes no more of any counter of
// the GPU's counter set, as the driver publishes it from the capture, than
// the set has: the library's slot mask is enough for the counters too.
func TestDRAMIGCountersHold(t *testing.T) {
	ps, err := nvdra.ReadCapture(h200Capture)
	if err != nil {
		t.Fatal(err)
	}
	_, acc, err := topology.MachineTemplate("dgx-h200")
	if err != nil || acc.MIG == nil {
		t.Fatalf("dgx-h200: %v", err)
	}
	sl := nvdra.Node{Name: "n", GPUs: 1, Product: "NVIDIA H200", Profiles: ps, Slots: acc.MIG.Slots}.Slices()
	limit := sl[0].Spec.SharedCounters[0].Counters
	cost := map[string]map[string]resource.Quantity{} // profile → counter → value
	for _, d := range sl[1].Spec.Devices {
		if p := d.Attributes["profile"].StringValue; p != nil {
			cost[*p] = map[string]resource.Quantity{}
			for k, v := range d.ConsumesCounters[0].Counters {
				if !strings.HasPrefix(k, "memory-slice-") {
					cost[*p][k] = v.Value
				}
			}
		}
	}
	type place struct {
		prof string
		mask uint16
	}
	var all []place
	for _, p := range acc.MIG.Profiles {
		if cost[p.Name] == nil {
			t.Fatalf("profile %s of the library's H200 geometry not in the capture", p.Name)
		}
		for _, st := range p.Starts {
			m := uint16((1<<p.Size - 1) << st)
			if p.Exclusive != "" {
				m |= 1 << acc.MIG.Slots
			}
			all = append(all, place{p.Name, m})
		}
	}
	sets := 0
	var walk func(from int, mask uint16, held []string)
	walk = func(from int, mask uint16, held []string) {
		sets++
		for k, v := range limit {
			if strings.HasPrefix(k, "memory-slice-") {
				continue
			}
			var sum resource.Quantity
			for _, h := range held {
				sum.Add(cost[h][k])
			}
			if sum.Cmp(v.Value) > 0 {
				t.Errorf("%v: %s %s of %s", held, k, sum.String(), v.Value.String())
			}
		}
		for i := from; i < len(all); i++ {
			if mask&all[i].mask == 0 {
				walk(i+1, mask|all[i].mask, append(held, all[i].prof))
			}
		}
	}
	walk(0, 0, nil)
	t.Logf("%d sets of MIG instances checked", sets)
}

// TestDRAMIGGeometryFromSlices: on a GPU model gpusched has no preset for
// (an A30: 4 memory slices, 1g.6gb, 2g.12gb, 4g.24gb, 1g.6gb+me), the MIG
// geometry comes from the MIG devices the driver publishes: pods get
// partitions at the starts the slices publish, never overlapping.
func TestDRAMIGGeometryFromSlices(t *testing.T) {
	a30 := []nvdra.Profile{
		{Name: "1g.6gb", ID: 14, Starts: []int{0, 1, 2, 3}, Size: 1, MemoryMiB: 5836, SM: 14, CE: 1, DEC: 1, JPG: 0},
		{Name: "1g.6gb+me", ID: 21, Starts: []int{0, 1, 2, 3}, Size: 1, MemoryMiB: 5836, SM: 14, CE: 1, DEC: 1, JPG: 1, OFA: 1},
		{Name: "2g.12gb", ID: 5, Starts: []int{0, 2}, Size: 2, MemoryMiB: 11672, SM: 28, CE: 2, DEC: 2, JPG: 0},
		{Name: "4g.24gb", ID: 0, Starts: []int{0}, Size: 4, MemoryMiB: 23344, SM: 56, CE: 4, DEC: 4, JPG: 1, OFA: 1},
	}
	f := newFakeDRA()
	f.slices = nvdra.Node{Name: "a30-1", GPUs: 2, Product: "NVIDIA A30", Profiles: a30, Slots: 4}.Slices()
	for _, s := range f.slices {
		s.ResourceVersion = "1"
	}
	for name, prof := range map[string]string{"two": "2g.12gb", "me": "1g.6gb+me", "one": "1g.6gb", "four": "4g.24gb"} {
		f.put(migClaim(name, prof))
	}
	h, io := newDRAHost(t, f, node("a30-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf("p-two", "two"), draPodOf("p-me", "me"), draPodOf("p-one", "one"), draPodOf("p-four", "four")}
	h.cycle(context.Background())
	if len(io.activated) != 4 {
		t.Fatalf("activated %v, want all four; pending %v", io.activated, io.pending)
	}
	used := map[int]string{}
	for _, c := range []string{"four", "two", "me", "one"} {
		dev, gpu, start, size, _ := migOf(t, f, c)
		for k := start; k < start+size; k++ {
			if used[gpu*10+k] != "" {
				t.Errorf("slice %d of GPU %d in claims %s and %s (%s)", k, gpu, used[gpu*10+k], c, dev)
			}
			used[gpu*10+k] = c
		}
	}
	if len(used) != 8 {
		t.Errorf("slices used: %v, want all 8 of the two GPUs", used)
	}
}

// TestDRAMIGChurn: MIG pods of the capture's profiles (and whole-GPU
// pods) come and go on two H200s, 80 steps of a fixed seed; after every
// cycle, the allocated claims consume no counter of a GPU's counter set
// past its value (so no memory slice twice, one media extension per GPU,
// no whole GPU beside a partition) and every MIG device sits at a legal
// placement of its profile.
func TestDRAMIGChurn(t *testing.T) { migChurn(t, false) }

// TestDRAMIGSeveralChurn is TestDRAMIGChurn with pods of several MIG
// devices (a request of count 2, two requests, two claims) among them.
func TestDRAMIGSeveralChurn(t *testing.T) { migChurn(t, true) }

// migChurn runs the churn of TestDRAMIGChurn; several: a third of the
// MIG pods ask for 2 or 3 MIG devices.
func migChurn(t *testing.T, several bool) {
	ps, _ := nvdra.ReadCapture(h200Capture)
	migChurnOn(t, h200MIG(t, "h200-1", 2), "h200-1", ps, several)
}

// migChurnOn runs the churn of TestDRAMIGChurn on node, published in f
// with MIG devices of profiles ps.
func migChurnOn(t *testing.T, f *fakeDRA, nodeName string, ps []nvdra.Profile, several bool) {
	limit := map[string]resource.Quantity{}
	devs := map[string]resourceapi.Device{}
	for _, s := range f.slices {
		for _, cs := range s.Spec.SharedCounters {
			for k, v := range cs.Counters {
				limit[cs.Name+"/"+k] = v.Value
			}
		}
		for _, d := range s.Spec.Devices {
			devs[d.Name] = d
		}
	}
	h, io := newDRAHost(t, f, node(nodeName, -1, nil))
	rng := rand.New(rand.NewPCG(27, 1))
	placed, severalSeen := 0, 0
	for step := range 80 {
		var bound []int
		for i, p := range io.pods {
			if p.Spec.NodeName != "" {
				bound = append(bound, i)
			}
		}
		if len(bound) > 0 && rng.IntN(2) == 0 {
			k := bound[rng.IntN(len(bound))]
			io.pods = slices.Delete(io.pods, k, k+1) // it ended
		} else {
			name := fmt.Sprintf("c%02d", step)
			claims := []string{name}
			switch {
			case rng.IntN(8) == 0:
				f.put(claimFor(name, DefaultDRADeviceClass, 1))
			case several && rng.IntN(3) == 0:
				claims = severalMIGs(f, name, rng.IntN(3), ps[rng.IntN(len(ps))].Name, ps[rng.IntN(len(ps))].Name)
			default:
				f.put(migClaim(name, ps[rng.IntN(len(ps))].Name))
			}
			io.pods = append(io.pods, draPodOf("p"+name, claims...))
		}
		io.activated = nil
		h.cycle(context.Background())
		placed += len(io.activated)
		bindDRA(h, io)
		used := map[string]resource.Quantity{}
		for _, c := range f.claims {
			if c.Status.Allocation == nil {
				continue
			}
			if len(c.Status.Allocation.Devices.Results) > 1 || strings.HasSuffix(c.Name, "-b") {
				severalSeen++
			}
			for _, res := range c.Status.Allocation.Devices.Results {
				d := devs[res.Device]
				for _, cc := range d.ConsumesCounters {
					for k, v := range cc.Counters {
						u := used[cc.CounterSet+"/"+k]
						u.Add(v.Value)
						used[cc.CounterSet+"/"+k] = u
					}
				}
				if p := d.Attributes["profile"].StringValue; p != nil {
					_, start, size := migPlace(d)
					k := slices.IndexFunc(ps, func(x nvdra.Profile) bool { return x.Name == *p })
					if size != ps[k].Size || !slices.Contains(ps[k].Starts, start) {
						t.Fatalf("step %d: claim %s: %s at %d..%d", step, c.Name, d.Name, start, start+size-1)
					}
				}
			}
		}
		for k, u := range used {
			if lim := limit[k]; u.Cmp(lim) > 0 {
				t.Fatalf("step %d: counter %s: %s consumed of %s", step, k, u.String(), lim.String())
			}
		}
	}
	if placed < 20 {
		t.Errorf("only %d pods placed in 80 steps", placed)
	}
	t.Logf("%d pods placed", placed)
	if several && severalSeen == 0 {
		t.Errorf("no pod of several MIG devices placed")
	}

}

// TestDRAMIGBoundKeepsItsDevice: a bound pod whose selector matched one
// profile (1g.18gb, "startsWith('1g.18gb')" before the driver published
// 1g.18gb+me) and matches two once the slices change still holds its MIG
// device after a restart (the allocation says which): a 7g.141gb pod does
// not get the GPU.
func TestDRAMIGBoundKeepsItsDevice(t *testing.T) {
	ps, err := nvdra.ReadCapture(h200Capture)
	if err != nil {
		t.Fatal(err)
	}
	noME := slices.DeleteFunc(slices.Clone(ps), func(p nvdra.Profile) bool { return strings.HasSuffix(p.Name, "+me") })
	f := newFakeDRA()
	f.slices = nvdra.Node{Name: "h200-1", GPUs: 1, Product: "NVIDIA H200", Profiles: noME, Slots: 8}.Slices()
	for _, s := range f.slices {
		s.ResourceVersion = "1"
	}
	f.put(withCEL(claimFor("small", DefaultDRAMIGDeviceClass, 1), "device.attributes['gpu.nvidia.com'].profile.startsWith('1g.18gb')"))
	f.put(migClaim("full", "7g.141gb"))
	h, io := newDRAHost(t, f, node("h200-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p-small", "small")}
	h.cycle(ctx)
	if len(io.activated) != 1 {
		t.Fatalf("activated %v; pending %v", io.activated, io.pending)
	}
	bindDRA(h, io)
	h.cycle(ctx)
	f.slices = nvdra.Node{Name: "h200-1", GPUs: 1, Product: "NVIDIA H200", Profiles: ps, Slots: 8}.Slices()
	for _, s := range f.slices {
		s.ResourceVersion = "2"
	}
	// A restarted scheduler reads the bound pod from its allocation.
	h2, io2 := newDRAHost(t, f, node("h200-1", -1, nil))
	io2.pods = append(io.pods, draPodOf("p-full", "full"))
	h2.cycle(ctx)
	if c := f.claims["default/full"]; c.Status.Allocation != nil {
		t.Errorf("7g.141gb given %s beside the bound 1g.18gb", c.Status.Allocation.Devices.Results[0].Device)
	}
	if m := h2.s.Ledger().GPU(0).MIGSlots; bits.OnesCount16(m) != 1 {
		t.Errorf("the GPU's MIG slots are %09b, want the bound pod's one", m)
	}
}

// TestDRAMIGProfileFollowsSlices (kube plugin, DRA): the profile a MIG
// request's selectors name is remembered for the slices it was found on
// (migProfiles), and found again when they change: with no slices a
// 1g.18gb pod says no MIG device matches; once an H200 node publishes
// the capture's devices, a new pod of the same selectors gets a view
// restricted to that node; once the node's slices are gone, a new pod
// says no device matches again.
func TestDRAMIGProfileFollowsSlices(t *testing.T) {
	ps, err := nvdra.ReadCapture(h200Capture)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeDRA()
	f.put(migClaim("c", "1g.18gb"))
	d := newDRA(defaultArgs(), f, noLedger{}, klog.Background())
	view := func(name string) *draPod {
		t.Helper()
		d.readSlices()
		p := draPodOf(name, "c")
		delete(d.pods, p.UID)
		return d.pod(p)
	}
	const none = "no MIG device of the slices matches its CEL selectors"
	if dp := view("p0"); dp.out != nil || !strings.Contains(dp.why, none) {
		t.Fatalf("with no slices: view %v, why %q; want left out saying %q", dp.out != nil, dp.why, none)
	}
	for _, s := range (nvdra.Node{Name: "h200-1", GPUs: 8, Product: "NVIDIA H200", Profiles: ps, Slots: 8}).Slices() {
		s.ResourceVersion = "1"
		f.slices = append(f.slices, s)
	}
	for _, name := range []string{"p1", "p2"} { // (p2: the remembered profile)
		dp := view(name)
		if dp.out == nil {
			t.Fatalf("%s with the H200 published: left out: %s", name, dp.why)
		}
		terms := dp.out.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || !strings.Contains(fmt.Sprint(terms), "h200-1") {
			t.Fatalf("%s's view is restricted to %v, want h200-1 alone", name, terms)
		}
	}
	f.slices = nil
	if dp := view("p3"); dp.out != nil || !strings.Contains(dp.why, none) {
		t.Fatalf("with the slices gone: view %v, why %q; want left out saying %q", dp.out != nil, dp.why, none)
	}
}
