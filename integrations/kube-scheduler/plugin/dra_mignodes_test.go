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
)

// Several DRA GPU nodes (issue 27): device names (gpu-0, gpu-0-mig-…)
// and counter sets (gpu-0-counter-set) repeat on every node, so what a
// claim holds is a (pool, device) and what it consumes a (pool, counter
// set, counter).

// draCluster is a fakeDRA publishing one node per shape, "mig:N" (an H200
// node h200-K of N GPUs with the capture's MIG devices) or "dgx" (a DGX
// H100 dgx-K), and those nodes.
func draCluster(t *testing.T, shapes ...string) (*fakeDRA, []*v1.Node) {
	t.Helper()
	ps, err := nvdra.ReadCapture(h200Capture)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeDRA()
	var nodes []*v1.Node
	for i, sh := range shapes {
		var name string
		switch {
		case sh == "dgx":
			name = fmt.Sprintf("dgx-%d", i+1)
			f.slices = append(f.slices, dgxSlice(name))
		case strings.HasPrefix(sh, "mig:"):
			var gpus int
			fmt.Sscanf(sh, "mig:%d", &gpus)
			name = fmt.Sprintf("h200-%d", i+1)
			for _, s := range (nvdra.Node{Name: name, GPUs: gpus, Product: "NVIDIA H200", Profiles: ps, Slots: 8}).Slices() {
				s.ResourceVersion = "1"
				f.slices = append(f.slices, s)
			}
		default:
			t.Fatalf("shape %q", sh)
		}
		nodes = append(nodes, node(name, -1, nil))
	}
	return f, nodes
}

// draWant is what a claim asks for: a MIG profile, or whole GPUs.
type draWant struct {
	profile string
	gpus    int
}

// draUse is what checkDRAClaims found: allocated claims per node, and
// the counters consumed (pool/set/counter) with their limits.
type draUse struct {
	perNode     map[string]int
	used, limit map[string]resource.Quantity
	devs        map[string]resourceapi.Device // pool/device
}

