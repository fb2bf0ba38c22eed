package slurmharness

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBackfillPassesCaptured compares gpusched's decisions with Slurm's at
// each backfill pass of a captured run of scenario (d)
// (testdata/trace-d-8.json, with the pass, start and end lines of its
// slurmctld.log in trace-d-8.slurmctld.log): from the state Slurm had at
// the pass, which waiting jobs start (ComparePasses; each job counted at
// the first pass where one of the two started it). It checks that the
// preset disagrees on no more jobs than it does today, and logs the same
// comparison for other reservation depths (-v; GPUSCHED_SLURM_VERBOSE=1
// lists the jobs, with when Slurm started those gpusched started first).
func TestBackfillPassesCaptured(t *testing.T) {
	tr := readTrace(t, "testdata/trace-d-8.json")
	f, err := os.Open("testdata/trace-d-8.slurmctld.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bl, err := ParseBackfillLog(f, time.UTC) // the run's slurmctld logged UTC
	if err != nil {
		t.Fatal(err)
	}
	var jobs []JobSpec
	ids := map[string]int{}
	for _, j := range tr {
		jobs = append(jobs, j.Spec)
		ids[j.Spec.Name] = j.JobID
	}
	const want = 11 // the preset's disagreements on this run
	for _, depth := range []int{0, 1, 3, 4, 8, 50} {
		m, err := LoadModel(siteDir)
		if err != nil {
			t.Fatal(err)
		}
		m.ReserveDepth = depth
		a, err := m.ComparePasses(jobs, ids, bl, tr[0].T0)
		if err != nil {
			t.Fatal(err)
		}
		name := "the preset (ReserveDepth " + strconv.Itoa(m.Preset.ReserveDepth) + ")"
		if depth > 0 {
			name = "ReserveDepth " + strconv.Itoa(depth)
		}
		t.Logf("%s: %d passes; started by both %d (on the same node %d), by Slurm only %d, by gpusched only %d", name, a.Passes, a.Both, a.SameNode, a.SlurmOnly, a.GpuschedOnly)
		if os.Getenv("GPUSCHED_SLURM_VERBOSE") != "" {
			t.Log(strings.Join(a.Differ, "\n"))
		}
		if depth == 0 && (a.Passes == 0 || a.Disagree() > want) {
			t.Errorf("%s: %d passes, %d jobs started by only one of the two; want at most %d", name, a.Passes, a.Disagree(), want)
		}
	}
}
