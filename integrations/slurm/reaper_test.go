package slurmharness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestReaper: scripts/slurm-reaper.sh stops what a run directory's pid
// files name and removes the directory once the process it watches is
// gone — what ends the daemons when a go test timeout or a signal ends the
// harness before its cleanup runs. Needs no Slurm: a sleep stands in for a
// daemon, another for the test process.
func TestReaper(t *testing.T) {
	run, err := os.MkdirTemp("", "gpusched-slurm-reapertest-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(run)
	daemon := exec.Command("sleep", "60")
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	defer daemon.Process.Kill()
	if err := os.WriteFile(filepath.Join(run, "slurmd-node01.pid"), []byte(strconv.Itoa(daemon.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	test := exec.Command("sleep", "60")
	if err := test.Start(); err != nil {
		t.Fatal(err)
	}
	scripts, _ := filepath.Abs("scripts")
	reaper := exec.Command(filepath.Join(scripts, "slurm-reaper.sh"), strconv.Itoa(test.Process.Pid), run)
	if err := reaper.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(run); err != nil {
		t.Fatalf("the reaper acted while the watched process lived: %v", err)
	}
	_ = test.Process.Kill()
	_ = test.Wait()
	done := make(chan error, 1)
	go func() { done <- daemon.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon's pid file process still runs 10 s after the watched process ended")
	}
	if err := reaper.Wait(); err != nil {
		t.Fatalf("slurm-reaper.sh: %v", err)
	}
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Fatalf("run directory %s not removed: %v", run, err)
	}
}
