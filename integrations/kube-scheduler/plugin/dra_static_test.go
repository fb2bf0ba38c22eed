package plugin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/internal/nvdra"
	"github.com/gpusched/gpusched/topology"
)

// h200Static returns the capture's H200 profiles (as nvdra reads them and
// as indepCheck checks placements) and a fakeDRA with, for each node of
// nodes, the slice NVIDIA's driver publishes without dynamic MIG:
// nodes[name] is its whole GPUs' count then each static GPU's layout.
func h200Static(t *testing.T, nodes map[string][][]string) ([]indepProfile, *fakeDRA) {
	t.Helper()
	ps, err := nvdra.ReadCapture(h200Capture)
	if err != nil {
		t.Fatal(err)
	}
	var profiles []indepProfile
	for _, p := range ps {
		profiles = append(profiles, indepProfile{name: p.Name, id: p.ID, size: p.Size, starts: p.Starts})
	}
	f := newFakeDRA()
	for _, name := range sortedKeys(nodes) {
		whole := 0
		fmt.Sscanf(nodes[name][0][0], "%d", &whole)
		s, err := nvdra.StaticSlice(name, "NVIDIA H200", whole, ps, nodes[name][1:]...)
		if err != nil {
			t.Fatal(err)
		}
		s.ResourceVersion = "1"
		f.slices = append(f.slices, s)
	}
	return profiles, f
}

// staticDevs returns the devices each allocated claim of f names.
func staticDevs(t *testing.T, f *fakeDRA, io *fakeIO, profiles []indepProfile) map[string]string {
	t.Helper()
	out := map[string]string{}
	for c, ds := range indepCheck(t, f, io, profiles) {
		out[c] = strings.Join(names(ds), ",")
	}
	return out
}

// TestDRAStaticMIGH200: two H200 nodes published as NVIDIA's driver does
// without dynamic MIG, with the real capture's profiles: h200s-1 all in
// static MIG mode (GPU 0: 2g.35gb@0, 1g.18gb+me@2, 1g.18gb@3, 3g.71gb@4;
// GPU 1: seven 1g.18gb), h200s-2 one whole GPU and one of four 1g.35gb.
// Each MIG claim gets a free device of its profile, the 1g.18gb ones
// packed beside the used devices of GPU 0 before GPU 1's; the second
// 1g.18gb+me waits (there is one); whole GPUs go to whole-GPU claims only
// (the second waits); a restarted scheduler reads the devices back from
// the claims and gives a new pod another device.
func TestDRAStaticMIGH200(t *testing.T) {
	profiles, f := h200Static(t, map[string][][]string{
		"h200s-1": {{"0"}, {"2g.35gb@0", "1g.18gb+me@2", "1g.18gb@3", "3g.71gb@4"},
			{"1g.18gb@0", "1g.18gb@1", "1g.18gb@2", "1g.18gb@3", "1g.18gb@4", "1g.18gb@5", "1g.18gb@6"}},
		"h200s-2": {{"1"}, {"1g.35gb@0", "1g.35gb@2", "1g.35gb@4", "1g.35gb@6"}},
	})
	for name, prof := range map[string]string{"me": "1g.18gb+me", "me2": "1g.18gb+me", "one": "1g.18gb", "two": "1g.18gb", "three": "1g.18gb",
		"wide": "1g.35gb", "big": "3g.71gb", "four": "4g.71gb"} {
		f.put(migClaim(name, prof))
	}
	f.put(claimFor("whole", DefaultDRADeviceClass, 1))
	f.put(claimFor("whole2", DefaultDRADeviceClass, 1))
	h, io := newDRAHost(t, f, node("h200s-1", -1, nil), node("h200s-2", -1, nil))
	ctx := context.Background()
	for _, p := range []string{"me", "me2", "one", "two", "wide", "big", "four", "whole", "whole2"} {
		io.pods = append(io.pods, draPodOf("p-"+p, p))
		h.cycle(ctx)
		bindDRA(h, io)
	}
	h.cycle(ctx)
	got := staticDevs(t, f, io, profiles)
	want := map[string]string{"me": "gpu-0-mig-20-2-1", "one": "gpu-0-mig-19-3-1", "two": "gpu-1-mig-19-0-1",
		"wide": "gpu-1-mig-15-0-2", "big": "gpu-0-mig-9-4-4", "whole": "gpu-0"}
	for _, c := range sortedKeys(want) {
		if got[c] != want[c] {
			t.Errorf("claim %s: %q, want %s; pending %q", c, got[c], want[c], io.pending["p-"+c])
		}
	}
	if n := f.claims["default/wide"].Status.Allocation.NodeSelector.NodeSelectorTerms[0].MatchFields[0].Values[0]; n != "h200s-2" {
		t.Errorf("wide on %s", n)
	}
	for _, c := range []string{"me2", "four", "whole2"} {
		if got[c] != "" || io.pending["p-"+c] == "" {
			t.Errorf("claim %s: %q, reason %q; want it waiting", c, got[c], io.pending["p-"+c])
		}
	}
	if !strings.Contains(io.pending["p-four"], "no MIG device of the slices matches") {
		t.Errorf("p-four: %q", io.pending["p-four"])
	}
	// The library's GPUs: h200s-1's two and h200s-2's second take no job.
	c := h.topo.Cluster
	for _, x := range []struct {
		node string
		gpu  int
		want topology.Health
	}{{"h200s-1", 0, topology.Draining}, {"h200s-1", 1, topology.Draining}, {"h200s-2", 0, topology.Healthy}, {"h200s-2", 1, topology.Draining}} {
		hid, ok := c.HostByName(x.node)
		first, _ := c.HostGPUs(hid)
		if st := h.s.Ledger().GPU(first + topology.GPUID(x.gpu)); !ok || st.Health != x.want {
			t.Errorf("%s GPU %d: %v, want %v", x.node, x.gpu, st.Health, x.want)
		}
	}

	// Restart: the devices are read back from the claims; a new 1g.18gb
	// pod gets the next free device of GPU 1, no device twice.
	h2, io2 := newDRAHost(t, f, node("h200s-1", -1, nil), node("h200s-2", -1, nil))
	io2.pods = slices.Clone(io.pods)
	io2.pods = append(io2.pods, draPodOf("p-three", "three"))
	h2.cycle(ctx)
	bindDRA(h2, io2)
	h2.cycle(ctx)
	got2 := staticDevs(t, f, io2, profiles)
	for c, d := range got {
		if got2[c] != d {
			t.Errorf("after the restart claim %s: %q, was %q", c, got2[c], d)
		}
	}
	if got2["three"] != "gpu-1-mig-19-1-1" {
		t.Errorf("three after the restart: %q; pending %q", got2["three"], io2.pending["p-three"])
	}
}

