package trace

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gpusched/gpusched/workload"
)

func perturbJobs(n int) []Job {
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = Job{Spec: workload.Job{ID: "j" + strconv.Itoa(i)}, Submit: time.Duration(i) * time.Minute, Duration: time.Hour}
	}
	return jobs
}

// TestPerturb: each perturbation does what it says, the same seed gives
// the same trace, another seed another, and the input is not changed.
func TestPerturb(t *testing.T) {
	jobs := perturbJobs(200)
	orig := slices.Clone(jobs)
	p, err := ParsePerturbation("bootstrap,jitter=5m,window=100m")
	if err != nil || p.String() != "bootstrap,jitter=5m0s,window=1h40m0s" {
		t.Fatalf("parse: %+v %v", p, err)
	}
	a, err := Perturb(jobs, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Perturb(jobs, p, 1)
	c, _ := Perturb(jobs, p, 2)
	if !slices.EqualFunc(a, b, func(x, y Job) bool { return x.Spec.ID == y.Spec.ID && x.Submit == y.Submit }) {
		t.Error("one seed, two traces")
	}
	if slices.EqualFunc(a, c, func(x, y Job) bool { return x.Spec.ID == y.Spec.ID && x.Submit == y.Submit }) {
		t.Error("two seeds, one trace")
	}
	if !slices.EqualFunc(jobs, orig, func(x, y Job) bool { return x.Spec.ID == y.Spec.ID && x.Submit == y.Submit }) {
		t.Error("the input changed")
	}
	// The window keeps 100 of the 200 arrivals, one a minute; the
	// bootstrap keeps that count with unique IDs; jitter moves each by at
	// most 5 minutes.
	if len(a) != 100 {
		t.Errorf("%d jobs, want 100", len(a))
	}
	ids := map[string]bool{}
	for i, j := range a {
		if ids[j.Spec.ID] {
			t.Errorf("ID %s twice", j.Spec.ID)
		}
		ids[j.Spec.ID] = true
		if i > 0 && j.Submit < a[i-1].Submit {
			t.Error("not sorted by arrival")
		}
	}
	span := a[len(a)-1].Submit - a[0].Submit
	if span > 110*time.Minute {
		t.Errorf("span %v over the window and twice the jitter", span)
	}
	for _, bad := range []string{"shuffle", "jitter=-1m", "window=abc"} {
		if _, err := ParsePerturbation(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if q, _ := Perturb(jobs, Perturbation{}, 9); !slices.EqualFunc(q, jobs, func(x, y Job) bool { return x.Spec.ID == y.Spec.ID && x.Submit == y.Submit }) {
		t.Error("the zero perturbation changed the trace")
	}
}
