package slurmharness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTraceReplayCaptured replays scenario (d) as a real Slurm 22.05 ran it
// (testdata/trace-d-*.json, each saved with GPUSCHED_SLURM_KEEP: arrivals,
// run times and Slurm's starts) through gpusched on the imported site,
// without Slurm, and checks that no run agrees on fewer jobs than the
// current preset reaches on it: a change to the preset or to backfill
// shows here first. trace-d-5.json to -8 (with Slurm's job IDs and wall
// clock; 5 captured with DebugFlags=Backfill,BackfillMap, 6 to 8 with
// Backfill; 7 and 8 were ci.sh runs that generated the report, on a
// loaded machine for 8; run 5's backfill log lines are
// trace-d-5.slurmctld.log) are replayed on Slurm's wall clock.
func TestTraceReplayCaptured(t *testing.T) {
	for name, want := range map[string]int{"trace-d-1.json": 129, "trace-d-2.json": 140, "trace-d-3.json": 135, "trace-d-4.json": 135, "trace-d-5.json": 127, "trace-d-6.json": 125, "trace-d-7.json": 132, "trace-d-8.json": 131} {
		t.Run(name, func(t *testing.T) { replayCaptured(t, "testdata/"+name, want) })
	}
}

func replayCaptured(t *testing.T, path string, want int) {
	tr := readTrace(t, path)
	m, err := LoadModel(siteDir)
	if err != nil {
		t.Fatal(err)
	}
	interval := m.Site.Conf.Scheduler().SchedInterval
	tol := interval + 2*time.Second
	var jobs []JobSpec
	dur := map[string]time.Duration{}
	for _, j := range tr {
		jobs = append(jobs, j.Spec)
		dur[j.Spec.Name] = j.Duration
	}
	// The replay runs on Slurm's wall clock where the capture has it; the
	// first captures lack it.
	now := time.Unix(1_000_000, 0)
	if !tr[0].T0.IsZero() {
		now = tr[0].T0
	}
	if v := os.Getenv("GPUSCHED_SLURM_DEPTH"); v != "" { // what-ifs by hand
		m.ReserveDepth, _ = strconv.Atoi(v)
	}
	m.NoBackfillAround = os.Getenv("GPUSCHED_SLURM_NOAROUND") != ""
	m.NoTreeNodeOrder = os.Getenv("GPUSCHED_SLURM_NOTREE") != ""
	m.ArrivalsFirst = os.Getenv("GPUSCHED_SLURM_ARRIVALSFIRST") != ""
	m.NoWholeHosts = os.Getenv("GPUSCHED_SLURM_NOWHOLEHOSTS") != ""
	gs, _, why, err := m.RunWhy(jobs, dur, now, interval)
	if err != nil {
		t.Fatal(err)
	}
	agree := 0
	var late []string
	for _, j := range tr {
		g := gs[j.Spec.Name].Sub(now)
		if (g - j.SlurmStart).Abs() <= tol {
			agree++
			continue
		}
		late = append(late, fmt.Sprintf("%s arrived %v: Slurm %v on %v, gpusched %v (%s)", j.Spec.Name, j.Spec.Arrive, j.SlurmStart, j.Nodes, g, reasonAt(why[j.Spec.Name], now.Add(j.SlurmStart))))
	}
	t.Logf("%s: %d of %d jobs within %v of Slurm's start", path, agree, len(tr), tol)
	if agree < want || os.Getenv("GPUSCHED_SLURM_VERBOSE") != "" {
		t.Log(strings.Join(late, "\n"))
		t.Errorf("%d of %d jobs agree; this run of Slurm gave %d", agree, len(tr), want)
	}
}

// loadCaptured reads the runs of scenario (d) saved in testdata
// (trace-d-*.json), in name order: each a job's Slurm start after the
// first arrival, by job name.
func loadCaptured() ([]string, []map[string]time.Duration, error) {
	paths, err := filepath.Glob("testdata/trace-d-*.json")
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(paths)
	var runs []map[string]time.Duration
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		var tr []tracedJob
		if err := json.Unmarshal(b, &tr); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		st := map[string]time.Duration{}
		for _, j := range tr {
			st[j.Spec.Name] = j.SlurmStart
		}
		runs = append(runs, st)
	}
	return paths, runs, nil
}

// sameStarts counts the jobs of a whose start in b is within tol.
func sameStarts(a, b map[string]time.Duration, tol time.Duration) int {
	k := 0
	for name, s := range a {
		if o, ok := b[name]; ok && (s-o).Abs() <= tol {
			k++
		}
	}
	return k
}

// TestCapturedSlurmReproducibility compares the captured runs of scenario
// (d) with each other: Slurm running the same trace twice does not start
// every job within the tolerance of its other run, which bounds what any
// model of it can reach on one run.
func TestCapturedSlurmReproducibility(t *testing.T) {
	paths, runs, err := loadCaptured()
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(siteDir)
	if err != nil {
		t.Fatal(err)
	}
	tol := m.Site.Conf.Scheduler().SchedInterval + 2*time.Second
	for i := range runs {
		for k := i + 1; k < len(runs); k++ {
			n := sameStarts(runs[i], runs[k], tol)
			t.Logf("%s vs %s: %d of %d jobs started within %v", filepath.Base(paths[i]), filepath.Base(paths[k]), n, len(runs[i]), tol)
			if n == len(runs[i]) {
				t.Errorf("%s and %s agree on every job: a captured run saved twice?", paths[i], paths[k])
			}
		}
	}
}

