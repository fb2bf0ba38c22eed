package simcli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepMerge: the shards of a sweep, merged, are byte for byte the
// unsharded sweep.csv; a missing, repeated or misplaced run is an error.
func TestSweepMerge(t *testing.T) {
	tr := writeTrace(t)
	sweep := []string{"sweep", "--param", "policy=topology,best-fit,first-fit", "--param", "ckpt-interval=0s,10m", "--parallel", "2",
		"--preset", "h100-1k", "--trace", "csv:" + tr, "--map", "id=id,submit=t,duration=d,gpus=g,queue=team", "--skip-bad", "--quiet"}
	whole := t.TempDir()
	if _, _, err := execCmd(t, Options{}, append(sweep, "--out", whole)...); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(whole, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	sharded := t.TempDir()
	var files []string
	for _, sh := range []string{"0/4", "1/4", "2/4", "3/4"} {
		if _, _, err := execCmd(t, Options{}, append(sweep, "--out", sharded, "--shard", sh)...); err != nil {
			t.Fatal(err)
		}
		i, n, _ := strings.Cut(sh, "/")
		files = append(files, filepath.Join(sharded, "sweep-"+i+"-of-"+n+".csv"))
	}
	merged := filepath.Join(t.TempDir(), "merged.csv")
	// Shard order on the command line does not matter.
	args := []string{"sweep", "merge", "--points", "6", "--out", merged, files[2], files[0], files[3], files[1]}
	if _, _, err := execCmd(t, Options{}, args...); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("merged:\n%s\nunsharded:\n%s", got, want)
	}

	var b bytes.Buffer
	for _, tc := range []struct {
		name  string
		files []string
		pts   int
		want  string
	}{
		{"missing shard", files[:3], 0, "shard 3 of 4 is missing"},
		{"shard twice", append([]string{files[0]}, files...), 0, "given twice"},
		{"wrong points", files, 7, "--points says 7"},
	} {
		b.Reset()
		err := mergeSweeps(&b, tc.files, tc.pts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	// A run in the wrong shard, a repeated run and a foreign header.
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("sweep-0-of-2.csv", "run,x\n0,a\n1,b\n")
	c := write("sweep-1-of-2.csv", "run,x\n")
	if err := mergeSweeps(&b, []string{a, c}, 0); err == nil || !strings.Contains(err.Error(), "sweep-0-of-2.csv:3: run 1 does not belong to shard 0 of 2") {
		t.Errorf("misplaced run: %v", err)
	}
	d := write("x.csv", "run,x\n0,a\n")
	e := write("y.csv", "run,x\n0,a\n")
	if err := mergeSweeps(&b, []string{d, e}, 0); err == nil || !strings.Contains(err.Error(), "y.csv:2: run 0 already in") {
		t.Errorf("repeated run: %v", err)
	}
	f := write("z.csv", "run,y\n1,a\n")
	if err := mergeSweeps(&b, []string{d, f}, 0); err == nil || !strings.Contains(err.Error(), "header differs") {
		t.Errorf("foreign header: %v", err)
	}
	g := write("gap.csv", "run,x\n0,a\n2,c\n")
	if err := mergeSweeps(&b, []string{g}, 0); err == nil || !strings.Contains(err.Error(), "run 1 is missing") {
		t.Errorf("gap: %v", err)
	}
}
