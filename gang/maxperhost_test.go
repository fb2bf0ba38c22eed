package gang

import (
	"testing"

	"github.com/gpusched/gpusched/workload"
)

// TestMaxPerHost: a job capped at one task per host (a Kubernetes gang
// whose pods are anti-affine to each other on the hostname) is spread over
// distinct hosts by every policy, though one host's GPUs would hold two of
// its tasks; with more tasks than hosts it does not place. Two tasks per
// host hold four tasks on two hosts.
func TestMaxPerHost(t *testing.T) {
	l := hostsWithCores(t, "dgx-h100", 64, 64)
	for _, policy := range PolicyNames() {
		for _, tc := range []struct {
			tasks, cap int
			fits       bool
		}{{2, 1, true}, {3, 1, false}, {4, 2, true}, {5, 2, false}} {
			j := &workload.Job{ID: "j", Groups: []workload.TaskGroup{{Count: tc.tasks, GPUs: 2}}, MaxTasksPerHost: tc.cap}
			p, x := place(t, policy, l, j)
			if (x == nil) != tc.fits {
				t.Fatalf("%s: %d tasks at most %d per host: placed %v, want %v (%v)", policy, tc.tasks, tc.cap, x == nil, tc.fits, x)
			}
			if x != nil {
				continue
			}
			per := map[int]int{}
			for _, cl := range p.Claims {
				if per[int(cl.Host)]++; per[int(cl.Host)] > tc.cap {
					t.Fatalf("%s: %d tasks on host %d, cap %d", policy, per[int(cl.Host)], cl.Host, tc.cap)
				}
			}
		}
	}
}

// TestMaxPerHostValidated: a negative cap is refused, naming the field.
func TestMaxPerHostValidated(t *testing.T) {
	j := &workload.Job{ID: "j", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}, MaxTasksPerHost: -1}
	if err := j.Validate(); err == nil || !containsField(err, "maxTasksPerHost") {
		t.Fatalf("Validate: %v, want an error naming maxTasksPerHost", err)
	}
}

func containsField(err error, field string) bool {
	fe, ok := err.(*workload.FieldError)
	return ok && fe.Field == field
}
