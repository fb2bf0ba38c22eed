package trace

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/workload"
)

const openbHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"

func readOpenBString(t *testing.T, in string, opt OpenBOptions) ([]Job, Stats, error) {
	t.Helper()
	return ReadOpenB(strings.NewReader(in), opt)
}

func TestOpenBRows(t *testing.T) {
	in := openbHeader +
		"p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n" + // one whole GPU; ran 12537496 s
		"p1,6000,12288,1,460,,LS,Running,427061,12902960,427061\n" + // a 460-milli share
		"p2,8000,30517,0,0,,BE,Running,100,160,100\n" + // CPU-only
		"p3,88000,327680,8,1000,V100M16|V100M32|V100M32,Burstable,Succeeded,5,5,5\n" + // 8 GPUs, two models (one repeated), zero duration
		"p4,16000,32768,1,1000,nan,LS,Pending,,,\n" + // no times: Submit 0, Duration unknown
		"p5,4000,8192,0,0,T4,BE,Failed,7,,\n" // CPU-only ignores gpu_spec; no deletion: Duration unknown
	jobs, st, err := readOpenBString(t, in, OpenBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 6 || st.Read != 6 || st.Skipped != 0 {
		t.Fatalf("got %d jobs, stats %+v", len(jobs), st)
	}
	want := []struct {
		group            workload.TaskGroup
		submit, duration time.Duration
	}{
		{workload.TaskGroup{Count: 1, GPUs: 1, CPUMilli: 12000, MemoryMiB: 16384}, 0, 12537496 * time.Second},
		{workload.TaskGroup{Count: 1, GPUMilli: 460, CPUMilli: 6000, MemoryMiB: 12288}, 427061 * time.Second, (12902960 - 427061) * time.Second},
		{workload.TaskGroup{Count: 1, CPUMilli: 8000, MemoryMiB: 30517}, 100 * time.Second, 60 * time.Second},
		{workload.TaskGroup{Count: 1, GPUs: 8, CPUMilli: 88000, MemoryMiB: 327680, Models: []string{"V100M16", "V100M32"}}, 5 * time.Second, 0},
		{workload.TaskGroup{Count: 1, GPUs: 1, CPUMilli: 16000, MemoryMiB: 32768}, 0, 0},
		{workload.TaskGroup{Count: 1, CPUMilli: 4000, MemoryMiB: 8192}, 7 * time.Second, 0},
	}
	for i, w := range want {
		j := jobs[i]
		if j.Spec.ID != "p"+string(rune('0'+i)) || j.Line != i+2 {
			t.Errorf("job %d: id %q line %d", i, j.Spec.ID, j.Line)
		}
		if len(j.Spec.Groups) != 1 {
			t.Fatalf("job %d: %d groups", i, len(j.Spec.Groups))
		}
		g := j.Spec.Groups[0]
		if g.Count != w.group.Count || g.GPUs != w.group.GPUs || g.GPUMilli != w.group.GPUMilli ||
			g.CPUMilli != w.group.CPUMilli || g.MemoryMiB != w.group.MemoryMiB || strings.Join(g.Models, "|") != strings.Join(w.group.Models, "|") {
			t.Errorf("job %d: group %+v, want %+v", i, g, w.group)
		}
		if j.Submit != w.submit || j.Duration != w.duration {
			t.Errorf("job %d: submit %v duration %v, want %v %v", i, j.Submit, j.Duration, w.submit, w.duration)
		}
		if err := j.Spec.Validate(); err != nil {
			t.Errorf("job %d: %v", i, err)
		}
	}
}

func TestOpenBFiveColumnsAnyOrder(t *testing.T) {
	// The multigpu lists: five columns, no times. Columns are found by name.
	in := "\ufeffGPU_Milli, num_gpu ,name,memory_mib,cpu_milli\n" +
		"1000,4,m0,65536,32000\n" +
		"230,1,m1,2048,4000.0\n"
	jobs, _, err := readOpenBString(t, in, OpenBOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs", len(jobs))
	}
	if g := jobs[0].Spec.Groups[0]; g.GPUs != 4 || g.CPUMilli != 32000 || g.MemoryMiB != 65536 || jobs[0].Duration != 0 {
		t.Errorf("m0: %+v", g)
	}
	if g := jobs[1].Spec.Groups[0]; g.GPUMilli != 230 || g.CPUMilli != 4000 {
		t.Errorf("m1: %+v", g)
	}
}

func TestOpenBHeaderErrors(t *testing.T) {
	cases := []struct {
		name, in, field string
		opt             OpenBOptions
	}{
		{"empty", "", "", OpenBOptions{}},
		{"missing column", "name,cpu_milli,memory_mib,num_gpu\n", "gpu_milli", OpenBOptions{}},
		{"twice", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,name\n", "name", OpenBOptions{}},
		{"unknown strict", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spek\n", "gpu_spek", OpenBOptions{Strict: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewOpenB(strings.NewReader(c.in), c.opt)
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("err %v, want *ParseError", err)
			}
			if pe.Line != 1 || pe.Field != c.field {
				t.Errorf("line %d field %q, want 1 %q (%v)", pe.Line, pe.Field, c.field, err)
			}
		})
	}
	// Unknown columns are fine without Strict.
	if _, err := NewOpenB(strings.NewReader("name,cpu_milli,memory_mib,num_gpu,gpu_milli,extra\n"), OpenBOptions{}); err != nil {
		t.Error(err)
	}
}