// TestTraceEvidence reads Slurm's backfill log of a captured run of
// scenario (d) (testdata/trace-d-5.json with the backfill lines of its
// slurmctld.log, DebugFlags=Backfill) against gpusched's replay, as the
// harness's report does, and checks that every job Slurm started later
// than gpusched has log evidence. GPUSCHED_SLURM_EVIDENCE=DIR reads a run
// kept with GPUSCHED_SLURM_KEEP=DIR instead (trace-d.json, slurmctld.log);
// -v lists the disagreements with their evidence.
func TestTraceEvidence(t *testing.T) {
	tracePath, logPath := "testdata/trace-d-5.json", "testdata/trace-d-5.slurmctld.log"
	if dir := os.Getenv("GPUSCHED_SLURM_EVIDENCE"); dir != "" {
		tracePath, logPath = filepath.Join(dir, "trace-d.json"), filepath.Join(dir, "slurmctld.log")
	}
	tr := readTrace(t, tracePath)
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bl, err := ParseBackfillLog(f, time.Local)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := strconv.Atoi(os.Getenv("GPUSCHED_SLURM_FIRSTID"))
	ids := map[string]int{}
	for i, j := range tr {
		ids[j.Spec.Name] = j.JobID
		if j.JobID == 0 {
			ids[j.Spec.Name] = first + i
		}
	}
	t0 := tr[0].T0
	if t0.IsZero() {
		st, _ := bl.Start(ids[tr[0].Spec.Name])
		t0 = st.Logged.Add(-tr[0].SlurmStart).Round(time.Second)
	}
	m, err := LoadModel(siteDir)
	if err != nil {
		t.Fatal(err)
	}
	m.NoWholeHosts = os.Getenv("GPUSCHED_SLURM_NOWHOLEHOSTS") != ""
	if v := os.Getenv("GPUSCHED_SLURM_DEPTH"); v != "" {
		m.ReserveDepth, _ = strconv.Atoi(v)
	}
	interval := m.Site.Conf.Scheduler().SchedInterval
	tol := interval + 2*time.Second
	var jobs []JobSpec
	dur := map[string]time.Duration{}
	slurm := map[string]time.Duration{}
	for _, j := range tr {
		jobs = append(jobs, j.Spec)
		dur[j.Spec.Name] = j.Duration
		slurm[j.Spec.Name] = j.SlurmStart
	}
	if os.Getenv("GPUSCHED_SLURM_LOGDUR") != "" {
		ld := bl.Durations(ids)
		t.Logf("durations from the log for %d jobs", len(ld))
		for n, d := range ld {
			dur[n] = d
		}
	}
	now := t0 // Slurm's wall clock
	st, pl, why, err := m.RunWhy(jobs, dur, now, interval)
	if err != nil {
		t.Fatal(err)
	}
	gs := map[string]time.Duration{}
	gp := map[string][]string{}
	for n, s := range st {
		gs[n] = s.Sub(now)
		gp[n] = pl[n].Nodes
	}
	ev := traceEvidence(bl, t0, jobs, ids, slurm, gs, gp)
	agree := 0
	for _, j := range tr {
		n := j.Spec.Name
		if (gs[n] - slurm[n]).Abs() <= tol {
			agree++
			continue
		}
		t.Logf("%s arrived %s: Slurm %s s on %v, gpusched %s s on %v (%s)\n    %s", n, secs(j.Spec.Arrive), secs(slurm[n]), j.Nodes, secs(gs[n]), gp[n], reasonAt(why[n], now.Add(slurm[n])), ev[n].Text)
		if gs[n] < slurm[n] {
			t.Logf("slurm-later %s held=%v plannedLater=%v", n, ev[n].Held, ev[n].PlannedLater)
		}
		if gs[n] < slurm[n] && ev[n].Text == "" {
			t.Errorf("%s: Slurm started it later than gpusched and the log has no evidence for it", n)
		}
	}
	if os.Getenv("GPUSCHED_SLURM_NODES") != "" {
		for _, j := range tr {
			n := j.Spec.Name
			if !slices.Equal(gp[n], j.Nodes) {
				t.Logf("nodes differ: %s Slurm %s s %v, gpusched %s s %v", n, secs(slurm[n]), j.Nodes, secs(gs[n]), gp[n])
			}
		}
	}
	gpl := map[string]Placement{}
	sj := map[string]JobInfo{}
	for _, j := range tr {
		gpl[j.Spec.Name] = pl[j.Spec.Name]
		sj[j.Spec.Name] = JobInfo{Start: t0.Add(j.SlurmStart), End: t0.Add(j.SlurmStart + j.Duration), Nodes: j.Nodes}
	}
	split := firstPlacementSplit(bl, jobs, ids, sj, gs, gpl, t0)
	t.Log(split)
	if tracePath == "testdata/trace-d-5.json" && !strings.Contains(split, "d004-h100-1x1 (logged done at 25.614 s)") {
		t.Errorf("run 5's first placement split: %q, want d033 placed before d004's end in the same second", split)
	}
	t.Logf("%d of %d agree", agree, len(tr))
}

// readTrace reads a run of scenario (d) saved by the harness.
func readTrace(t *testing.T, path string) []tracedJob {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tr []tracedJob
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tr
}