// TestDRAStaticMIGChurn: pods of random profiles come and go on two
// nodes of static MIG GPUs for many cycles. After every cycle no device
// is in two claims, every device sits at a legal placement of its profile
// (indepCheck), every allocated claim is reserved for a live pod, and a
// pod waits only when no free device of its profile is left.
func TestDRAStaticMIGChurn(t *testing.T) {
	layout := [][]string{{"1"}, {"3g.71gb@4", "2g.35gb@0", "1g.18gb@2", "1g.18gb@3"}, {"1g.35gb@0", "1g.35gb@2", "1g.18gb@4", "1g.18gb@5", "1g.18gb@6"}}
	profiles, f := h200Static(t, map[string][][]string{"c-1": layout, "c-2": layout})
	free := map[string]int{"3g.71gb": 2, "2g.35gb": 2, "1g.18gb": 10, "1g.35gb": 4}
	h, io := newDRAHost(t, f, node("c-1", -1, nil), node("c-2", -1, nil))
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(27, 1))
	kinds := sortedKeys(free)
	profileOf := map[string]string{}
	allocated, full := 0, 0
	for round := range 40 {
		for range rng.IntN(6) {
			name := fmt.Sprintf("r%d-%d", round, len(io.pods))
			prof := kinds[rng.IntN(len(kinds))]
			f.put(migClaim(name, prof))
			profileOf[name] = prof
			io.pods = append(io.pods, draPodOf("p-"+name, name))
		}
		h.cycle(ctx)
		bindDRA(h, io)
		// Some running pods end.
		for i, p := range io.pods {
			if p.Spec.NodeName != "" && p.Status.Phase == "" && rng.IntN(3) == 0 {
				q := p.DeepCopy()
				q.Status.Phase = v1.PodSucceeded
				io.pods[i] = q
			}
		}
		h.cycle(ctx)
		got := indepCheck(t, f, io, profiles)
		used := map[string]int{}
		for c := range got {
			cl := f.claims["default/"+c]
			live := slices.ContainsFunc(io.pods, func(p *v1.Pod) bool {
				return p.Status.Phase == "" && slices.ContainsFunc(cl.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == p.UID })
			})
			if !live {
				t.Errorf("round %d: claim %s allocated (%v) for no live pod", round, c, names(got[c]))
			}
			used[profileOf[c]]++
		}
		for _, p := range io.pods {
			c := strings.TrimPrefix(p.Name, "p-")
			if p.Status.Phase == "" && p.Spec.NodeName == "" && used[profileOf[c]] < free[profileOf[c]] && io.pending[p.Name] != "" {
				// (it may wait one cycle for the claims freed this one)
				if _, ok := h.assignmentOf(p.UID); !ok && !strings.Contains(io.pending[p.Name], "no node has free static MIG devices") {
					t.Errorf("round %d: %s (%s) waits with %d of %d used: %q", round, p.Name, profileOf[c], used[profileOf[c]], free[profileOf[c]], io.pending[p.Name])
				}
			}
		}
		io.pods = slices.DeleteFunc(io.pods, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded && rng.IntN(2) == 0 })
		allocated += len(got)
		for prof, n := range used {
			if n == free[prof] {
				full++
			}
			if n > free[prof] {
				t.Errorf("round %d: %d claims of %s, %d devices", round, n, prof, free[prof])
			}
		}
	}
	// (real work: many allocations, profiles used up at times)
	if allocated < 100 || full < 5 {
		t.Errorf("%d allocations over the rounds, a profile's devices all used %d times", allocated, full)
	}
	t.Logf("%d allocations over the rounds, a profile's devices all used %d times", allocated, full)
}