// fits reports whether some MIG device of profile is free: its counters,
// added to what the claims consume, stay within their values.
func (u draUse) fits(profile string) bool {
	for _, k := range sortedKeys(u.devs) {
		d := u.devs[k]
		if p := d.Attributes["profile"].StringValue; p == nil || *p != profile {
			continue
		}
		pool, _, _ := strings.Cut(k, "/")
		ok := true
		for _, cc := range d.ConsumesCounters {
			for n, v := range cc.Counters {
				c := pool + "/" + cc.CounterSet + "/" + n
				sum := u.used[c]
				sum.Add(v.Value)
				ok = ok && sum.Cmp(u.limit[c]) <= 0
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// checkDRAClaims checks every allocated claim of f against the slices
// and wants (claim name → what it asks for), and returns what they use:
// each claim's devices are of the pool of the
// node its allocation selects, which is its pod's node when bound; a MIG
// device is of the claim's profile at a legal placement of it; a claim
// of whole GPUs has that many GPUs; no (pool, device) is in two claims;
// no counter of a (pool, counter set) is consumed past its value.
func checkDRAClaims(t *testing.T, f *fakeDRA, io *fakeIO, wants map[string]draWant, ps []nvdra.Profile) draUse {
	t.Helper()
	devs := map[string]resourceapi.Device{} // pool/device
	limit := map[string]resource.Quantity{} // pool/set/counter
	for _, s := range f.slices {
		pool := s.Spec.Pool.Name
		for _, cs := range s.Spec.SharedCounters {
			for k, v := range cs.Counters {
				limit[pool+"/"+cs.Name+"/"+k] = v.Value
			}
		}
		for _, d := range s.Spec.Devices {
			devs[pool+"/"+d.Name] = d
		}
	}
	podNode := map[string]string{}
	for _, p := range io.pods {
		for _, rc := range p.Spec.ResourceClaims {
			podNode[*rc.ResourceClaimName] = p.Spec.NodeName
		}
	}
	holder := map[string]string{}
	used := map[string]resource.Quantity{}
	perNode := map[string]int{}
	for _, k := range sortedKeys(f.claims) {
		c := f.claims[k]
		if c.Status.Allocation == nil {
			continue
		}
		node := ""
		if ns := c.Status.Allocation.NodeSelector; ns != nil && len(ns.NodeSelectorTerms) == 1 && len(ns.NodeSelectorTerms[0].MatchFields) == 1 {
			node = ns.NodeSelectorTerms[0].MatchFields[0].Values[0]
		}
		if node == "" || podNode[c.Name] != "" && podNode[c.Name] != node {
			t.Errorf("claim %s allocated on node %q, its pod bound to %q", c.Name, node, podNode[c.Name])
		}
		perNode[node]++
		w := wants[c.Name]
		if w.profile == "" && len(c.Status.Allocation.Devices.Results) != w.gpus {
			t.Errorf("claim %s: %d devices, want %d GPUs", c.Name, len(c.Status.Allocation.Devices.Results), w.gpus)
		}
		for _, res := range c.Status.Allocation.Devices.Results {
			key := res.Pool + "/" + res.Device
			d, ok := devs[key]
			switch {
			case !ok:
				t.Errorf("claim %s names %s, no device of the slices", c.Name, key)
				continue
			case res.Pool != node:
				t.Errorf("claim %s on node %s names a device of pool %s", c.Name, node, res.Pool)
			case holder[key] != "":
				t.Errorf("device %s in claims %s and %s", key, holder[key], c.Name)
			}
			holder[key] = c.Name
			for _, cc := range d.ConsumesCounters {
				for n, v := range cc.Counters {
					u := used[res.Pool+"/"+cc.CounterSet+"/"+n]
					u.Add(v.Value)
					used[res.Pool+"/"+cc.CounterSet+"/"+n] = u
				}
			}
			prof := ""
			if p := d.Attributes["profile"].StringValue; p != nil {
				prof = *p
			}
			if prof != w.profile {
				t.Errorf("claim %s: %s (profile %q), want %q", c.Name, key, prof, w.profile)
				continue
			}
			if prof != "" {
				_, start, size := migPlace(d)
				k := slices.IndexFunc(ps, func(x nvdra.Profile) bool { return x.Name == prof })
				if k < 0 || size != ps[k].Size || !slices.Contains(ps[k].Starts, start) {
					t.Errorf("claim %s: %s at slices %d..%d, not a placement of %s", c.Name, key, start, start+size-1, prof)
				}
			}
		}
	}
	for _, k := range sortedKeys(used) {
		if lim, u := limit[k], used[k]; u.Cmp(lim) > 0 {
			t.Errorf("counter %s: %s consumed of %s", k, u.String(), lim.String())
		}
	}
	return draUse{perNode: perNode, used: used, limit: limit, devs: devs}
}

// TestDRAMIGTwoNodes: two, then three, H200 nodes with dynamic MIG (the
// capture's profiles, device and counter-set names repeated per node):
// 7g.141gb, 3g.71gb and 1g.18gb pods are all placed, on every node, each
// with a MIG device of its profile at a legal placement of its node's
// pool; no counter over-consumed, no device in two claims. Before the
// fix no pod was placed ("cluster has 2 free GPUs: fragmentation"): the
// nodes a MIG claim may use were one metadata.name In [a, b] node field
// selector, which kube's node affinity only accepts with one value.
func TestDRAMIGTwoNodes(t *testing.T) {
	ps, _ := nvdra.ReadCapture(h200Capture)
	for _, tc := range []struct {
		shapes []string
		pods   map[string]int // profile → pods
	}{
		{[]string{"mig:1", "mig:1"}, map[string]int{"7g.141gb": 1, "3g.71gb": 1, "1g.18gb": 3}},
		{[]string{"mig:2", "mig:2", "mig:2"}, map[string]int{"7g.141gb": 2, "3g.71gb": 4, "1g.18gb": 6}},
	} {
		t.Run(fmt.Sprint(len(tc.shapes)), func(t *testing.T) {
			f, nodes := draCluster(t, tc.shapes...)
			h, io := newDRAHost(t, f, nodes...)
			wants := map[string]draWant{}
			for _, prof := range sortedKeys(tc.pods) {
				for i := range tc.pods[prof] {
					name := fmt.Sprintf("%s-%d", strings.ReplaceAll(prof, ".", ""), i)
					f.put(migClaim(name, prof))
					wants[name] = draWant{profile: prof}
					io.pods = append(io.pods, draPodOf("p-"+name, name))
				}
			}
			ctx := context.Background()
			h.cycle(ctx)
			bindDRA(h, io)
			h.cycle(ctx)
			if len(io.activated) != len(wants) {
				t.Fatalf("activated %v of %d pods; pending %v", io.activated, len(wants), io.pending)
			}
			use := checkDRAClaims(t, f, io, wants, ps)
			if len(use.perNode) != len(nodes) {
				t.Errorf("claims per node %v: want every node used", use.perNode)
			}
			// A restarted scheduler reads them back: one 1g.18gb more
			// is placed if and only if a device of it is free.
			h2, io2 := newDRAHost(t, f, nodes...)
			io2.pods = append(slices.Clone(io.pods), draPodOf("p-more", "more"))
			f.put(migClaim("more", "1g.18gb"))
			wants["more"] = draWant{profile: "1g.18gb"}
			h2.cycle(ctx)
			bindDRA(h2, io2)
			h2.cycle(ctx)
			if want := use.fits("1g.18gb"); slices.Contains(io2.activated, "p-more") != want {
				t.Errorf("after a restart p-more activated %v, a device free %v: %v", io2.activated, want, io2.pending)
			}
			checkDRAClaims(t, f, io2, wants, ps)
		})
	}
}

// TestDRASeveralNodesChurn (property): on random clusters — 1 to 4 H200
// MIG nodes of 1 or 2 GPUs; two DGX H100s; one MIG H200 beside one DGX
// H100 — random pods come and go (MIG pods of any capture profile where
// MIG nodes are; whole-GPU pods of 1, 2, 4 or 8 GPUs, half of them with a
// productName selector), with restarts of the scheduler between cycles.
// After every cycle the claims hold (checkDRAClaims), an empty cluster
// places a waiting pod that fits a node, and over the run every node is
// given claims.
func TestDRASeveralNodesChurn(t *testing.T) {
	ps, err := nvdra.ReadCapture(h200Capture)
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(14) {
		rng := rand.New(rand.NewPCG(seed, 27))
		var shapes []string
		switch {
		case seed == 12:
			shapes = []string{"dgx", "dgx"}
		case seed == 13:
			shapes = []string{"mig:1", "dgx"}
		default:
			for range 1 + rng.IntN(4) {
				shapes = append(shapes, fmt.Sprintf("mig:%d", 1+rng.IntN(2)))
			}
		}
		t.Run(fmt.Sprintf("%d-%s", seed, strings.Join(shapes, ",")), func(t *testing.T) {
			churnDRA(t, rng, shapes, ps)
		})
	}
}

// churnDRA runs TestDRASeveralNodesChurn's steps on a cluster of shapes.
func churnDRA(t *testing.T, rng *rand.Rand, shapes []string, ps []nvdra.Profile) {
	f, nodes := draCluster(t, shapes...)
	mig := slices.ContainsFunc(shapes, func(s string) bool { return strings.HasPrefix(s, "mig:") })
	var products []string // the GPU products of the nodes
	if mig {
		products = append(products, "NVIDIA H200")
	}
	if slices.Contains(shapes, "dgx") {
		products = append(products, "NVIDIA H100 80GB HBM3")
	}
	h, io := newDRAHost(t, f, nodes...)
	ctx := context.Background()
	wants := map[string]draWant{}
	given := map[string]int{}
	placed := 0
	for step := range 50 {
		switch r := rng.IntN(10); {
		case r < 4 && len(io.pods) > 0:
			k := rng.IntN(len(io.pods))
			io.pods = slices.Delete(io.pods, k, k+1) // it ended (or was deleted waiting)
		case r == 4:
			// A restart: the claims are the record.
			pods := io.pods
			h, io = newDRAHost(t, f, nodes...)
			io.pods = pods
		default:
			name := fmt.Sprintf("c%02d", step)
			if mig && rng.IntN(4) != 0 {
				prof := ps[rng.IntN(len(ps))].Name
				f.put(migClaim(name, prof))
				wants[name] = draWant{profile: prof}
			} else {
				n := []int{1, 1, 2, 4, 8}[rng.IntN(5)]
				c := claimFor(name, DefaultDRADeviceClass, n)
				if rng.IntN(2) == 0 {
					c = withCEL(c, fmt.Sprintf("device.attributes['gpu.nvidia.com'].productName == '%s'", products[rng.IntN(len(products))]))
				}
				f.put(c)
				wants[name] = draWant{gpus: n}
			}
			io.pods = append(io.pods, draPodOf("p"+name, name))
		}
		io.activated = nil
		before := checkDRAClaims(t, f, io, wants, ps)
		h.cycle(ctx)
		placed += len(io.activated)
		bindDRA(h, io)
		use := checkDRAClaims(t, f, io, wants, ps)
		for n, c := range use.perNode {
			given[n] += c
		}
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
		// No MIG pod waits while a device of its profile is free on
		// some node, but for capacity held for a waiting job (the
		// scheduler's reason now: a pod's note is rate-limited).
		for _, p := range io.pods {
			w := wants[*p.Spec.ResourceClaims[0].ResourceClaimName]
			if p.Spec.NodeName != "" || w.profile == "" || !use.fits(w.profile) {
				continue
			}
			st, _ := h.s.Job(jobID(p, h.args))
			if why := fmt.Sprint(st.Reason); !strings.Contains(why, "reserved") {
				t.Fatalf("step %d: %s (%s) waits with a device of its profile free: %s", step, p.Name, w.profile, why)
			}
		}
		// An empty cluster places a waiting pod that fits an empty node.
		if len(before.perNode) == 0 && len(io.activated) == 0 {
			for _, p := range io.pods {
				w := wants[*p.Spec.ResourceClaims[0].ResourceClaimName]
				if p.Spec.NodeName == "" && (w.profile != "" || w.gpus == 1) {
					t.Fatalf("step %d: the cluster is empty and %s waits: %s", step, p.Name, io.pending[p.Name])
				}
			}
		}
	}
	if len(given) < min(len(nodes), 2) {
		t.Errorf("%d pods placed, allocated claims per node summed over the steps %v: want two nodes of %d used", placed, given, len(nodes))
	}
	t.Logf("%d pods placed; allocated claims per node summed over the steps %v", placed, given)
}
