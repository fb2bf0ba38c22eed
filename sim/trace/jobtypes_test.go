package trace_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/workload"
)

func TestReadJobTypes(t *testing.T) {
	in := "# types\njob,type\n\nj1, resnet50-bs64\nj2,lm-bs20\n"
	m, err := trace.ReadJobTypes(strings.NewReader(in), "types.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.JobType{{Job: "j1", Type: "resnet50-bs64", Line: 4}, {Job: "j2", Type: "lm-bs20", Line: 5}}
	if !slices.Equal(m.Rows, want) {
		t.Fatalf("rows %v, want %v", m.Rows, want)
	}
	jobs := []trace.Job{{Spec: workload.Job{ID: "j2"}}, {Spec: workload.Job{ID: "j3"}, Type: "a3c"}}
	if n := m.Assign(jobs); n != 1 {
		t.Errorf("unmatched %d, want 1 (j1)", n)
	}
	if jobs[0].Type != "lm-bs20" || jobs[1].Type != "a3c" {
		t.Errorf("types %q %q, want lm-bs20 and a3c kept", jobs[0].Type, jobs[1].Type)
	}
	err = m.Check(func(s string) bool { return s == "lm-bs20" }, []string{"lm-bs20"})
	if err == nil || err.Error() != `types.csv:4: field type: "resnet50-bs64" is not a job type of the speed table (lm-bs20)` {
		t.Errorf("check: %v", err)
	}
}

// TestReadJobTypesErrors: each malformed file is refused with its file,
// line and field.
func TestReadJobTypesErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"j1 resnet\n", `t.csv:1: "j1 resnet" is not JOB,TYPE`},
		{"job,type\n,resnet\n", "t.csv:2: field job: empty"},
		{"j1,\n", "t.csv:1: field type: empty"},
		{"j1,a,b\n", `t.csv:1: field type: "a,b" has a comma or a quote`},
		{"j1,a\n\nj1,b\n", `t.csv:3: field job: job "j1" is listed twice (first on line 1)`},
		{"# nothing\n", "t.csv:1: no JOB,TYPE line"},
		{"j\x01,a\n", `t.csv:1: field job: "j\x01" has a control character`},
		{"j1,\xff\n", "t.csv:1: not UTF-8"},
	} {
		_, err := trace.ReadJobTypes(strings.NewReader(tc.in), "t.csv")
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.in, err, tc.want)
		}
		if err != nil && !errors.Is(err, trace.ErrMalformed) {
			t.Errorf("%q: %v does not wrap ErrMalformed", tc.in, err)
		}
	}
}

// TestAssignUniform: draws depend on the seed and the job's ID only, and
// cover the types.
func TestAssignUniform(t *testing.T) {
	types := []string{"a", "b", "c"}
	var jobs []trace.Job
	for _, id := range []string{"x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12"} {
		jobs = append(jobs, trace.Job{Spec: workload.Job{ID: id}})
	}
	trace.AssignUniform(jobs, types, 7)
	seen := map[string]int{}
	for _, j := range jobs {
		seen[j.Type]++
	}
	if len(seen) != 3 {
		t.Errorf("types drawn %v, want all three among 12 jobs", seen)
	}
	sub := slices.Clone(jobs[5:7])
	trace.AssignUniform(sub, types, 7)
	if sub[0].Type != jobs[5].Type || sub[1].Type != jobs[6].Type {
		t.Error("a slice of the trace draws other types")
	}
}

// FuzzReadJobTypes: any input is read or refused with a *ParseError
// naming the file; what is read has unique, non-empty, trimmed fields.
func FuzzReadJobTypes(f *testing.F) {
	for _, s := range []string{"job,type\nj1,resnet50-bs64\n", "j1,a\nj1,b\n", "#c\n\n x , y \n", "a,b,c", "\xff,\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := trace.ReadJobTypes(strings.NewReader(in), "f.csv")
		if err != nil {
			var pe *trace.ParseError
			if !errors.As(err, &pe) && !strings.HasPrefix(err.Error(), "f.csv:") {
				t.Fatalf("error %v names no file", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range m.Rows {
			if r.Job == "" || r.Type == "" || r.Job != strings.TrimSpace(r.Job) || seen[r.Job] || r.Line < 1 {
				t.Fatalf("bad row %+v", r)
			}
			seen[r.Job] = true
		}
	})
}

// TestGenericTypeColumn: a generic trace's type column sets Job.Type.
func TestGenericTypeColumn(t *testing.T) {
	m, err := trace.ParseMapping("submit=t,duration=d,gpus=g,type=net")
	if err != nil {
		t.Fatal(err)
	}
	r, err := trace.NewCSV(strings.NewReader("t,d,g,net\n0,60,1,resnet50-bs64\n5,60,2,\n"), m, trace.Options{File: "g.csv"})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := trace.Collect(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].Type != "resnet50-bs64" || jobs[1].Type != "" {
		t.Fatalf("jobs %+v, want types resnet50-bs64 and none", jobs)
	}
}
