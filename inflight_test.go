package gpusched

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// TestRestoreNominationErrors: RestoreNomination refuses what a
// Scheduler could not have, and changes nothing: an unknown or holding
// job, a nomination restored twice, no victims and no placement, a
// victim that holds nothing or is the job itself, a placement that does
// not match the job's groups or lacks its due time.
func TestRestoreNominationErrors(t *testing.T) {
	s, err := New(Config{Cluster: testCluster(t, 1, 0), Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.Cluster().HostGPUs(0)
	whole := func(gs ...int) topology.Claim {
		cl := topology.Claim{Host: 0}
		for _, g := range gs {
			cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g), Kind: topology.ClaimWhole})
		}
		return cl
	}
	if err := s.Restore(gpuJob("v", 8), [][]topology.Claim{{whole(0, 1, 2, 3, 4, 5, 6, 7)}}, queue.Running, t0, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(gpuJob("w", 4), t0); err != nil {
		t.Fatal(err)
	}
	due := t0.Add(time.Hour)
	for _, tc := range []struct {
		n    Nomination
		want string
	}{
		{Nomination{Job: "nope", Victims: []string{"v"}}, "unknown job"},
		{Nomination{Job: "v", Victims: []string{"w"}}, "for a running job"},
		{Nomination{Job: "w"}, "names its victims or its placement"},
		{Nomination{Job: "w", Victims: []string{"w"}}, `victim "w" is not a distinct job holding resources`},
		{Nomination{Job: "w", Victims: []string{"v", "v"}}, `victim "v" is not a distinct`},
		{Nomination{Job: "w", Victims: []string{"v"}, Tasks: [][]topology.Claim{{whole(0, 1)}}, Due: due}, "2 GPUs claimed, the group needs 4"},
		{Nomination{Job: "w", Victims: []string{"v"}, Tasks: [][]topology.Claim{{whole(0, 1, 2, 3)}}}, "needs its due time"},
	} {
		if err := s.RestoreNomination(tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.n, err, tc.want)
		}
	}
	if got := s.Nominations([]string{"v", "w"}); len(got) != 0 {
		t.Fatalf("a refused nomination left %+v", got)
	}
	n := Nomination{Job: "w", Victims: []string{"v"}, Tasks: [][]topology.Claim{{whole(0, 1, 2, 3)}}, Due: due}
	if err := s.RestoreNomination(n); err != nil {
		t.Fatal(err)
	}
	if err := s.RestoreNomination(n); !errors.Is(err, ErrState) {
		t.Fatalf("restored twice: %v", err)
	}
	got := s.Nominations([]string{"v", "w"})
	if len(got) != 1 || got[0].Job != "w" || len(got[0].Victims) != 1 || !got[0].Due.Equal(due) || len(got[0].Tasks[0]) != 1 {
		t.Fatalf("Nominations: %+v", got)
	}
	// The victim stops: the job binds to the placement promised.
	if err := s.Preempted("v", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(t0.Add(time.Minute))
	if len(d.Bindings) != 1 || d.Bindings[0].Job != "w" || d.Bindings[0].Placement.Claims[0].GPUs[0].GPU != first {
		t.Fatalf("want w bound to its nomination:\n%s", d.Format(s.Cluster()))
	}
}

// TestRestoreJobCheckpoint: a running job's last checkpoint is restored
// (Progress reports it) and checked: only for a running job, within its
// run, naming the field.
func TestRestoreJobCheckpoint(t *testing.T) {
	s, err := New(Config{Cluster: testCluster(t, 1, 0), Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.Cluster().HostGPUs(0)
	tasks := [][]topology.Claim{{{Host: 0, GPUs: []topology.GPUClaim{{GPU: first, Kind: topology.ClaimWhole}}}}}
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		r    RestoredJob
		want string
	}{
		{RestoredJob{Spec: gpuJob("p", 1), State: queue.Pending, Submitted: t0, Now: now, Checkpoint: t0}, "checkpoint: a pending job has no checkpoint"},
		{RestoredJob{Spec: gpuJob("r", 1), State: queue.Running, Tasks: tasks, Submitted: t0, Started: t0.Add(time.Minute), Now: now, Checkpoint: t0}, "checkpoint: 2025-01-01T00:00:00Z is outside its run"},
		{RestoredJob{Spec: gpuJob("r", 1), State: queue.Running, Tasks: tasks, Submitted: t0, Started: t0, Now: now, Checkpoint: now.Add(time.Second)}, "is outside its run"},
	} {
		if err := s.RestoreJob(tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.r.Spec.ID, err, tc.want)
		}
	}
	cp := t0.Add(30 * time.Minute)
	if err := s.RestoreJob(RestoredJob{Spec: gpuJob("r", 1), State: queue.Running, Tasks: tasks, Submitted: t0, Started: t0, Now: now, Checkpoint: cp}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Progress("r"); !got.Equal(cp) {
		t.Fatalf("checkpoint %v, want %v", got, cp)
	}
}
