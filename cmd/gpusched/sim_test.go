package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"sim", "run", "--machine", "dgx-h100", "--hosts", "32", "--hosts-per-tor", "8", "--trace", "synthetic:200", "--load", "1.1", "--no-plots", "--out", dir}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// The shared cluster flags select the cluster (256 GPUs).
	if !strings.Contains(out.String(), "queue wait mean") || !strings.Contains(out.String(), "(256 GPUs)") {
		t.Errorf("no table or wrong cluster:\n%s", out.String())
	}
	if code := run([]string{"sim", "run", "--preset", "philly", "--machine", "dgx-h100"}, nil, &out, &errb); code == 0 {
		t.Error("two cluster selections accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
		t.Error(err)
	}
	// --inflation reaches the place inflation experiment (its flags, its
	// errors).
	out.Reset()
	errb.Reset()
	if code := run([]string{"sim", "compare", "--inflation", "--max-load", "0"}, nil, &out, &errb); code == 0 || !strings.Contains(errb.String(), "trace") && !strings.Contains(errb.String(), "max-load") {
		t.Errorf("inflation delegation: exit %d, %s", code, errb.String())
	}
}

// TestGeneratorFlagsNeedMachine: commands with a default cluster of their
// own reject --hosts without --machine instead of ignoring it.
func TestGeneratorFlagsNeedMachine(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--hosts", "5", "--quiet", "--no-plots"},
		{"place", "inflation", "--hosts", "5"},
		{"place", "--hosts-per-tor", "4"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, nil, &out, &errb); code == 0 || !strings.Contains(errb.String(), "needs --machine") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

// TestSaveStateExplain: `sim run --save-state` writes a state that
// `explain` reads; the shared cluster flags' generated cluster is saved
// inline, and explain says why the jobs that wait then wait.
func TestSaveStateExplain(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := gpusched(t, "", "sim", "run", "--machine", "dgx-h100", "--hosts", "8", "--hosts-per-tor", "4", "--trace", "synthetic:300",
		"--load", "3", "--seed", "1", "--save-state", "3h", "--save-state", "6h,1h", "--no-plots", "--no-jobs-csv", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, at := range []string{"1h", "3h", "6h"} {
		name := filepath.Join(dir, "state-"+at+".yaml")
		if !strings.Contains(out, "saved the Scheduler's state: "+name) {
			t.Errorf("output does not name %s:\n%s", name, out)
		}
	}
	state := filepath.Join(dir, "state-3h.yaml")
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "  spec:\n") || !strings.Contains(string(data), "now: 2000-01-01T03:00:00Z") {
		t.Errorf("state:\n%.600s", data)
	}
	code, out, errOut = gpusched(t, "", "explain", "--no-quota", state)
	if code != 0 || !strings.HasPrefix(out, "dgx-h100-x8 at 2000-01-01T03:00:00Z: 64 GPUs") || !strings.Contains(out, "waiting:") {
		t.Errorf("explain: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = gpusched(t, "", "explain", "--json", state)
	var x struct{ Waiting []struct{ Job, Code string } }
	if err := json.Unmarshal([]byte(out), &x); code != 0 || err != nil || len(x.Waiting) == 0 {
		t.Errorf("explain --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	// Times the run cannot have, or given twice.
	for _, bad := range [][]string{{"--save-state", "soon"}, {"--save-state", "-1h"}, {"--save-state", "2h", "--horizon", "1h"}, {"--save-state", "60m,1h"}} {
		args := append([]string{"sim", "run", "--machine", "dgx-h100", "--trace", "synthetic:10", "--quiet", "--no-plots", "--out", t.TempDir()}, bad...)
		if code, _, errOut := gpusched(t, "", args...); code == 0 || !strings.Contains(errOut, "--save-state") {
			t.Errorf("%q: exit %d, %s", bad, code, errOut)
		}
	}
}

// TestVersion: gpusched --version prints the version line that every
// simulator output records.
func TestVersion(t *testing.T) {
	code, out, errOut := gpusched(t, "", "--version")
	if code != 0 || !strings.HasPrefix(out, "gpusched ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
