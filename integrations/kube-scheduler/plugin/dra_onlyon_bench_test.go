package plugin

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/internal/nvdra"
	"github.com/gpusched/gpusched/topology"
)

// noLedger is a ledger owner with no ledger yet.
type noLedger struct{}

func (noLedger) readLedger(func(topology.LedgerReader)) bool { return false }

// BenchmarkOnlyOnMIGNodes measures what onlyOn's node restriction (one
// required NodeAffinity term per node, docs/dra.md) costs a MIG pod at
// 1,000 H200 nodes of 8 GPUs that all take its profile: making its view
// (drat.pod: CEL selectors over the nodes' MIG devices, then onlyOn),
// and matching that view against every node, as the state's eligibility
// and kube's NodeAffinity filter each do once per cycle.
func BenchmarkOnlyOnMIGNodes(b *testing.B) {
	const nodes = 1000
	ps, err := nvdra.ReadCapture(h200Capture)
	if err != nil {
		b.Fatal(err)
	}
	f := newFakeDRA()
	var ns []*v1.Node
	for i := range nodes {
		name := fmt.Sprintf("h200-%d", i+1)
		for _, s := range (nvdra.Node{Name: name, GPUs: 8, Product: "NVIDIA H200", Profiles: ps, Slots: 8}).Slices() {
			s.ResourceVersion = "1"
			f.slices = append(f.slices, s)
		}
		ns = append(ns, node(name, -1, nil))
	}
	f.put(migClaim("c", "1g.18gb"))
	d := newDRA(defaultArgs(), f, noLedger{}, klog.Background())
	d.readSlices()
	p := draPodOf("p", "c")
	view := d.pod(p)
	if view.out == nil || len(view.out.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) != nodes {
		b.Fatalf("the MIG pod's view is not restricted to the %d nodes: %+v", nodes, view)
	}
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			delete(d.pods, p.UID)
			if dp := d.pod(p); dp.out == nil {
				b.Fatal(dp.why)
			}
		}
	})
	b.Run("onlyOn", func(b *testing.B) {
		names := make([]string, nodes)
		for i, n := range ns {
			names[i] = n.Name
		}
		b.ReportAllocs()
		for b.Loop() {
			onlyOn(p.DeepCopy(), names)
		}
	})
	b.Run("match", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			aff := nodeaffinity.GetRequiredNodeAffinity(view.out)
			for _, n := range ns {
				if ok, err := aff.Match(n); err != nil || !ok {
					b.Fatalf("node %s: %v %v", n.Name, ok, err)
				}
			}
		}
	})
}
