package gpusched

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gpusched/gpusched/workload"
)

// TestForgetEnded: a host whose record says an ID is reused on purpose
// (a Kubernetes gang recreated under its name) forgets its tombstone and
// submits it again; the other remembered ends keep their order.
func TestForgetEnded(t *testing.T) {
	now := t0
	s := contractScheduler(t, Config{})
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Submit(workload.Job{ID: id, Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, now); err != nil {
			t.Fatal(err)
		}
		if err := s.Cancel(id, now); err != nil {
			t.Fatal(err)
		}
	}
	resubmit := func() error {
		return s.Submit(workload.Job{ID: "b", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, now)
	}
	if err := resubmit(); !errors.Is(err, ErrAlreadyApplied) {
		t.Fatalf("re-Submit of a remembered ID: %v, want ErrAlreadyApplied", err)
	}
	if ok, err := s.ForgetEnded("b"); !ok || err != nil {
		t.Fatalf("ForgetEnded(b) = %v, %v", ok, err)
	}
	if ok, _ := s.ForgetEnded("b"); ok {
		t.Fatal("ForgetEnded(b) twice reported it remembered")
	}
	var ids []string
	for _, ts := range s.Tombstones() {
		ids = append(ids, ts.Job)
	}
	if fmt.Sprint(ids) != "[a c]" {
		t.Fatalf("tombstones after forgetting b: %v, want [a c]", ids)
	}
	if err := resubmit(); err != nil {
		t.Fatalf("Submit after ForgetEnded: %v", err)
	}
}

// TestEndedJobSettersAlreadyApplied: SetPriority and SetHostFilter for a
// job that ended and is remembered say so (ErrAlreadyApplied, naming how
// and when it ended), as every event does (docs/embedding.md: "any event
// or Submit for an ended job still remembered"), not ErrUnknownJob, which
// a service could not tell from an ID that never existed; an ID never
// seen stays ErrUnknownJob.
func TestEndedJobSettersAlreadyApplied(t *testing.T) {
	s := contractScheduler(t, Config{})
	if err := s.Submit(workload.Job{ID: "a", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel("a", t0); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"SetPriority":   s.SetPriority("a", 10),
		"SetHostFilter": s.SetHostFilter("a", HostFilter{}),
	} {
		if !errors.Is(err, ErrAlreadyApplied) || errors.Is(err, ErrUnknownJob) {
			t.Errorf("%s of an ended job: %v, want ErrAlreadyApplied", name, err)
		}
	}
	for name, err := range map[string]error{
		"SetPriority":   s.SetPriority("never", 10),
		"SetHostFilter": s.SetHostFilter("never", HostFilter{}),
	} {
		if !errors.Is(err, ErrUnknownJob) {
			t.Errorf("%s of an unknown job: %v, want ErrUnknownJob", name, err)
		}
	}
}
