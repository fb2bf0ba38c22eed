package workload

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func job(groups ...TaskGroup) Job { return Job{ID: "j", Groups: groups} }

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		job   Job
		field string // "" means valid
	}{
		{"one 8-GPU task", job(TaskGroup{Count: 1, GPUs: 8}), ""},
		{"elastic", job(TaskGroup{Count: 8, MinCount: 4, GPUs: 1}), ""},
		{"share", job(TaskGroup{Count: 1, GPUMilli: 460}), ""},
		{"MIG", job(TaskGroup{Count: 2, MIGProfile: "1g.10gb"}), ""},
		{"CPU only", job(TaskGroup{Count: 1, CPUMilli: 4000, MemoryMiB: 1024}), ""},
		{"no ID", Job{Groups: []TaskGroup{{Count: 1}}}, "id"},
		{"no groups", Job{ID: "j"}, "groups"},
		{"zero tasks", job(TaskGroup{Count: 0, GPUs: 1}), "groups[0].count"},
		{"negative GPUs", job(TaskGroup{Count: 1, GPUs: -1}), "groups[0].gpus"},
		{"share above 1000", job(TaskGroup{Count: 1, GPUMilli: 1500}), "groups[0].gpuMilli"},
		{"share of exactly 1000", job(TaskGroup{Count: 1, GPUMilli: 1000}), "groups[0].gpuMilli"},
		{"negative share", job(TaskGroup{Count: 1, GPUMilli: -5}), "groups[0].gpuMilli"},
		{"min above count", job(TaskGroup{Count: 2, MinCount: 3, GPUs: 1}), "groups[0].minCount"},
		{"two GPU kinds", job(TaskGroup{Count: 1, GPUs: 1, GPUMilli: 500}), "groups[0]"},
		{"negative CPU", job(TaskGroup{Count: 1, CPUMilli: -1}), "groups[0].cpuMilli"},
		{"negative memory", job(TaskGroup{Count: 1, MemoryMiB: -1}), "groups[0].memoryMiB"},
		{"empty model", job(TaskGroup{Count: 1, GPUs: 1, Models: []string{"H100", ""}}), "groups[0].models[1]"},
		{"duplicate group", job(TaskGroup{Name: "w", Count: 1}, TaskGroup{Name: "w", Count: 1}), "groups[1].name"},
		{"too many tasks", job(TaskGroup{Count: MaxTasks + 1}), "groups[0].count"},
		{"empty level", Job{ID: "j", Groups: []TaskGroup{{Count: 1}}, Topology: []Constraint{{Level: ""}}}, "topology[0].level"},
		{"level twice", Job{ID: "j", Groups: []TaskGroup{{Count: 1}}, Topology: []Constraint{{Level: "tor"}, {Level: "tor", Required: true}}}, "topology[1].level"},
		{"negative runtime", Job{ID: "j", Groups: []TaskGroup{{Count: 1}}, Runtime: -time.Second}, "runtime"},
		{"negative min run time", Job{ID: "j", Groups: []TaskGroup{{Count: 1}}, MinRunTime: -1}, "minRunTime"},
		{"negative cap", Job{ID: "j", Groups: []TaskGroup{{Count: 1}}, MaxPreemptions: -1}, "maxPreemptions"},
		{"negative checkpoint", Job{ID: "j", Groups: []TaskGroup{{Count: 1}}, CheckpointInterval: -1}, "checkpointInterval"},
		{"grace", Job{ID: "j", Groups: []TaskGroup{{Count: 1}}, Grace: 10 * time.Minute}, ""},
		{"negative grace", Job{ID: "j", Groups: []TaskGroup{{Count: 1}}, Grace: -time.Second}, "grace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.job.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *FieldError", err)
			}
			if fe.Field != tt.field {
				t.Errorf("field = %q, want %q (error %v)", fe.Field, tt.field, err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not unwrap to ErrInvalid")
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("message %q does not name the field", err)
			}
		})
	}
}

func TestDemand(t *testing.T) {
	j := Job{ID: "j", Groups: []TaskGroup{
		{Count: 4, MinCount: 2, GPUs: 8, CPUMilli: 96000, MemoryMiB: 1 << 20},
		{Count: 2, GPUMilli: 250, CPUMilli: 1000},
	}}
	// 4×8 GPUs + 2×0.25 = 32.5 GPUs; min: 2×8 + 2×0.25 = 16.5.
	if got, want := j.Demand(), (Resources{GPUMilli: 32500, CPUMilli: 4*96000 + 2*1000, MemoryMiB: 4 << 20}); got != want {
		t.Errorf("Demand() = %v, want %v", got, want)
	}
	if got, want := j.MinDemand().GPUMilli, int64(16500); got != want {
		t.Errorf("MinDemand().GPUMilli = %d, want %d", got, want)
	}
	if got := j.GPUs(); got != 33 { // 32.5 rounded up
		t.Errorf("GPUs() = %d, want 33", got)
	}
	if j.Tasks() != 6 || j.MinTasks() != 4 {
		t.Errorf("Tasks/MinTasks = %d/%d, want 6/4", j.Tasks(), j.MinTasks())
	}
}

func TestResources(t *testing.T) {
	a := Resources{GPUMilli: 1500, CPUMilli: 8000, MemoryMiB: 100}
	b := Resources{GPUMilli: 500, CPUMilli: 2000, MemoryMiB: 50}
	if got := a.Add(b).Sub(b); got != a {
		t.Errorf("a+b-b = %v, want %v", got, a)
	}
	if !b.Fits(a) || a.Fits(b) {
		t.Errorf("Fits is wrong")
	}
	if got, want := b.Scale(3), (Resources{1500, 6000, 150}); got != want {
		t.Errorf("Scale = %v, want %v", got, want)
	}
	if !(Resources{}).IsZero() || a.IsZero() {
		t.Errorf("IsZero is wrong")
	}
	if got, want := a.String(), "gpu=1.5 cpu=8 mem=100MiB"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
