package plugin

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDemandOf(t *testing.T) {
	a := defaultArgs()
	p := pod("p", "", 2, 1500)
	p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("1537Ki") // 1.5 MiB + 1 KiB
	// An init container asking for more GPUs sets the pod's effective request.
	p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{DefaultGPUResource: resource.MustParse("4")},
		Limits:   v1.ResourceList{DefaultGPUResource: resource.MustParse("4")}}}}
	d := demandOf(p, a)
	if d.gpus != 4 || d.cpuMilli != 1500 || d.memoryMiB != 2 {
		t.Errorf("demand %+v, want 4 GPUs (init container), 1500m CPU, 2 MiB (rounded up)", d)
	}
}

func TestGangOf(t *testing.T) {
	a := defaultArgs()
	mk := func(labels, annotations map[string]string) *v1.Pod {
		p := pod("m", "", 1, 0)
		p.Labels, p.Annotations = labels, annotations
		return p
	}
	g, ok, err := gangOf(mk(map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "4"},
		map[string]string{DefaultGangMinKey: "2", DefaultGangTopologyKey: "tor", DefaultGangPreferredKey: "nvlink, host,nvlink"}), a)
	if err != nil || !ok {
		t.Fatalf("gangOf: %v %v", ok, err)
	}
	if g.key != "default/g" || g.size != 4 || g.min != 2 || g.required != "tor" || !slices.Equal(g.preferred, []string{"nvlink", "host"}) {
		t.Errorf("gang %+v", g)
	}
	if cs := g.constraints(); len(cs) != 3 || !cs[0].Required || cs[0].Level != "tor" || cs[1].Required {
		t.Errorf("constraints %+v", cs)
	}
	if _, ok, _ := gangOf(mk(nil, nil), a); ok {
		t.Error("a pod without the gang label is in a gang")
	}
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{DefaultGangLabel: "g"}, DefaultGangSizeKey},
		{map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "zero"}, DefaultGangSizeKey},
		{map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "0"}, DefaultGangSizeKey},
		{map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2", DefaultGangMinKey: "3"}, DefaultGangMinKey},
	} {
		if _, _, err := gangOf(mk(tc.labels, nil), a); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("gangOf(%v) error %v, want one naming %s", tc.labels, err, tc.want)
		}
	}
}

func TestIndices(t *testing.T) {
	if got := formatIndices([]int{0, 3, 7}); got != "0,3,7" {
		t.Errorf("formatIndices = %q", got)
	}
	for _, tc := range []struct {
		s    string
		n    int
		want []int
	}{
		{"0,3,7", 8, []int{0, 3, 7}},
		{" 1 , 2", 8, []int{1, 2}},
		{"8", 8, nil},   // out of range
		{"1,1", 8, nil}, // repeated
		{"-1", 8, nil},
		{"a", 8, nil},
		{"", 8, nil},
	} {
		if got := parseIndices(tc.s, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("parseIndices(%q, %d) = %v, want %v", tc.s, tc.n, got, tc.want)
		}
	}
}

func FuzzParseIndices(f *testing.F) {
	for _, s := range []string{"0,3,7", "", "1,,2", "99999999999999999999", "-0"} {
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		idx := parseIndices(s, n)
		if idx == nil {
			return
		}
		for i, x := range idx {
			if x < 0 || x >= n || slices.Contains(idx[:i], x) {
				t.Fatalf("parseIndices(%q, %d) = %v", s, n, idx)
			}
		}
		if again := parseIndices(formatIndices(idx), n); !slices.Equal(again, idx) {
			t.Fatalf("round trip %v → %v", idx, again)
		}
	})
}
