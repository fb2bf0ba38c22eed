// Package workload is the vocabulary every other gpusched package shares:
// resource vectors and the specs of jobs and their task groups. It is a leaf
// package: it imports nothing from gpusched, does no I/O and keeps no state.
package workload

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// MilliPerGPU is one whole GPU in milli-GPU.
const MilliPerGPU = 1000

// Resources is an amount of the resources a scheduler divides. GPU is in
// milli-GPU so that fractional shares add up exactly.
type Resources struct {
	GPUMilli  int64 `json:"gpuMilli" yaml:"gpuMilli"`
	CPUMilli  int64 `json:"cpuMilli" yaml:"cpuMilli"`
	MemoryMiB int64 `json:"memoryMiB" yaml:"memoryMiB"`
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{r.GPUMilli + o.GPUMilli, r.CPUMilli + o.CPUMilli, r.MemoryMiB + o.MemoryMiB}
}

// Sub returns r - o.
func (r Resources) Sub(o Resources) Resources {
	return Resources{r.GPUMilli - o.GPUMilli, r.CPUMilli - o.CPUMilli, r.MemoryMiB - o.MemoryMiB}
}

// Scale returns r × n.
func (r Resources) Scale(n int64) Resources {
	return Resources{r.GPUMilli * n, r.CPUMilli * n, r.MemoryMiB * n}
}

// Fits reports whether r ≤ o in every dimension.
func (r Resources) Fits(o Resources) bool {
	return r.GPUMilli <= o.GPUMilli && r.CPUMilli <= o.CPUMilli && r.MemoryMiB <= o.MemoryMiB
}

// IsZero reports whether every dimension is zero.
func (r Resources) IsZero() bool { return r == Resources{} }

// String renders r as "gpu=1.5 cpu=8 mem=64GiB"-style text.
func (r Resources) String() string {
	return fmt.Sprintf("gpu=%s cpu=%s mem=%dMiB", milli(r.GPUMilli), milli(r.CPUMilli), r.MemoryMiB)
}

func milli(v int64) string {
	if v%1000 == 0 {
		return strconv.FormatInt(v/1000, 10)
	}
	return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)
}

// TaskGroup is a set of identical tasks of a job. Each task needs, on one
// host, CPUMilli and MemoryMiB and exactly one of: GPUs whole GPUs, a
// GPUMilli share of one GPU, a MIG instance of MIGProfile, or no GPU.
type TaskGroup struct {
	// Name is the group's name, unique within the job; may be empty for a
	// job with one group.
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Count is the number of tasks (≥ 1).
	Count int `json:"count" yaml:"count"`
	// MinCount makes the group elastic: place at least MinCount tasks, up
	// to Count. Zero means Count (rigid).
	MinCount int `json:"minCount,omitempty" yaml:"minCount,omitempty"`
	// GPUs is the number of whole GPUs per task.
	GPUs int `json:"gpus,omitempty" yaml:"gpus,omitempty"`
	// GPUMilli is a fractional share of one GPU per task, 1..999; a share of
	// 1000 is written as GPUs: 1.
	GPUMilli int `json:"gpuMilli,omitempty" yaml:"gpuMilli,omitempty"`
	// MIGProfile names a MIG profile, e.g. "1g.10gb"; one instance per task.
	MIGProfile string `json:"migProfile,omitempty" yaml:"migProfile,omitempty"`
	// CPUMilli is the CPU per task in milli-cores.
	CPUMilli int64 `json:"cpuMilli,omitempty" yaml:"cpuMilli,omitempty"`
	// MemoryMiB is the memory per task.
	MemoryMiB int64 `json:"memoryMiB,omitempty" yaml:"memoryMiB,omitempty"`
	// Models lists acceptable accelerator models; empty accepts any.
	Models []string `json:"models,omitempty" yaml:"models,omitempty"`
}

// Min returns the minimum number of tasks to place (MinCount, or Count).
func (g *TaskGroup) Min() int {
	if g.MinCount > 0 {
		return g.MinCount
	}
	return g.Count
}

// PerTask returns what one task needs. A MIG instance counts as zero GPU
// here; its share depends on the model (see topology.MIGProfile.Milli).
func (g *TaskGroup) PerTask() Resources {
	return Resources{GPUMilli: int64(g.GPUs)*MilliPerGPU + int64(g.GPUMilli), CPUMilli: g.CPUMilli, MemoryMiB: g.MemoryMiB}
}

