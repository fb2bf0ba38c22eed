package extproc_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/sim/policy/extproc"
	"github.com/gpusched/gpusched/topology"
)

// threeHosts is three 4-GPU hosts; h0 runs 3 GPUs, h1 1, h2 none.
func threeHosts(t *testing.T) (*topology.Cluster, *topology.Ledger) {
	t.Helper()
	c := extproc.ThreeHosts(t)
	l := topology.NewLedger(c)
	for h, n := range []int{3, 1, 0} {
		g, _ := c.HostGPUs(topology.HostID(h))
		for i := range n {
			if err := l.AllocateGPU(g + topology.GPUID(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c, l
}

// TestPythonNodePicker: python/examples/worst_fit.py, through the real
// python3, puts each task on the candidate host with the most free GPUs,
// among those the scope allows and that can take it; it reports the cost
// per pick.
func TestPythonNodePicker(t *testing.T) {
	c, l := threeHosts(t)
	n, err := extproc.StartNodePicker([]string{python(t), example(t, "worst_fit.py")}, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Name() != "worst-fit-python" {
		t.Errorf("name %q", n.Name())
	}
	for _, tc := range []struct {
		task  frag.Task
		allow func(topology.HostID) bool
		want  string // "" for no host
	}{
		{frag.Task{GPUs: 1}, nil, "h2"},
		{frag.Task{GPUs: 1}, func(h topology.HostID) bool { return h != 2 }, "h1"},
		{frag.Task{GPUs: 4}, func(h topology.HostID) bool { return h != 2 }, ""},
		{frag.Task{GPUMilli: 500}, func(h topology.HostID) bool { return h == 0 }, "h0"},
		{frag.Task{GPUs: 1, CPUMilli: 64000}, nil, ""},
	} {
		cl, ok := n.Pick(l, tc.task, frag.Scope{Allow: tc.allow})
		got := ""
		if ok {
			got = c.HostName(cl.Host)
		}
		if got != tc.want {
			t.Errorf("%+v: host %q, want %q", tc.task, got, tc.want)
		}
	}
	if err := n.Err(); err != nil {
		t.Fatal(err)
	}
	if calls, _ := n.CallStats(); calls != 3 { // no call when no host can take the task
		t.Errorf("%d calls, want 3", calls)
	}
	for range 200 {
		n.Pick(l, frag.Task{GPUs: 1}, frag.Scope{})
	}
	calls, spent := n.CallStats()
	t.Logf("%d pick calls over 3 hosts, %v per call", calls, spent/time.Duration(calls))
}

// TestNodePickerBadReplies: a reply naming a host that is not a
// candidate, or none, stops the picker with an error naming the policy
// and the field; nothing is placed after it.
func TestNodePickerBadReplies(t *testing.T) {
	py := python(t)
	for _, tc := range []struct{ reply, want string }{
		{`{"host":"nosuch"}`, `bad: pick: "host": "nosuch" is not a host of the cluster`},
		{`{"host":"h0"}`, `bad: pick: "host": "h0" was not a candidate`},
		{`{}`, `bad: pick: reply without "host"`},
		{`{"error":"no"}`, `bad: pick: no`},
		{`not json`, `extproc: bad: reply "not json`},
	} {
		c, l := threeHosts(t)
		script := filepath.Join(t.TempDir(), "bad.py")
		src := "import sys\nfor line in sys.stdin:\n" +
			"    if '\"hello\"' in line: print('{\"name\":\"bad\"}')\n" +
			"    elif '\"bye\"' in line: break\n" +
			"    else: print(" + pyQuote(tc.reply) + ")\n" +
			"    sys.stdout.flush()\n"
		if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := extproc.StartNodePicker([]string{py, script}, c, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := n.Pick(l, frag.Task{GPUs: 2}, frag.Scope{}); ok {
			t.Errorf("%s: placed", tc.reply)
		}
		if err := n.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.reply, err, tc.want)
		}
		if _, ok := n.Pick(l, frag.Task{GPUs: 1}, frag.Scope{}); ok {
			t.Errorf("%s: placed after the error", tc.reply)
		}
		n.Close()
	}
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestPythonPlacerRun: --policy exec:python3 worst_fit.py runs the
// synthetic trace on four 8-GPU hosts through the simulator and gives the built-in worst-fit
// node policy's run (same host order; the synthetic jobs' CPU follows
// their GPUs, so Go's CPU term does not reorder hosts).
func TestPythonPlacerRun(t *testing.T) {
	py := python(t)
	spec, err := json.Marshal(topology.Spec{
		Version:      topology.SpecVersion,
		Name:         "four",
		Accelerators: []topology.AcceleratorSpec{{Model: "H100"}},
		Templates:    []topology.HostTemplate{{Name: "box", CPUMilli: 224000, MemoryMiB: 2 << 20, Accelerator: "H100", GPUs: 8}},
		Hosts:        []topology.HostGroup{{Name: "n[0-3]", Template: "box"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "four.json")
	if err := os.WriteFile(file, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	four := []string{"--file", file}
	g := runSummaryOn(t, nil, four, "--policy", "worst-fit")
	p := runSummaryOn(t, nil, four, "--policy", "exec:"+py+" "+example(t, "worst_fit.py"))
	g.Policy, p.Policy = "", ""
	gb, _ := json.Marshal(g)
	pb, _ := json.Marshal(p)
	if !bytes.Equal(gb, pb) {
		t.Errorf("Python and Go runs differ:\nGo     %s\nPython %s", gb, pb)
	}
	b := runSummaryOn(t, nil, four, "--policy", "best-fit")
	b.Policy = ""
	if bb, _ := json.Marshal(b); bytes.Equal(bb, gb) {
		t.Error("best-fit gives worst-fit's run: the comparison tests nothing")
	}
}

// TestPythonLAS: python/examples/las.py, a demotion policy over the
// boundary (told each job's GPUs and attained running time, it answers
// priorities by 2D-LAS level), runs through the real python3 with
// priority preemption: it demotes and preempts, and lands near the
// built-in las:1,8 (which also acts at the moment a job crosses a
// threshold; the process sees it at the next cycle).
func TestPythonLAS(t *testing.T) {
	py := python(t)
	common := []string{"--preempt=queue", "--ckpt-interval", "30m"}
	g := runSummary(t, nil, append(common, "--ordering", "las:1,8")...)
	p := runSummary(t, nil, append(common, "--ordering", "exec:"+py+" "+example(t, "las.py")+" 1 8")...)
	f := runSummary(t, nil, common...)
	t.Logf("mean JCT: fifo %.0f s, las:1,8 %.0f s, las.py %.0f s; preemptions %d / %d", f.JCT.Mean, g.JCT.Mean, p.JCT.Mean, g.Preemption.Preemptions, p.Preemption.Preemptions)
	if p.Preemption.Preemptions == 0 || g.Preemption.Preemptions == 0 {
		t.Error("no preemption: nothing was demoted")
	}
	if p.JCT.Mean >= f.JCT.Mean {
		t.Errorf("las.py mean JCT %.0f s, not below FIFO's %.0f s", p.JCT.Mean, f.JCT.Mean)
	}
	if p.Jobs.Completed != g.Jobs.Completed {
		t.Errorf("completed: las.py %d, las:1,8 %d", p.Jobs.Completed, g.Jobs.Completed)
	}
}
