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
	code := run([]string{"sim", "run", "--preset", "h100-1k", "--trace", "synthetic:200", "--load", "1.1", "--quiet", "--no-plots", "--out", dir}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "queue wait mean") {
		t.Errorf("no table:\n%s", out.String())
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
