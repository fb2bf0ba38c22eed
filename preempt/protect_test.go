package preempt

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/workload"
)

// TestProtection: the one eligibility rule, in its order (stopping, then
// non-preemptible, then the minimum run time, then the cap).
func TestProtection(t *testing.T) {
	started := now.Add(-30 * time.Minute)
	cases := []struct {
		name string
		job  Job
		want Exclusion
		ok   bool
	}{
		{"free", Job{Spec: &workload.Job{}, Started: started}, 0, false},
		{"stopping first", Job{Spec: &workload.Job{NonPreemptible: true}, Stopping: true}, ExclStopping, true},
		{"non-preemptible", Job{Spec: &workload.Job{NonPreemptible: true, MinRunTime: time.Hour}, Started: started}, ExclNonPreemptible, true},
		// 30m run of a 1h minimum; capped too, the minimum run time first.
		{"minimum run time", Job{Spec: &workload.Job{MinRunTime: time.Hour, MaxPreemptions: 1}, Started: started, Preemptions: 1}, ExclMinRunTime, true},
		// Not started: the minimum run time does not protect it.
		{"not started", Job{Spec: &workload.Job{MinRunTime: time.Hour}}, 0, false},
		{"minimum run time over", Job{Spec: &workload.Job{MinRunTime: 20 * time.Minute}, Started: started}, 0, false},
		{"capped", Job{Spec: &workload.Job{MaxPreemptions: 2}, Preemptions: 2}, ExclMaxPreemptions, true},
		{"below the cap", Job{Spec: &workload.Job{MaxPreemptions: 2}, Preemptions: 1}, 0, false},
	}
	for _, tc := range cases {
		if ex, ok := tc.job.Protection(now); ok != tc.ok || ok && ex != tc.want {
			t.Errorf("%s: Protection = %v, %v; want %v, %v", tc.name, ex, ok, tc.want, tc.ok)
		}
	}
}