func TestOpenBOddRows(t *testing.T) {
	cases := []struct {
		name, row, field string
	}{
		{"empty name", ",1000,1024,0,0,,,,,,", "name"},
		{"negative cpu", "x,-1,1024,0,0,,,,,,", "cpu_milli"},
		{"fractional cpu", "x,1000.5,1024,0,0,,,,,,", "cpu_milli"},
		{"missing memory", "x,1000,,0,0,,,,,,", "memory_mib"},
		{"word gpus", "x,1000,1024,two,1000,,,,,,", "num_gpu"},
		{"too many gpus", "x,1000,1024,257,1000,,,,,,", "num_gpu"},
		{"milli above 1000", "x,1000,1024,1,1500,,,,,,", "gpu_milli"},
		{"share without gpu", "x,1000,1024,0,500,,,,,,", "gpu_milli"},
		{"gpu without milli", "x,1000,1024,2,0,,,,,,", "gpu_milli"},
		{"share of several", "x,1000,1024,2,500,,,,,,", "gpu_milli"},
		{"deletion before creation", "x,1000,1024,1,1000,,LS,Running,100,99,100", "deletion_time"},
		{"negative creation", "x,1000,1024,1,1000,,LS,Running,-5,99,100", "creation_time"},
		{"bad scheduled", "x,1000,1024,1,1000,,LS,Running,5,99,soon", "scheduled_time"},
		{"short row", "x,1000,1024,1,1000", ""},
		{"overflowing time", "x,1000,1024,1,1000,,LS,Running,99999999999999999999,,", "creation_time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := openbHeader + "ok,1000,1024,0,0,,,,,,\n" + c.row + "\n" + "ok2,1000,1024,0,0,,,,,,\n"
			_, _, err := readOpenBString(t, in, OpenBOptions{File: "pods.csv"})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want *ParseError", err)
			}
			if pe.File != "pods.csv" || pe.Line != 3 || pe.Field != c.field {
				t.Errorf("got %q (line %d field %q), want line 3 field %q", err, pe.Line, pe.Field, c.field)
			}
			// Skip mode: the bad row is counted, the others are read.
			jobs, st, err := readOpenBString(t, in, OpenBOptions{SkipMalformed: true})
			if err != nil || len(jobs) != 2 || st.Read != 2 || st.Skipped != 1 || st.FirstSkip == nil {
				t.Fatalf("skip mode: %d jobs, %+v, %v", len(jobs), st, err)
			}
			reason := c.field
			if reason == "" {
				reason = "record"
			}
			if st.SkipReasons[reason] != 1 {
				t.Errorf("skip reasons %v, want %s", st.SkipReasons, reason)
			}
		})
	}
}

