package extproc

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/topology"
)

// replayed is an Ordering whose process's standard output is out and
// whose requests go nowhere: the reading side of the protocol without a
// process. Its reader's buffer is bufio's smallest, so long replies take
// the path that joins buffer-sized pieces.
func replayed(out []byte) *Ordering {
	return &Ordering{name: "fuzz", stderr: &tailBuffer{max: 64}, w: bufio.NewWriter(io.Discard), r: bufio.NewReaderSize(bytes.NewReader(out), 16)}
}

// FuzzReplies: whatever a policy process prints, the reader never
// panics: each call returns one int32 priority per job or an error naming
// the policy, and after a broken stream every call fails.
func FuzzReplies(f *testing.F) {
	for _, s := range []string{
		`{"priorities":[1,2]}` + "\n" + `{"priorities":[3,4]}` + "\n",
		`{"priorities":[1]}` + "\n",
		`{"priorities":[2147483648,0]}` + "\n",
		`{"priorities":[-2147483648,2147483647]}` + "\n",
		`{"error":"no"}` + "\n",
		`{"priorities":[1.5,2]}` + "\n",
		"not json\n",
		`{"priorities":[1,2]}`,
		"\n",
		`{"priorities":[` + strings.Repeat("1,", 40) + "1]}\n",
		`{"priorities":null}` + "\n",
		`[1,2]` + "\n",
	} {
		f.Add([]byte(s))
	}
	jobs := []policy.Job{{ID: "a", Queue: "q", GPUs: 1, Submit: time.Second}, {ID: "b", Queue: "q", GPUs: 8, Running: true}}
	f.Fuzz(func(t *testing.T, out []byte) {
		o := replayed(out)
		var broken error
		for range 4 {
			ps, err := o.Enqueued(time.Minute, jobs)
			if err != nil {
				if !strings.Contains(err.Error(), "fuzz") {
					t.Fatalf("error %v does not name the policy", err)
				}
				if o.broken != nil {
					broken = o.broken
				}
				continue
			}
			if broken != nil {
				t.Fatalf("a call succeeded after the stream broke (%v)", broken)
			}
			if len(ps) != len(jobs) {
				t.Fatalf("%d priorities for %d jobs", len(ps), len(jobs))
			}
		}
	})
}

// FuzzPickReplies: whatever a node picker prints, Pick never panics: it
// places a task only on a candidate host, and after an error (which names
// the policy) it places nothing.
func FuzzPickReplies(f *testing.F) {
	for _, s := range []string{
		`{"host":"h2"}` + "\n" + `{"host":"h1"}` + "\n",
		`{"host":""}` + "\n",
		`{"host":"h0"}` + "\n",
		`{"host":"nosuch"}` + "\n",
		`{"host":null}` + "\n",
		`{"host":7}` + "\n",
		`{"error":"no"}` + "\n",
		"not json\n",
		`{"host":"h2"}`,
	} {
		f.Add([]byte(s))
	}
	c := ThreeHosts(f)
	l := topology.NewLedger(c)
	g0, _ := c.HostGPUs(0)
	for i := range 3 {
		if err := l.AllocateGPU(g0 + topology.GPUID(i)); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		n := &NodePicker{o: replayed(out), c: c}
		failed := false
		for range 4 {
			cl, ok := n.Pick(l, frag.Task{GPUs: 2}, frag.Scope{})
			if err := n.Err(); err != nil {
				if !strings.Contains(err.Error(), "fuzz") {
					t.Fatalf("error %v does not name the policy", err)
				}
				failed = true
			}
			if ok && (failed || cl.Host == 0) {
				t.Fatalf("placed on %v (failed %v)", cl.Host, failed)
			}
		}
	})
}

// ThreeHosts is the tests' cluster: three 4-GPU A100 hosts, h0 to h2.
func ThreeHosts(tb testing.TB) *topology.Cluster {
	tb.Helper()
	c, err := topology.Build(topology.Spec{
		Version:      topology.SpecVersion,
		Name:         "three",
		Accelerators: []topology.AcceleratorSpec{{Model: "A100"}},
		Templates:    []topology.HostTemplate{{Name: "box", CPUMilli: 32000, MemoryMiB: 131072, Accelerator: "A100", GPUs: 4}},
		Hosts:        []topology.HostGroup{{Name: "h[0-2]", Template: "box"}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
