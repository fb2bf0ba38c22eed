package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"sim", "run", "--machine", "dgx-h100", "--hosts", "32", "--hosts-per-tor", "8", "--trace", "synthetic:200", "--load", "1.1", "--quiet", "--no-plots", "--out", dir}, nil, &out, &errb)
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
