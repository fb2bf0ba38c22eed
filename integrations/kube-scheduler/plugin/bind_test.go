package plugin

import (
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// listingHandle is a fakeHandle whose framework lists its Bind plugins.
type listingHandle struct {
	*fakeHandle
	bind []string
}

func (h *listingHandle) ListPlugins() *config.Plugins {
	ps := &config.Plugins{}
	for _, n := range h.bind {
		ps.Bind.Enabled = append(ps.Bind.Enabled, config.Plugin{Name: n})
	}
	return ps
}

func TestBinderBindsOnlyWhenFirst(t *testing.T) {
	for _, c := range []struct {
		bind []string
		want bool
	}{
		{[]string{Name, "DefaultBinder"}, true},
		{[]string{"DefaultBinder", Name}, false},
		{nil, false},
	} {
		b := &binder{handle: &listingHandle{fakeHandle: &fakeHandle{}, bind: c.bind}}
		if got := b.bindsFirst(); got != c.want {
			t.Errorf("bind plugins %v: bindsFirst %v, want %v", c.bind, got, c.want)
		}
	}
	// A handle that lists nothing (and no binder at all): PreBind writes.
	if (&binder{handle: &fakeHandle{}}).bindsFirst() || (*binder)(nil).bindsFirst() {
		t.Error("bindsFirst without a plugin list: want false")
	}
}

// TestPreBindLeavesIndicesToBind: when GPUSched binds first, PreBind has
// nothing to write (PreBindPreFlight skips it, so kube-scheduler makes no
// nominated-node patch either); else it writes the indices as before.
func TestPreBindLeavesIndicesToBind(t *testing.T) {
	for _, first := range []bool{false, true} {
		hs := newHarness(t, defaultArgs(), gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
		if first {
			hs.p.binder = &binder{handle: &listingHandle{fakeHandle: hs.h, bind: []string{Name, "DefaultBinder"}}}
		}
		p := hs.add(pod("p", "", 2, 100))
		node, st, _ := hs.schedule(p)
		if !st.IsSuccess() || node != "n1" {
			t.Fatalf("first=%v: scheduled on %q, %v", first, node, st)
		}
		_, pre := hs.p.PreBindPreFlight(t.Context(), hs.states[p.UID], p, node)
		if got := pre.IsSkip(); got != first {
			t.Errorf("first=%v: PreBindPreFlight skips %v", first, got)
		}
		if st := hs.p.PreBind(t.Context(), hs.states[p.UID], p, node); !st.IsSuccess() {
			t.Fatalf("first=%v: PreBind %v", first, st)
		}
		if _, wrote := hs.annotations["p"]; wrote == first {
			t.Errorf("first=%v: PreBind wrote the annotation: %v", first, wrote)
		}
	}
}
