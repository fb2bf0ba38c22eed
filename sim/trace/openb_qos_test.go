package trace

import (
	"errors"
	"testing"

	"github.com/gpusched/gpusched/sim/data"
)

// TestOpenBQoSPriority: with a QoS mapping, the qos column sets each job's
// priority; without one every job keeps priority 0.
func TestOpenBQoSPriority(t *testing.T) {
	in := openbHeader +
		"p0,12000,16384,1,1000,,LS,Running,0,10,0\n" +
		"p1,6000,12288,1,460,,be,Running,1,10,1\n" + // case does not matter
		"p2,8000,30517,1,1000,,Burstable,Running,2,10,2\n" +
		"p3,8000,30517,1,1000,,Guaranteed,Running,3,10,3\n"
	jobs, _, err := readOpenBString(t, in, OpenBOptions{QoSPriority: OpenBQoSPriorities})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int32{2, 0, 1, 3} {
		if got := jobs[i].Spec.Priority; got != want {
			t.Errorf("job %d: priority %d, want %d", i, got, want)
		}
	}
	jobs, _, err = readOpenBString(t, in, OpenBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		if jobs[i].Spec.Priority != 0 {
			t.Errorf("without a mapping job %d has priority %d", i, jobs[i].Spec.Priority)
		}
	}

	// A class the mapping does not name is a malformed row (or a counted
	// skip); so is an empty one.
	bad := openbHeader + "p0,1,1,1,1000,,LS,Running,0,1,0\np1,1,1,1,1000,,XX,Running,0,1,0\np2,1,1,1,1000,,,Running,0,1,0\n"
	_, _, err = readOpenBString(t, bad, OpenBOptions{QoSPriority: map[string]int32{"LS": 5}})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || pe.Field != OpenBQoS {
		t.Fatalf("unknown class: %v", err)
	}
	jobs, st, err := readOpenBString(t, bad, OpenBOptions{QoSPriority: map[string]int32{"LS": 5}, SkipMalformed: true})
	if err != nil || len(jobs) != 1 || jobs[0].Spec.Priority != 5 || st.Skipped != 2 || st.SkipReasons[OpenBQoS] != 2 {
		t.Fatalf("skip: %d jobs, %+v, %v", len(jobs), st, err)
	}

	// The five-column lists have no qos to map: a header error.
	_, _, err = readOpenBString(t, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nm0,1,1,1,1000\n", OpenBOptions{QoSPriority: OpenBQoSPriorities})
	if !errors.As(err, &pe) || pe.Line != 1 || pe.Field != OpenBQoS {
		t.Fatalf("no qos column: %v", err)
	}
}

// TestOpenBQoSDefaultTrace: the built-in default trace has every class
// OpenBQoSPriorities names, and only those.
func TestOpenBQoSDefaultTrace(t *testing.T) {
	jobs, st, err := ReadOpenB(data.OpenBDefault(), OpenBOptions{QoSPriority: OpenBQoSPriorities})
	if err != nil || st.Skipped != 0 {
		t.Fatalf("%v, %+v", err, st)
	}
	byPrio := map[int32]int{}
	for _, j := range jobs {
		byPrio[j.Spec.Priority]++
	}
	// LS 4,647, BE 3,398, Burstable 100, Guaranteed 7.
	if byPrio[2] != 4647 || byPrio[0] != 3398 || byPrio[1] != 100 || byPrio[3] != 7 {
		t.Errorf("priorities %v", byPrio)
	}
}
