package slurmharness

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTraceReplayCaptured replays scenario (d) as a real Slurm 22.05 ran it
// (testdata/trace-d.json, saved with GPUSCHED_SLURM_KEEP: arrivals, run
// times and Slurm's starts) through gpusched on the imported site, without
// Slurm, and checks the agreement the report gave for that run: a change
// to the preset or to backfill shows here first.
func TestTraceReplayCaptured(t *testing.T) {
	for name, want := range map[string]int{"trace-d-1.json": 132, "trace-d-2.json": 125, "trace-d-3.json": 137} {
		t.Run(name, func(t *testing.T) { replayCaptured(t, "testdata/"+name, want) })
	}
}

func replayCaptured(t *testing.T, path string, want int) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tr []tracedJob
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
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
	now := time.Unix(1_000_000, 0)
	if v := os.Getenv("GPUSCHED_SLURM_DEPTH"); v != "" { // what-ifs by hand
		m.ReserveDepth, _ = strconv.Atoi(v)
	}
	m.NoBackfillAround = os.Getenv("GPUSCHED_SLURM_NOAROUND") != ""
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
	if agree < want {
		t.Log(strings.Join(late, "\n"))
		t.Errorf("%d of %d jobs agree; this run of Slurm gave %d", agree, len(tr), want)
	}
}
