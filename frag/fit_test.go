package frag

import (
	"errors"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

func TestFitChecker(t *testing.T) {
	c := smallCluster(t) // h0: 8 A, 64 cores, 256 GiB; h1: 2 B, 32 cores, 128 GiB; h2: 4 A, 16 cores, 64 GiB
	a, _ := c.ModelByName("A")
	b, _ := c.ModelByName("B")
	fc := NewFitChecker(c)
	for _, tc := range []struct {
		name       string
		task       Task
		field      string
		need, most int64
	}{
		{"cpu-only", Task{CPUMilli: 64000, MemoryMiB: 262144}, "", 0, 0},
		{"share anywhere", Task{GPUMilli: 500, Models: []topology.ModelID{b}}, "", 0, 0},
		{"8 GPUs of A", Task{GPUs: 8, Models: []topology.ModelID{a}}, "", 0, 0},
		{"16 GPUs", Task{GPUs: 16}, FitGPUs, 16, 8},
		{"4 GPUs of B", Task{GPUs: 4, Models: []topology.ModelID{b}}, FitGPUs, 4, 2},
		{"unknown model", Task{GPUs: 1, Models: []topology.ModelID{topology.NoModel}}, FitModels, 0, 0},
		{"unknown model share", Task{GPUMilli: 100, Models: []topology.ModelID{topology.NoModel}}, FitModels, 0, 0},
		// 8 GPUs leave only h0: its 64 cores are the most.
		{"8 GPUs and 100 cores", Task{GPUs: 8, CPUMilli: 100000}, FitCPU, 100000, 64000},
		{"too much CPU", Task{CPUMilli: 65000}, FitCPU, 65000, 64000},
		{"2 B GPUs and 200 GiB", Task{GPUs: 2, Models: []topology.ModelID{b}, MemoryMiB: 200 << 10}, FitMemory, 200 << 10, 128 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fc.Check(tc.task)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FitError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFitsNowhere) {
				t.Fatalf("err %v, want a *FitError", err)
			}
			if fe.Field != tc.field || fe.Need != tc.need || fe.Most != tc.most {
				t.Errorf("%+v, want field %s need %d most %d (%v)", *fe, tc.field, tc.need, tc.most, err)
			}
		})
	}
	if err := fc.Check(Task{GPUs: 300}); err == nil || errors.Is(err, ErrFitsNowhere) || !errors.Is(err, ErrBadTask) {
		t.Errorf("invalid task: %v, want Validate's error", err)
	}
	// No GPU at all.
	cpuOnly, err := topology.Build(topology.Spec{Version: topology.SpecVersion, Name: "cpu",
		Templates: []topology.HostTemplate{{Name: "c", CPUMilli: 1000, MemoryMiB: 1024}}, Hosts: []topology.HostGroup{{Name: "c0", Template: "c"}}})
	if err != nil {
		t.Fatal(err)
	}
	var fe *FitError
	if err := NewFitChecker(cpuOnly).Check(Task{GPUMilli: 10}); !errors.As(err, &fe) || fe.Field != FitGPUs || fe.Most != 0 {
		t.Errorf("share on a cluster without GPUs: %v", err)
	}
}

// TestFitCheckerMatchesPick: a task passes the check exactly when a
// policy places it on the empty cluster.
func TestFitCheckerMatchesPick(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := randomCluster(rt)
		fc := NewFitChecker(c)
		p := mustPolicy(t, "first-fit")
		l := topology.NewLedger(c)
		for i := range 20 {
			tk := randomTask(rt, c, "t"+itoa(i))
			if rapid.IntRange(0, 9).Draw(rt, "bigger"+itoa(i)) == 0 {
				tk.GPUs, tk.GPUMilli = rapid.IntRange(5, 12).Draw(rt, "many"+itoa(i)), 0
			}
			_, placed := p.Pick(l, tk, Scope{})
			err := fc.Check(tk)
			if placed != (err == nil) {
				rt.Fatalf("task %+v: Pick placed %v, Check says %v", tk, placed, err)
			}
			if err != nil && !errors.Is(err, ErrFitsNowhere) {
				rt.Fatalf("task %+v: %v is not a *FitError", tk, err)
			}
		}
	})
}

// The GPUs of every task of every real openb pod list fit the paper's
// cluster; only three tasks of the gpuspec lists (8 G2 GPUs with 120
// cores, where the G2 hosts have 96) fit no host, by CPU. They failed in
// production too (pod_phase Failed), and the paper's simulator counts
// them as arrived and never placed.
func TestFitCheckerOpenBLists(t *testing.T) {
	c := openbGPU(t)
	fc := NewFitChecker(c)
	want := map[string]bool{"gpuspec10 1639": true, "gpuspec10 5724": true, "gpuspec25 3362": true}
	for _, f := range []string{"default", "cpu050", "gpushare40", "gpushare80", "gpuspec10", "gpuspec25", "multigpu20", "multigpu40"} {
		for i, tk := range openbTasks(t, c, "openb_pod_list_"+f+".csv") {
			err := fc.Check(tk)
			var fe *FitError
			switch key := f + " " + itoa(i); {
			case want[key]:
				if !errors.As(err, &fe) || fe.Field != FitCPU || fe.Most != 96000 {
					t.Errorf("%s: %+v: %v, want a CPU shortfall", key, tk, err)
				}
				delete(want, key)
			case err != nil:
				t.Errorf("%s: %+v: %v", key, tk, err)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("these tasks fit after all: %v", want)
	}
}

func BenchmarkFitChecker(b *testing.B) {
	c := openbGPU(b)
	tasks := openbTasks(b, c, "openb_pod_list_default.csv")
	fc := NewFitChecker(c)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := fc.Check(tasks[i%len(tasks)]); err != nil {
			b.Fatal(err)
		}
	}
}