// TestDRAStaticMIGTaint: a static MIG device tainted NoSchedule is not
// given to a request that does not tolerate it (another device is);
// NoExecute on a device a pod holds recovers that pod's job, and not the
// job on another device of the same GPU.
func TestDRAStaticMIGTaint(t *testing.T) {
	profiles, f := h200Static(t, map[string][][]string{"t-1": {{"0"}, {"1g.18gb@0", "1g.18gb@1", "1g.18gb@2", "1g.18gb@3"}}})
	for _, c := range []string{"a", "b", "c"} {
		f.put(migClaim(c, "1g.18gb"))
	}
	taintDevice(f, "gpu-0-mig-19-0-1", "2", resourceapi.DeviceTaint{Key: "gpu.nvidia.com/xid", Value: "13", Effect: resourceapi.DeviceTaintEffectNoSchedule})
	h, io := newDRAHost(t, f, node("t-1", -1, nil))
	h.args.DeleteOnRecovery = true
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p-a", "a"), draPodOf("p-b", "b")}
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	got := staticDevs(t, f, io, profiles)
	if got["a"] == "" || got["b"] == "" || got["a"] == got["b"] || got["a"] == "gpu-0-mig-19-0-1" || got["b"] == "gpu-0-mig-19-0-1" {
		t.Fatalf("a %q, b %q: want two untainted devices; pending %v", got["a"], got["b"], io.pending)
	}
	taintDevice(f, got["a"], "3", resourceapi.DeviceTaint{Key: "gpu.nvidia.com/xid", Value: "48", Effect: resourceapi.DeviceTaintEffectNoExecute})
	io.pods = append(io.pods, draPodOf("p-c", "c"))
	h.cycle(ctx)
	h.cycle(ctx)
	if !recovered(io, "p-a") || !slices.Contains(io.deleted, "p-a") {
		t.Errorf("no recovery of p-a on the NoExecute device %s: events %v, deleted %v", got["a"], io.events, io.deleted)
	}
	if recovered(io, "p-b") {
		t.Errorf("p-b recovered: events %v", io.events)
	}
	if c := staticDevs(t, f, io, profiles)["c"]; c == got["a"] || c == "gpu-0-mig-19-0-1" {
		t.Errorf("c given the tainted device %s", c)
	}
}

