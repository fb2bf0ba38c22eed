package trace

import (
	"testing"
	"time"
)

// TestSyntheticPriorities: a share of high-priority jobs, drawn apart from
// the rest, so the jobs are otherwise those of the same Synthetic without
// priorities.
func TestSyntheticPriorities(t *testing.T) {
	base := Synthetic{Seed: 7, Jobs: 4000, MeanInterarrival: time.Minute}
	plain := collectSynthetic(t, base)
	base.Priorities = HighPriority(0.25, 10)
	prio := collectSynthetic(t, base)
	high := 0
	for i := range prio {
		a, b := plain[i], prio[i]
		if a.Submit != b.Submit || a.Duration != b.Duration || a.Spec.GPUs() != b.Spec.GPUs() || a.Spec.Queue != b.Spec.Queue {
			t.Fatalf("job %d differs beyond its priority: %+v vs %+v", i, a, b)
		}
		switch b.Spec.Priority {
		case 10:
			high++
		case 0:
		default:
			t.Fatalf("job %d: priority %d", i, b.Spec.Priority)
		}
		if a.Spec.Priority != 0 {
			t.Fatalf("job %d has priority %d without Priorities", i, a.Spec.Priority)
		}
	}
	if high < 900 || high > 1100 {
		t.Errorf("%d of 4000 high-priority jobs, want about 1000", high)
	}
	for _, share := range []float64{-0.1, 1.5} {
		s := Synthetic{Jobs: 1, MeanInterarrival: time.Minute, Priorities: HighPriority(share, 1)}
		if err := s.Validate(); err == nil {
			t.Errorf("share %g accepted", share)
		}
	}
	if HighPriority(0, 5) != nil {
		t.Error("share 0 should mean no priorities")
	}
}

func collectSynthetic(t *testing.T, s Synthetic) []Job {
	t.Helper()
	r, err := NewSynthetic(s)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := Collect(r)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}
