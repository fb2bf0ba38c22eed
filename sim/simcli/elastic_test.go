package simcli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// elasticTrace writes a trace for the 64 GPUs of h100-2tor.yaml: eight
// long 8-GPU jobs of priority 0 fill the cluster; at 1,200 s (after two
// checkpoints and 300 s) a 4-GPU job of priority 10 arrives and runs
// 1,000 s: preempting a long job loses 8 GPUs × 300 s, shrinking one by
// 4 tasks 4 GPUs × 300 s. With
// one GPU per task and --elastic 0.5 the long jobs are elastic down to 4
// tasks.
func elasticTrace(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,t,d,g,p\n")
	for k := range 8 {
		fmt.Fprintf(&b, "e%d,0,20000,8,0\n", k)
	}
	b.WriteString("hi,1500,1000,4,10\n")
	p := filepath.Join(t.TempDir(), "elastic.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// --shrink gives the high-priority job room by shrinking long elastic
// jobs (no preemption), and they grow back once it ends; without it the
// planner preempts; --shrink-no-grow leaves them shrunk. The table and
// the summary count shrinks and grows.
func TestShrinkFlags(t *testing.T) {
	tr := elasticTrace(t)
	run := []string{"run", "--file", "../../topology/testdata/h100-2tor.yaml", "--trace", "csv:" + tr, "--map", "id=id,submit=t,duration=d,gpus=g,priority=p",
		"--max-gpus-per-task", "1", "--elastic", "0.5", "--preempt", "--ckpt-interval", "10m", "--quiet", "--no-plots"}
	offDir, onDir, noGrow := t.TempDir(), t.TempDir(), t.TempDir()
	if _, _, err := execCmd(t, Options{}, append(run, "--out", offDir)...); err != nil {
		t.Fatal(err)
	}
	out, _, err := execCmd(t, Options{}, append(run, "--out", onDir, "--shrink")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "shrinks / grows / GPU-hours lost to shrinks") {
		t.Errorf("the table does not show shrinks:\n%s", out)
	}
	if _, _, err := execCmd(t, Options{}, append(run, "--out", noGrow, "--shrink", "--shrink-no-grow")...); err != nil {
		t.Fatal(err)
	}
	off, on, ng := readSummary(t, filepath.Join(offDir, "summary.json")), readSummary(t, filepath.Join(onDir, "summary.json")), readSummary(t, filepath.Join(noGrow, "summary.json"))
	if off.Preemption.Shrinks != 0 || off.Preemption.Preemptions == 0 {
		t.Errorf("without --shrink: %d shrinks, %d preemptions; want none and some", off.Preemption.Shrinks, off.Preemption.Preemptions)
	}
	if on.Preemption.Shrinks == 0 || on.Preemption.Preemptions != 0 || on.Preemption.Grows == 0 {
		t.Errorf("with --shrink: %d shrinks, %d grows, %d preemptions; want shrinks and grows, no preemption", on.Preemption.Shrinks, on.Preemption.Grows, on.Preemption.Preemptions)
	}
	if ng.Preemption.Shrinks == 0 || ng.Preemption.Grows != 0 {
		t.Errorf("with --shrink-no-grow: %d shrinks, %d grows; want shrinks, no grow", ng.Preemption.Shrinks, ng.Preemption.Grows)
	}
	for _, s := range []struct {
		name string
		c    int
	}{{"off", off.Jobs.Completed}, {"shrink", on.Jobs.Completed}, {"no-grow", ng.Jobs.Completed}} {
		if s.c != 9 {
			t.Errorf("%s: %d of 9 jobs completed", s.name, s.c)
		}
	}
	if on.Preemption.GPUHoursLostShrink > off.Preemption.GPUHoursLostPreemption || on.Preemption.JobsStopped != 0 {
		t.Errorf("shrinks lose %.2f GPU-h (preemptions %.2f), %d jobs stopped: want no more, and none", on.Preemption.GPUHoursLostShrink, off.Preemption.GPUHoursLostPreemption, on.Preemption.JobsStopped)
	}
	t.Logf("off: %d preemptions, %.2f GPU-h lost; shrink: %d shrinks, %d grows, %.2f GPU-h lost", off.Preemption.Preemptions, off.Preemption.GPUHoursLostPreemption,
		on.Preemption.Shrinks, on.Preemption.Grows, on.Preemption.GPUHoursLostShrink)
	if _, _, err := execCmd(t, Options{}, "run", "--shrink", "--quiet"); err == nil || !strings.Contains(err.Error(), "--shrink needs --preempt") {
		t.Errorf("--shrink without --preempt: %v", err)
	}
}