// TestDRAStaticMIGPlacement: placement mode on a node of one whole GPU
// and one in static MIG mode: MIG pods get free devices of their profile
// (packed), no device twice, a whole-GPU pod the whole GPU, a second one
// nothing (the static GPU is not given away whole); a node whose one GPU
// is in static MIG mode (no whole GPU, allocatable 0 in placement mode's
// view) takes a pod of its 7g.141gb, a second waits.
func TestDRAStaticMIGPlacement(t *testing.T) {
	profiles, f := h200Static(t, map[string][][]string{"p-1": {{"1"}, {"1g.18gb@0", "1g.18gb@1", "2g.35gb@2", "3g.71gb@4"}}, "p-2": {{"0"}, {"7g.141gb@0"}}})
	f.put(migClaim("a", "1g.18gb"))
	f.put(migClaim("b", "1g.18gb"))
	f.put(migClaim("c", "1g.18gb"))
	f.put(migClaim("big", "3g.71gb"))
	f.put(claimFor("w", DefaultDRADeviceClass, 1))
	f.put(claimFor("w2", DefaultDRADeviceClass, 1))
	f.put(migClaim("seven", "7g.141gb"))
	f.put(migClaim("seven2", "7g.141gb"))
	hs, _ := newDRAHarness(t, f, node("p-1", -1, nil), node("p-2", -1, nil))
	for _, x := range []struct{ pod, node string }{{"big", "p-1"}, {"a", "p-1"}, {"b", "p-1"}, {"c", ""}, {"w", "p-1"}, {"w2", ""}, {"seven", "p-2"}, {"seven2", ""}} {
		p := hs.add(placementDRAPod(x.pod, x.pod))
		n, st, _ := hs.schedule(p)
		if x.node == "" {
			if st == nil {
				t.Errorf("%s: placed on %q; want it refused", x.pod, n)
			}
			continue
		}
		if n != x.node || st != nil {
			t.Fatalf("%s: node %q, status %v; want %s", x.pod, n, st, x.node)
		}
		hs.bind(p, n)
	}
	// A gang member of static MIG devices is refused (scheduler mode's).
	f.put(migClaim("g", "2g.35gb"))
	gp := placementDRAPod("g", "g")
	gp.Labels = map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	if _, st, _ := hs.schedule(hs.add(gp)); st == nil || !strings.Contains(st.Message(), "mode: scheduler") {
		t.Errorf("a static-MIG gang member in placement mode: %v", st)
	}
	got := staticDevs(t, f, &fakeIO{}, profiles)
	want := map[string]string{"big": "gpu-1-mig-9-4-4", "a": "gpu-1-mig-19-0-1", "b": "gpu-1-mig-19-1-1", "w": "gpu-0", "seven": "gpu-0-mig-0-0-8"}
	for _, c := range sortedKeys(want) {
		if got[c] != want[c] {
			t.Errorf("claim %s: %q, want %s", c, got[c], want[c])
		}
	}
}

