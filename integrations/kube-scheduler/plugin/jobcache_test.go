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
