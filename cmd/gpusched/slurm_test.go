package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// TestImportSlurm: topology import slurm writes a cluster file that loads,
// the queue tree, and the warnings on stderr; a bad file is an error naming
// its file and line.
func TestImportSlurm(t *testing.T) {
	dir := t.TempDir()
	out, queues := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "q.yaml")
	code, _, stderr := gpusched(t, "", "topology", "import", "slurm", "../../importers/slurm/testdata/site", "--out", out, "--queues", queues)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c, err := topology.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.NumGPUs() != 212 || c.NumHosts() != 33 {
		t.Errorf("cluster %s", c)
	}
	if !strings.Contains(stderr, "slurm.conf:33: FooBarTimeout: setting not understood") || !strings.Contains(stderr, "imported 33 nodes") ||
		!strings.Contains(stderr, "backfill: on (SchedulerType=sched/backfill") || !strings.Contains(stderr, "ReserveWholeHosts=true") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if b, err := os.ReadFile(queues); err != nil || !strings.Contains(string(b), "vision:alice") {
		t.Errorf("queues: %v\n%s", err, b)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "slurm.conf"), []byte("NodeName=n[1-2] CPUs=8\nNodeName=n2 CPUs=4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = gpusched(t, "", "topology", "import", "slurm", bad)
	if code == 0 || !strings.Contains(stderr, "slurm.conf:2: NodeName: node n2 already declared on line 1") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestSimRunSlurm: sim run --slurm replays a trace on the imported site.
func TestSimRunSlurm(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := gpusched(t, "", "sim", "run", "--slurm", "../../importers/slurm/testdata/site", "--trace", "synthetic:200",
		"--runtime-estimate", "1.5", "--no-plots", "--no-jobs-csv", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "cluster prod (212 GPUs)") {
		t.Errorf("stdout:\n%s", stdout)
	}
}
