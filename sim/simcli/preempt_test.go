package simcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPreemptSweep compares preemption off and on as a sweep dimension on
// a loaded synthetic trace with a fifth of high-priority jobs and
// failures: with it on, jobs are preempted and high-priority jobs wait
// less; failures are recovered either way.
func TestPreemptSweep(t *testing.T) {
	dir := t.TempDir()
	_, errs, err := execCmd(t, Options{}, "sweep", "--file", "../../topology/testdata/h100-2tor.yaml", "--trace", "synthetic:600", "--load", "1.4", "--quiet",
		"--high-priority-share", "0.2", "--ckpt-interval", "30m", "--gpu-mtbf", "500h", "--max-restarts", "3",
		"--param", "preempt=off,queue,cluster,reclaim,fair", "--out", dir)
	if err != nil {
		t.Fatalf("%v %s", err, errs)
	}
	rows := readCSV(t, filepath.Join(dir, "sweep.csv"))
	if len(rows) != 6 {
		t.Fatalf("sweep.csv: %v", rows)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	get := func(r int, name string) float64 {
		v, err := strconv.ParseFloat(rows[r][col[name]], 64)
		if err != nil {
			t.Fatalf("row %d %s: %v", r, name, err)
		}
		return v
	}
	if rows[1][col["preempt"]] != "off" || get(1, "preemptions") != 0 {
		t.Errorf("off: %v", rows[1])
	}
	for r := 2; r <= 3; r++ {
		if get(r, "preemptions") == 0 || get(r, "wait_mean_top_priority_s") >= get(1, "wait_mean_top_priority_s") {
			t.Errorf("%s: %v (off: %v)", rows[r][col["preempt"]], rows[r], rows[1])
		}
	}
	for r := 1; r <= 5; r++ {
		if get(r, "fault_stops") == 0 {
			t.Errorf("no fault recovered: %v", rows[r])
		}
	}
}

// TestPreemptFlags: --preempt alone, --qos-priority on openb traces, and
// the flags' bad values.
func TestPreemptFlags(t *testing.T) {
	dir := t.TempDir()
	body := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	for i := range 40 {
		qos := []string{"BE", "BE", "LS", "Burstable"}[i%4]
		body += "p" + itoa(i) + ",4000,8192,8,1000,," + qos + ",Running," + itoa(i*60) + "," + itoa(i*60+7200) + "," + itoa(i*60) + "\n"
	}
	tr := filepath.Join(dir, "pods.csv")
	if err := os.WriteFile(tr, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, err := execCmd(t, Options{}, "run", "--preset", "dgx-h100", "--trace", "openb:"+tr, "--qos-priority", "default", "--preempt",
		"--ckpt-interval", "10m", "--quiet", "--no-plots", "--out", filepath.Join(dir, "out"))
	if err != nil {
		t.Fatalf("%v %s", err, errs)
	}
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if s.Preemption.Preemptions == 0 || len(s.Priorities) != 3 || s.Jobs.Completed != 40 || !strings.Contains(out, "queue wait mean by priority") {
		t.Errorf("preemption %+v priorities %+v jobs %+v\n%s", s.Preemption, s.Priorities, s.Jobs, out)
	}
	// LS jobs preempt BE ones, never the other way round.
	if s.Priorities[0].Priority != 2 || s.Priorities[0].Preemptions != 0 || s.Priorities[2].Preemptions == 0 {
		t.Errorf("priorities %+v", s.Priorities)
	}
	for _, bad := range [][]string{
		{"--trace", "synthetic:10", "--preempt=sometimes"},
		{"--trace", "synthetic:10", "--qos-priority", "default"},
		{"--trace", "openb:" + tr, "--qos-priority", "LS=high"},
		{"--trace", "openb:" + tr, "--qos-priority", "LS=1"}, // BE has no priority
		{"--trace", "openb:" + tr, "--high-priority-share", "0.5"},
		{"--trace", "synthetic:10", "--high-priority-share", "1.5"},
		{"--trace", "synthetic:10", "--max-restarts", "-1"},
		{"--trace", "synthetic:10", "--preempt", "--preempt-plans", "-1"},
	} {
		args := append([]string{"run", "--preset", "dgx-h100", "--quiet", "--no-plots", "--out", t.TempDir()}, bad...)
		if _, _, err := execCmd(t, Options{}, args...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestPhillyPreempt runs the command of the issue: the full Philly trace
// on its cluster, one queue per virtual cluster, with preemption.
func TestPhillyPreempt(t *testing.T) {
	const trace, vcs = "../../../shared/data/philly/philly.csv", "../../../shared/data/philly/philly_vc.csv"
	if _, err := os.Stat(trace); err != nil {
		t.Skip("../shared/data/philly not present: ", err)
	}
	if testing.Short() || raceEnabled {
		t.Skip("the full Philly replay takes a second (a minute under -race)")
	}
	dir := t.TempDir()
	start := time.Now()
	out, errs, err := execCmd(t, Options{}, "run", "--trace", "philly:"+trace, "--preset", "philly", "--queues", "vc:"+vcs, "--preempt",
		"--quiet", "--no-plots", "--out", dir)
	if err != nil {
		t.Fatalf("%v %s", err, errs)
	}
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	if s.Jobs.Total != 82247 || s.Jobs.Completed+s.Jobs.Unfinished+s.Jobs.Failed+s.Jobs.Rejected != s.Jobs.Total || s.GPUs != 2816 {
		t.Errorf("jobs %+v on %d GPUs", s.Jobs, s.GPUs)
	}
	t.Logf("%s(%v)", out, time.Since(start))
}

// TestPreemptFaultsDeterministic: with preemption, failures, an outage and
// drains on, one seed gives byte-identical output files, also when the
// runs are a sweep's parallel goroutines.
func TestPreemptFaultsDeterministic(t *testing.T) {
	args := []string{"--file", "../../topology/testdata/h100-2tor.yaml", "--trace", "synthetic:400", "--load", "1.3", "--quiet", "--no-plots",
		"--high-priority-share", "0.25", "--preempt=cluster", "--ckpt-interval", "20m", "--ckpt-overhead", "1m", "--restart-cost", "2m",
		"--gpu-mtbf", "300h", "--host-mtbf", "600h", "--tor-mtbf", "2000h", "--outage", "level=tor,every=12h,for=1h",
		"--drain-every", "6h", "--drain-for", "1h", "--max-restarts", "2", "--speed"}
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		if _, errs, err := execCmd(t, Options{}, append([]string{"run", "--out", dir}, args...)...); err != nil {
			t.Fatalf("%v %s", err, errs)
		}
	}
	for _, f := range []string{"summary.json", "timeseries.csv", "jobs.csv", "queues.csv"} {
		x, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		y, _ := os.ReadFile(filepath.Join(b, f))
		if string(x) != string(y) {
			t.Errorf("%s differs between two runs of one seed", f)
		}
	}
	s := readSummary(t, filepath.Join(a, "summary.json"))
	if s.Preemption.Preemptions == 0 || s.Preemption.Recoveries.Requeue == 0 || s.Preemption.Faults == 0 || s.Preemption.Drains == 0 {
		t.Errorf("models idle: %+v", s.Preemption)
	}
	// The same runs as sweep points in parallel goroutines (seed swept,
	// so each run has seed 42): the same summaries.
	sw := t.TempDir()
	if _, errs, err := execCmd(t, Options{}, append([]string{"sweep", "--param", "seed=42,42,42", "--parallel", "3", "--out", sw}, args...)...); err != nil {
		t.Fatalf("%v %s", err, errs)
	}
	want, _ := os.ReadFile(filepath.Join(a, "summary.json"))
	for i := range 3 {
		got := readSummary(t, filepath.Join(sw, "runs", itoa(i), "summary.json"))
		w := readSummary(t, filepath.Join(a, "summary.json"))
		w.Trace, got.Trace = "", ""
		w.Provenance, got.Provenance = nil, nil // the commands differ
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("sweep run %d differs from the single run (%d bytes)", i, len(want))
		}
	}
}