// TestDRAStaticMIGSeveral: a pod of several static MIG devices (a request
// of two 1g.18gb and one of a 2g.35gb, in two claims) gets them all on
// the one node that has them free; a gang of three 1g.18gb pods on two
// nodes of two free 1g.18gb each is placed whole, no device twice.
func TestDRAStaticMIGSeveral(t *testing.T) {
	profiles, f := h200Static(t, map[string][][]string{
		"s-1": {{"0"}, {"1g.18gb@0", "1g.18gb@1", "2g.35gb@2", "3g.71gb@4"}},
		"s-2": {{"0"}, {"1g.18gb@0", "1g.18gb@1", "3g.71gb@4"}},
	})
	f.put(withCEL(claimFor("pair", DefaultDRAMIGDeviceClass, 2), "device.attributes['gpu.nvidia.com'].profile == '1g.18gb'"))
	f.put(migClaim("mid", "2g.35gb"))
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "3"}
	h, io := newDRAHost(t, f, node("s-1", -1, nil), node("s-2", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p-multi", "pair", "mid")}
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	got := staticDevs(t, f, io, profiles)
	if got["pair"] != "gpu-0-mig-19-0-1,gpu-0-mig-19-1-1" || got["mid"] != "gpu-0-mig-14-2-2" || f.claims["default/pair"].Status.Allocation.Devices.Results[0].Pool != "s-1" {
		t.Fatalf("pair %q, mid %q; pending %v", got["pair"], got["mid"], io.pending)
	}
	// The gang: s-1's 1g.18gb are taken, s-2 has two: it waits, whole.
	for i := range 3 {
		name := fmt.Sprintf("g%d", i)
		f.put(migClaim(name, "1g.18gb"))
		p := draPodOf("p-"+name, name)
		p.Labels = g
		io.pods = append(io.pods, p)
	}
	for range 3 {
		h.cycle(ctx)
		bindDRA(h, io)
	}
	got = staticDevs(t, f, io, profiles)
	if got["g0"] != "" || got["g1"] != "" || got["g2"] != "" {
		t.Errorf("a gang of three on two free devices: %q %q %q", got["g0"], got["g1"], got["g2"])
	}
	if !strings.Contains(io.pending["p-g2"], "no node has free static MIG devices for member p-g2") {
		t.Errorf("p-g2: %q", io.pending["p-g2"])
	}
	// The multi pod ends: four free 1g.18gb on two nodes take the gang.
	io.pods[0] = io.pods[0].DeepCopy()
	io.pods[0].Status.Phase = v1.PodSucceeded
	for range 4 {
		h.cycle(ctx)
		bindDRA(h, io)
	}
	got = staticDevs(t, f, io, profiles)
	if got["g0"] == "" || got["g1"] == "" || got["g2"] == "" {
		t.Errorf("the gang: %q %q %q; pending %v", got["g0"], got["g1"], got["g2"], io.pending)
	}
}

// TestDRAStaticMIGFirstAvailable: a firstAvailable request of static MIG
// devices takes its first subrequest a free device is left for: with the
// one 3g.71gb taken, "big" is passed over and "small" (a 1g.18gb) placed,
// its result naming "mig/small".
func TestDRAStaticMIGFirstAvailable(t *testing.T) {
	profiles, f := h200Static(t, map[string][][]string{"f-1": {{"0"}, {"1g.18gb@0", "1g.18gb@1", "2g.35gb@2", "3g.71gb@4"}}})
	f.put(migClaim("taken", "3g.71gb"))
	c := firstClaim("either", [4]any{"big", DefaultDRAMIGDeviceClass, 1, "device.attributes['gpu.nvidia.com'].profile == '3g.71gb'"},
		[4]any{"small", DefaultDRAMIGDeviceClass, 1, "device.attributes['gpu.nvidia.com'].profile == '1g.18gb'"})
	c.Spec.Devices.Requests[0].Name = "mig"
	f.put(c)
	h, io := newDRAHost(t, f, node("f-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p-taken", "taken")}
	h.cycle(ctx)
	bindDRA(h, io)
	io.pods = append(io.pods, draPodOf("p-either", "either"))
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	got := staticDevs(t, f, io, profiles)
	if got["taken"] != "gpu-0-mig-9-4-4" || got["either"] != "gpu-0-mig-19-0-1" || strings.Join(results(f, "either"), ",") != "mig/small" {
		t.Errorf("taken %q, either %q (%v); pending %v", got["taken"], got["either"], results(f, "either"), io.pending)
	}
}

// TestDRAStaticMIGPackNodes: two nodes of one GPU of four 1g.35gb each;
// pods come one by one, the first selecting k-2 (the second by name): the
// next two go beside it on the node in use (packSingles; the library's
// CPU best fit alone spread them), leaving k-1's GPU all free; a pod of
// all of a node's CPU, which k-2 cannot take, goes to k-1 a cycle later.
func TestDRAStaticMIGPackNodes(t *testing.T) {
	layout := [][]string{{"0"}, {"1g.35gb@0", "1g.35gb@2", "1g.35gb@4", "1g.35gb@6"}}
	profiles, f := h200Static(t, map[string][][]string{"k-1": layout, "k-2": layout})
	h, io := newDRAHost(t, f, node("k-1", -1, nil), node("k-2", -1, nil))
	ctx := context.Background()
	pools := map[string]bool{}
	for i := range 3 {
		name := fmt.Sprintf("m%d", i)
		c := migClaim(name, "1g.35gb")
		if i == 0 {
			c = withCEL(c, "device.attributes['gpu.nvidia.com'].uuid.startsWith('MIG-k-2-')") // (the second node by name)
		}
		f.put(c)
		io.pods = append(io.pods, draPodOf("p-"+name, name))
		h.cycle(ctx)
		bindDRA(h, io)
		pools[f.claims["default/"+name].Status.Allocation.Devices.Results[0].Pool] = true
	}
	staticDevs(t, f, io, profiles)
	if len(pools) != 1 {
		t.Errorf("three pods on nodes %v, want them packed on one", pools)
	}
	// A pod of all a node's CPU does not fit beside them: restricted to
	// k-2 one cycle, it goes to k-1 the next.
	f.put(migClaim("fat", "1g.35gb"))
	fat := draPodOf("p-fat", "fat")
	fat.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = *resource.NewQuantity(64, resource.DecimalSI)
	fat.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = *resource.NewQuantity(64, resource.DecimalSI)
	io.pods = append(io.pods, fat)
	for range 3 {
		h.cycle(ctx)
		bindDRA(h, io)
	}
	if got := staticDevs(t, f, io, profiles)["fat"]; got == "" || f.claims["default/fat"].Status.Allocation.Devices.Results[0].Pool != "k-1" {
		t.Errorf("fat: %q; pending %q", got, io.pending["p-fat"])
	}
}