func TestOpenBDuplicateName(t *testing.T) {
	in := openbHeader + "a,1000,1024,0,0,,,,,,\n" + "a,1000,1024,0,0,,,,,,\n"
	_, _, err := readOpenBString(t, in, OpenBOptions{})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || pe.Field != "name" || !strings.Contains(pe.Msg, "line 2") {
		t.Fatalf("err %v", err)
	}
}

func TestOpenBCSVSyntaxThenContinue(t *testing.T) {
	in := openbHeader + "a,1000,1024,0,0,,,,,,\n" + "\"b,1000,1024,0,0,,,,,,\n"
	jobs, st, err := readOpenBString(t, in, OpenBOptions{SkipMalformed: true})
	if err != nil || len(jobs) != 1 || st.Skipped != 1 {
		t.Fatalf("%d jobs %+v %v", len(jobs), st, err)
	}
}

type openbFailingReader struct{ n int }

func (f *openbFailingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		f.n++
		return copy(p, openbHeader+"a,1000,1024,0,0,,,,,,\n"), nil
	}
	return 0, errors.New("disk on fire")
}

func TestOpenBStreamErrorIsFatalEvenWhenSkipping(t *testing.T) {
	o, err := NewOpenB(&openbFailingReader{}, OpenBOptions{SkipMalformed: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Next(); err != nil {
		t.Fatal(err)
	}
	_, err = o.Next()
	if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err %v", err)
	}
}

// openbDataFile finds ../shared/data from the repository root.
func openbDataFile(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("repository root not found")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not present (the shared data sits at ../shared/data): %v", rel, err)
	}
	return p
}

func TestOpenBRealLists(t *testing.T) {
	cases := []struct {
		file                            string
		jobs, cpuOnly, shares, eightGPU int
		withModels                      int
		gpuMilli                        int64
		timed                           bool
	}{
		// Counts from the data README: 8,152 tasks, 1,088 CPU-only, 3,078
		// fractional, 44 of 8 GPUs; total GPU demand 6,086.8 GPUs.
		{"openb_pod_list_default.csv", 8152, 1088, 3078, 44, 0, 6086800, true},
		{"openb_pod_list_gpuspec25.csv", 8152, 1088, 3078, 44, 1759, 6086800, true},
		{"openb_pod_list_multigpu20.csv", 8324, -1, -1, -1, 0, 7086800, false},
		{"openb_pod_list_multigpu40.csv", 8746, -1, -1, 359, 0, 9442800, false},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p := openbDataFile(t, "cluster-trace-gpu-v2023/csv/"+c.file)
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			jobs, st, err := ReadOpenB(f, OpenBOptions{File: c.file, Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			cpuOnly, shares, eight, models := 0, 0, 0, 0
			var milli int64
			timed := false
			for _, j := range jobs {
				g := j.Spec.Groups[0]
				switch {
				case g.GPUs == 0 && g.GPUMilli == 0:
					cpuOnly++
				case g.GPUMilli > 0:
					shares++
				case g.GPUs == 8:
					eight++
				}
				if len(g.Models) > 0 {
					models++
				}
				milli += g.PerTask().GPUMilli
				if j.Duration > 0 {
					timed = true
				}
			}
			if len(jobs) != c.jobs || st.Read != c.jobs || milli != c.gpuMilli || timed != c.timed || models != c.withModels {
				t.Errorf("%d jobs (stats %+v), %d milli, timed %v, %d with models", len(jobs), st, milli, timed, models)
			}
			if c.cpuOnly >= 0 && (cpuOnly != c.cpuOnly || shares != c.shares) {
				t.Errorf("cpu-only %d shares %d", cpuOnly, shares)
			}
			if c.eightGPU >= 0 && eight != c.eightGPU {
				t.Errorf("8-GPU %d", eight)
			}
		})
	}
}
