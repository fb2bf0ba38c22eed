package simcli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fragTrace writes a trace that fragments the 8 hosts of 8 GPUs of
// h100-2tor.yaml: a short and
// a long 4-GPU job on each host, then, when the short ones have ended, a
// gang of two whole hosts, blocked only by fragmentation.
func fragTrace(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,t,d,g\n")
	for h := range 8 {
		fmt.Fprintf(&b, "s%d,0,100,4\nl%d,0,10000,4\n", h, h)
	}
	b.WriteString("big,200,1000,16\n")
	p := filepath.Join(t.TempDir(), "frag.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// --defrag moves the long jobs so the gang starts after their grace, and
// the run's table and summary count the migrations; without it the gang
// waits for a long job to end.
func TestDefragFlags(t *testing.T) {
	tr := fragTrace(t)
	run := []string{"run", "--file", "../../topology/testdata/h100-2tor.yaml", "--trace", "csv:" + tr, "--map", "id=id,submit=t,duration=d,gpus=g",
		"--policy", "best-fit", "--ckpt-interval", "10m", "--restart-cost", "1m", "--quiet", "--no-plots",
		"--schedule-every", "1m"} // a cycle runs once --defrag-after has passed
	offDir, onDir := t.TempDir(), t.TempDir()
	if _, _, err := execCmd(t, Options{}, append(run, "--out", offDir)...); err != nil {
		t.Fatal(err)
	}
	out, _, err := execCmd(t, Options{}, append(run, "--out", onDir, "--defrag", "--defrag-per-hour", "4", "--defrag-max-per-job", "1",
		"--defrag-gpu-hours-per-hour", "10", "--defrag-after", "1m", "--no-protect")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "migrations / GPU-hours lost to them") {
		t.Errorf("the table does not show migrations:\n%s", out)
	}
	off, on := readSummary(t, filepath.Join(offDir, "summary.json")), readSummary(t, filepath.Join(onDir, "summary.json"))
	if off.Preemption.Migrations != 0 || on.Preemption.Migrations != 2 {
		t.Errorf("migrations: off %d, on %d; want 0 and 2", off.Preemption.Migrations, on.Preemption.Migrations)
	}
	if on.Wait.P95 >= off.Wait.P95 || on.Jobs.Completed != 17 {
		t.Errorf("with --defrag: wait p95 %v (off %v), %d of 17 completed", on.Wait.P95, off.Wait.P95, on.Jobs.Completed)
	}
	// The moves are ready (their destinations were free): the new copies
	// load during the 2-minute grace (make-before-break), so of a 5-minute
	// restart cost the moved jobs pay 3 minutes, not 5: the last ends at
	// 10,000 s + 180 s (and with the 1-minute cost above, nothing).
	if on.Makespan != 10000 {
		t.Errorf("restart cost 1m: makespan %v, want 10000 (the cost overlaps the grace)", on.Makespan)
	}
	five := t.TempDir()
	if _, _, err := execCmd(t, Options{}, append(run, "--out", five, "--defrag", "--restart-cost", "5m")...); err != nil {
		t.Fatal(err)
	}
	if s := readSummary(t, filepath.Join(five, "summary.json")); s.Preemption.Migrations != 2 || s.Makespan != 10180 {
		t.Errorf("restart cost 5m: %d migrations, makespan %v; want 2 and 10180", s.Preemption.Migrations, s.Makespan)
	}
	// A budget of one migration per hour cannot admit the plan of two.
	one := t.TempDir()
	if _, _, err := execCmd(t, Options{}, append(run, "--out", one, "--defrag", "--defrag-per-hour", "1")...); err != nil {
		t.Fatal(err)
	}
	if s := readSummary(t, filepath.Join(one, "summary.json")); s.Preemption.Migrations != 0 {
		t.Errorf("--defrag-per-hour 1: %d migrations", s.Preemption.Migrations)
	}
}

// Bad defrag knobs are errors naming the flag, in run, compare and sweep.
func TestDefragFlagErrors(t *testing.T) {
	run := []string{"run", "--preset", "h100-1k", "--trace", "synthetic:20", "--quiet", "--no-plots", "--out", t.TempDir()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--defrag-per-hour", "3"}, "need --defrag"},
		{[]string{"--defrag", "--defrag-per-hour", "-1"}, "--defrag-per-hour -1"},
		{[]string{"--defrag", "--defrag-max-per-job", "-2"}, "--defrag-max-per-job -2"},
		{[]string{"--defrag", "--defrag-after", "-1m"}, "--defrag-after -1m0s"},
		{[]string{"--defrag", "--defrag-gpu-hours-per-hour", "-0.5"}, "--defrag-gpu-hours-per-hour -0.5"},
		{[]string{"--defrag", "--defrag-min-value", "NaN"}, "--defrag-min-value NaN"},
		{[]string{"--frag-aware-victims"}, "--frag-aware-victims needs --preempt"},
		{[]string{"--preempt", "--frag-aware-victims", "--frag-epsilon", "11"}, "--frag-epsilon 11"},
		{[]string{"--preempt", "--frag-epsilon", "0.1"}, "--frag-epsilon 0.1 needs --frag-aware-victims"},
	} {
		if _, _, err := execCmd(t, Options{}, append(run, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
		compare := append([]string{"compare", "--policies", "topology"}, run[1:]...)
		if _, _, err := execCmd(t, Options{}, append(compare, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("compare %q: %v, want %q", c.args, err, c.want)
		}
	}
	// A sweep that turns defrag on and off may set its budgets.
	sweep := []string{"sweep", "--preset", "h100-1k", "--trace", "synthetic:20", "--quiet", "--out", t.TempDir(), "--defrag-per-hour", "3"}
	swDir := t.TempDir()
	if _, _, err := execCmd(t, Options{}, append(sweep, "--out", swDir, "--param", "defrag=false,true")...); err != nil {
		t.Error(err)
	} else if rows := readCSV(t, filepath.Join(swDir, "sweep.csv")); len(rows) != 3 || !slices.Contains(rows[0], "migrations") || !slices.Contains(rows[0], "gpu_hours_lost_migration") {
		t.Errorf("sweep.csv has no migration columns: %q", rows)
	}
	if _, _, err := execCmd(t, Options{}, append(sweep, "--param", "seed=1,2")...); err == nil || !strings.Contains(err.Error(), "need --defrag") {
		t.Errorf("sweep without defrag: %v", err)
	}
}

// --consolidate packs the long jobs while nothing waits (after the short
// ones end, every host is half used): the gang, which arrives later,
// starts without waiting for a long job to end, though --defrag-after
// keeps defragmentation from moving anything for it. Bad knobs name the
// flag.
func TestConsolidateFlags(t *testing.T) {
	tr := fragTrace(t)
	run := []string{"run", "--file", "../../topology/testdata/h100-2tor.yaml", "--trace", "csv:" + tr, "--map", "id=id,submit=t,duration=d,gpus=g",
		"--policy", "best-fit", "--ckpt-interval", "10m", "--restart-cost", "1m", "--quiet", "--no-plots",
		"--schedule-every", "20s", "--defrag", "--defrag-after", "10h", "--defrag-grace", "20s"}
	offDir, onDir := t.TempDir(), t.TempDir()
	if _, _, err := execCmd(t, Options{}, append(run, "--out", offDir)...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execCmd(t, Options{}, append(run, "--out", onDir, "--consolidate", "--consolidate-per-hour", "8", "--defrag-max-per-job", "1")...); err != nil {
		t.Fatal(err)
	}
	off, on := readSummary(t, filepath.Join(offDir, "summary.json")), readSummary(t, filepath.Join(onDir, "summary.json"))
	if off.Preemption.Migrations != 0 || on.Preemption.Migrations == 0 || on.Preemption.Migrations > 8 {
		t.Errorf("migrations: off %d, on %d; want 0 and 1–8 (8 long jobs, each moved at most once)", off.Preemption.Migrations, on.Preemption.Migrations)
	}
	if on.Wait.Max >= off.Wait.Max || on.Jobs.Completed != 17 {
		t.Errorf("with --consolidate: longest wait %v (off %v), %d of 17 completed", on.Wait.Max, off.Wait.Max, on.Jobs.Completed)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--consolidate-per-hour", "3"}, "need --consolidate"},
		{[]string{"--consolidate", "--consolidate-target", "-1"}, "--consolidate-target -1"},
		{[]string{"--consolidate", "--consolidate-idle", "-1s"}, "--consolidate-idle -1s"},
	} {
		if _, _, err := execCmd(t, Options{}, append(append(run, "--out", t.TempDir()), c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	noDefrag := []string{"run", "--preset", "h100-1k", "--trace", "synthetic:20", "--quiet", "--no-plots", "--out", t.TempDir(), "--consolidate"}
	if _, _, err := execCmd(t, Options{}, noDefrag...); err == nil || !strings.Contains(err.Error(), "--consolidate needs --defrag") {
		t.Errorf("--consolidate without --defrag: %v", err)
	}
}
