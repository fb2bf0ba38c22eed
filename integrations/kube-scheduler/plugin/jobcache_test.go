package plugin

import (
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestJobCacheMatchesJobsOf: over random pod changes (new objects for
// changed pods, as the informer gives), the cache returns what jobsOf
// builds from scratch, and a caller changing a returned job changes
// nothing it returns later.
func TestJobCacheMatchesJobsOf(t *testing.T) {
	a := defaultArgs()
	r := newRand(7)
	var c jobCache
	pods := map[string]*v1.Pod{}
	for step := range 300 {
		name := fmt.Sprintf("p%d", r.IntN(40))
		switch r.IntN(4) {
		case 0:
			delete(pods, name)
		default:
			p := pod(name, "", 1+r.IntN(8), 100)
			if g := r.IntN(6); g < 3 {
				p.Labels = map[string]string{a.GangLabel: fmt.Sprintf("g%d", g), a.GangSizeKey: fmt.Sprint(2 + r.IntN(3))}
			}
			if r.IntN(5) == 0 {
				p.Annotations = map[string]string{a.RuntimeKey: []string{"1h", "soon"}[r.IntN(2)]}
			}
			pods[name] = p
		}
		list := make([]*v1.Pod, 0, len(pods))
		for _, k := range sortedKeys(pods) {
			list = append(list, pods[k])
		}
		got, want := c.jobsOf(list, a, 0), jobsOf(list, a, 0)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: cached jobs differ from jobsOf", step)
		}
		for _, j := range got {
			j.spec.Queue = "scribbled"
		}
	}
}

// TestJobCacheKeepsSpreadPlan: a gang spread on the hostname is planned
// by quota or by the per-node cap as decided when it is first seen
// (jobOf, by the GPU nodes there are), and keeps that while its pods
// change and nodes come and go: the Scheduler holds the job as it was
// submitted. Six members with maxSkew 1 first seen over three GPU nodes
// stay planned by quota when there are ten; first seen over ten, they
// keep the cap when there are three. A job first seen before there was a
// cluster (0 nodes) is built again for the nodes there are.
func TestJobCacheKeepsSpreadPlan(t *testing.T) {
	a := defaultArgs()
	members := func(gen int) []*v1.Pod {
		var out []*v1.Pod
		for i := range 6 {
			p := pod(fmt.Sprintf("g-%d", i), "", 2, 100)
			p.Labels = map[string]string{a.GangLabel: "g", a.GangSizeKey: "6", "app": "g", "gen": fmt.Sprint(gen)}
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelHostname,
				WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: appSel("g")}}
			out = append(out, p)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		hosts     []int
		wantQuota bool
	}{
		{"quota kept", []int{3, 10, 10}, true},
		{"cap kept", []int{10, 3, 3}, false},
		{"no cluster yet", []int{0, 3, 10}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c jobCache
			for gen, n := range tc.hosts {
				js := c.jobsOf(members(gen), a, n) // (new pod objects each time)
				if len(js) != 1 || js[0].err != nil {
					t.Fatalf("jobs %v", js)
				}
				quota := js[0].spread != nil
				if gen == 0 && n == 0 {
					if quota {
						t.Fatalf("planned by quota with no cluster")
					}
					continue
				}
				if quota != tc.wantQuota {
					t.Fatalf("after %v GPU nodes: planned by quota %v, want %v", tc.hosts[:gen+1], quota, tc.wantQuota)
				}
			}
		})
	}
}