// Constraint keeps a job's tasks together at a topology level: "nvlink"
// (one accelerator fabric domain), "host", a network level such as "tor" or
// "spine", or "cluster". Required constraints must hold or the job does not
// place; preferred ones guide the choice.
type Constraint struct {
	Level    string `json:"level" yaml:"level"`
	Required bool   `json:"required,omitempty" yaml:"required,omitempty"`
}

// Job is a gang: task groups placed together, all or nothing (down to each
// group's MinCount for elastic jobs).
type Job struct {
	// ID is unique within a scheduler.
	ID string `json:"id" yaml:"id"`
	// Queue names the leaf queue the job is submitted to.
	Queue string `json:"queue,omitempty" yaml:"queue,omitempty"`
	// Priority orders jobs within a queue; higher goes first and may preempt.
	Priority int32 `json:"priority,omitempty" yaml:"priority,omitempty"`
	// Groups are the task groups; at least one.
	Groups []TaskGroup `json:"groups" yaml:"groups"`
	// Topology lists placement constraints, innermost or outermost in any
	// order.
	Topology []Constraint `json:"topology,omitempty" yaml:"topology,omitempty"`
	// Runtime is the user's estimate of the run time (for backfill); zero
	// means unknown.
	Runtime time.Duration `json:"runtime,omitempty" yaml:"runtime,omitempty"`
	// MinRunTime protects a started job from preemption for this long.
	MinRunTime time.Duration `json:"minRunTime,omitempty" yaml:"minRunTime,omitempty"`
	// MaxPreemptions caps how often the job may be preempted; zero means no
	// cap.
	MaxPreemptions int `json:"maxPreemptions,omitempty" yaml:"maxPreemptions,omitempty"`
	// NonPreemptible jobs are never chosen as victims.
	NonPreemptible bool `json:"nonPreemptible,omitempty" yaml:"nonPreemptible,omitempty"`
	// CheckpointInterval says how often the job checkpoints; zero means it
	// does not (a preemption loses its whole run).
	CheckpointInterval time.Duration `json:"checkpointInterval,omitempty" yaml:"checkpointInterval,omitempty"`
	// Grace is how long the job gets between the signal to stop (a
	// preemption, or a drain of the GPUs it runs on) and the release of
	// its resources, to write a checkpoint: a 70B model's checkpoint needs
	// minutes, a notebook seconds. Zero means the scheduler's default; a
	// scheduler bounds it (gpusched.Config.MaxGrace) and refuses a job
	// that asks for more.
	Grace time.Duration `json:"grace,omitempty" yaml:"grace,omitempty"`
	// MaxTasksPerHost caps how many of the job's tasks (of all its groups
	// together) one placement puts on one host; zero means no cap. A
	// Kubernetes gang whose pods are anti-affine to each other on the
	// hostname has 1: one pod per node. An elastic job grown back after a
	// shrink counts the tasks it kept.
	MaxTasksPerHost int `json:"maxTasksPerHost,omitempty" yaml:"maxTasksPerHost,omitempty"`
}

// Clone returns a deep copy of j: it shares no slice with j (Groups, each
// group's Models, Topology), so changing one never changes the other.
func (j *Job) Clone() Job {
	c := *j
	c.Groups = slices.Clone(j.Groups)
	for i := range c.Groups {
		c.Groups[i].Models = slices.Clone(c.Groups[i].Models)
	}
	c.Topology = slices.Clone(j.Topology)
	return c
}

// Tasks returns the total number of tasks.
func (j *Job) Tasks() int {
	n := 0
	for i := range j.Groups {
		n += j.Groups[i].Count
	}
	return n
}

// MinTasks returns the number of tasks that must place.
func (j *Job) MinTasks() int {
	n := 0
	for i := range j.Groups {
		n += j.Groups[i].Min()
	}
	return n
}

// Demand returns what all tasks together need.
func (j *Job) Demand() Resources {
	var r Resources
	for i := range j.Groups {
		r = r.Add(j.Groups[i].PerTask().Scale(int64(j.Groups[i].Count)))
	}
	return r
}

// MinDemand returns what the minimum set of tasks needs.
func (j *Job) MinDemand() Resources {
	var r Resources
	for i := range j.Groups {
		r = r.Add(j.Groups[i].PerTask().Scale(int64(j.Groups[i].Min())))
	}
	return r
}

// GPUs returns the whole-GPU equivalent of the job's GPU demand (shares
// count as fractions), rounded up.
func (j *Job) GPUs() int { return int((j.Demand().GPUMilli + MilliPerGPU - 1) / MilliPerGPU) }

