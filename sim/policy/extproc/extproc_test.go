package extproc_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/sim/policy/extproc"
	"github.com/gpusched/gpusched/sim/simcli"
)

// python returns the python3 on PATH, or skips the test.
func python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the Python policy tests need a real Python 3 (the package is stdlib-only)")
	}
	return p
}

func example(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "python", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fewestGPUs is the Go twin of python/examples/smallest_first.py.
type fewestGPUs struct{}

func (fewestGPUs) Enqueued(_ time.Duration, jobs []policy.Job) ([]int32, error) {
	out := make([]int32, len(jobs))
	for i, j := range jobs {
		out[i] = -int32(j.GPUs*1000 + 0.5)
	}
	return out, nil
}

// runSummary runs gpusched sim run with args and returns its summary,
// less what names the command (provenance, ordering).
func runSummary(t *testing.T, reg *policy.Registry, args ...string) sim.Summary {
	t.Helper()
	return runSummaryOn(t, reg, []string{"--preset", "dgx-h100"}, args...)
}

// runSummaryOn is runSummary on the cluster the flags in cluster give.
func runSummaryOn(t *testing.T, reg *policy.Registry, cluster []string, args ...string) sim.Summary {
	t.Helper()
	dir := t.TempDir()
	cmd := simcli.Command(simcli.Options{Registry: reg})
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(append(append(append([]string{"run"}, cluster...), "--trace", "synthetic:150", "--load", "1.5", "--seed", "4", "--no-plots", "--out", dir), args...))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, errb.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s sim.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	s.Provenance, s.Ordering = nil, ""
	return s
}

// TestPythonMatchesGo runs the Python examples through the real python3
// and the boundary: each gives exactly the run its Go twin gives (SRTF:
// the built-in srtf, preemptive, running jobs re-ranked every cycle;
// smallest-first: a Go ordering registered by name).
func TestPythonMatchesGo(t *testing.T) {
	py := python(t)
	reg := &policy.Registry{}
	if err := reg.Ordering("fewest-gpus", func(string, uint64) (policy.Ordering, error) { return fewestGPUs{}, nil }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ goOrdering, script string }{{"srtf", "srtf.py"}, {"fewest-gpus", "smallest_first.py"}} {
		common := []string{"--preempt", "--runtime-estimate", "1", "--ckpt-interval", "30m"}
		g := runSummary(t, reg, append(common, "--ordering", c.goOrdering)...)
		p := runSummary(t, reg, append(common, "--ordering", "exec:"+py+" "+example(t, c.script))...)
		gb, _ := json.Marshal(g)
		pb, _ := json.Marshal(p)
		if !bytes.Equal(gb, pb) {
			t.Errorf("%s: Python and Go runs differ:\nGo     %s\nPython %s", c.script, gb, pb)
		}
		if c.goOrdering == "srtf" && g.Preemption.Preemptions == 0 {
			t.Error("srtf: no preemption: the comparison tests nothing")
		}
	}
}

// TestProcessErrors: a process that breaks the protocol or dies stops
// the run with an error that says what happened, with its stderr's tail.
func TestProcessErrors(t *testing.T) {
	py := python(t)
	for _, c := range []struct{ script, want string }{
		{`print("hello there")`, "print nothing but replies"},
		{`import sys; sys.stderr.write("boom: missing module\n"); sys.exit(3)`, "boom: missing module"},
	} {
		_, err := extproc.Start([]string{py, "-c", c.script}, "", 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.script, err, c.want)
		}
	}
	// A policy that raises: the error comes back as the call's.
	src := `import sys; sys.path.insert(0, sys.argv[1])
from gpusched_policy import Ordering, serve
class Bad(Ordering):
    def enqueued(self, now, jobs):
        raise ValueError("no priority for " + jobs[0]["id"])
serve(Bad())`
	o, err := extproc.Start([]string{py, "-c", src, filepath.Dir(filepath.Dir(example(t, "srtf.py")))}, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer o.(interface{ Close() error }).Close()
	if _, err := o.Enqueued(0, []policy.Job{{ID: "j1"}}); err == nil || !strings.Contains(err.Error(), "ValueError: no priority for j1") {
		t.Errorf("raising policy: %v", err)
	}
}

// BenchmarkRoundTrip measures one Enqueued call of one job through
// python3 (the cost per decision of a static ordering).
func BenchmarkRoundTrip(b *testing.B) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("no python3")
	}
	dir, _ := filepath.Abs(filepath.Join("..", "..", "..", "python", "examples", "smallest_first.py"))
	o, err := extproc.Start([]string{py, dir}, "", 1)
	if err != nil {
		b.Fatal(err)
	}
	defer o.(interface{ Close() error }).Close()
	jobs := []policy.Job{{ID: "job-1", Queue: "q", GPUs: 8, Runtime: time.Hour}}
	for b.Loop() {
		if _, err := o.Enqueued(time.Hour, jobs); err != nil {
			b.Fatal(err)
		}
	}
}