// ErrInvalid is the sentinel every *FieldError unwraps to.
var ErrInvalid = errors.New("invalid workload spec")

// FieldError names the field of a job that is wrong and why.
type FieldError struct {
	Job   string // the job ID, if known
	Field string // e.g. "groups[1].gpuMilli"
	Msg   string
}

// Error returns "job J: FIELD: MSG".
func (e *FieldError) Error() string {
	s := e.Field + ": " + e.Msg
	if e.Job != "" {
		s = "job " + e.Job + ": " + s
	}
	return s
}

// Unwrap returns ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Limits beyond which a spec is rejected as absurd.
const (
	MaxTasks       = 1 << 20
	MaxGPUsPerTask = 256
)

// Validate checks the job for values no cluster could honour: no groups, a
// count below one, negative resources, a share outside 1..999, more than one
// kind of GPU demand, MinCount above Count, an empty level name, duplicate
// group names. It does not know the cluster: unknown models and levels are
// the placer's to report.
func (j *Job) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Job: j.ID, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if j.ID == "" {
		return bad("id", "empty job ID")
	}
	if len(j.Groups) == 0 {
		return bad("groups", "a job needs at least one task group")
	}
	total := 0
	names := map[string]bool{}
	for i := range j.Groups {
		g := &j.Groups[i]
		p := "groups[" + strconv.Itoa(i) + "]"
		if g.Name != "" || len(j.Groups) > 1 {
			if names[g.Name] {
				return bad(p+".name", "duplicate group name %q", g.Name)
			}
			names[g.Name] = true
		}
		if g.Count < 1 {
			return bad(p+".count", "count %d; a group needs at least one task", g.Count)
		}
		total += g.Count
		if total > MaxTasks {
			return bad(p+".count", "more than %d tasks in one job", MaxTasks)
		}
		if g.MinCount < 0 || g.MinCount > g.Count {
			return bad(p+".minCount", "minCount %d outside 0..count (%d)", g.MinCount, g.Count)
		}
		if g.GPUs < 0 || g.GPUs > MaxGPUsPerTask {
			return bad(p+".gpus", "%d GPUs per task outside 0..%d", g.GPUs, MaxGPUsPerTask)
		}
		if g.GPUMilli < 0 || g.GPUMilli >= MilliPerGPU {
			if g.GPUMilli == MilliPerGPU {
				return bad(p+".gpuMilli", "a 1000 milli share is a whole GPU: write gpus: 1")
			}
			return bad(p+".gpuMilli", "share %d milli outside 1..999", g.GPUMilli)
		}
		kinds := 0
		if g.GPUs > 0 {
			kinds++
		}
		if g.GPUMilli > 0 {
			kinds++
		}
		if g.MIGProfile != "" {
			kinds++
		}
		if kinds > 1 {
			return bad(p, "a task needs whole GPUs, a share or a MIG profile, not several")
		}
		if g.CPUMilli < 0 {
			return bad(p+".cpuMilli", "negative CPU %d", g.CPUMilli)
		}
		if g.MemoryMiB < 0 {
			return bad(p+".memoryMiB", "negative memory %d", g.MemoryMiB)
		}
		for k, m := range g.Models {
			if m == "" {
				return bad(p+".models["+strconv.Itoa(k)+"]", "empty model name")
			}
		}
	}
	for i, c := range j.Topology {
		if c.Level == "" {
			return bad("topology["+strconv.Itoa(i)+"].level", "empty level name")
		}
		for k := 0; k < i; k++ {
			if j.Topology[k].Level == c.Level {
				return bad("topology["+strconv.Itoa(i)+"].level", "level %q named twice", c.Level)
			}
		}
	}
	if j.Runtime < 0 {
		return bad("runtime", "negative runtime %v", j.Runtime)
	}
	if j.MinRunTime < 0 {
		return bad("minRunTime", "negative minimum run time %v", j.MinRunTime)
	}
	if j.MaxPreemptions < 0 {
		return bad("maxPreemptions", "negative cap %d", j.MaxPreemptions)
	}
	if j.CheckpointInterval < 0 {
		return bad("checkpointInterval", "negative interval %v", j.CheckpointInterval)
	}
	if j.Grace < 0 {
		return bad("grace", "negative grace period %v", j.Grace)
	}
	if j.MaxTasksPerHost < 0 {
		return bad("maxTasksPerHost", "negative cap %d", j.MaxTasksPerHost)
	}
	return nil
}
