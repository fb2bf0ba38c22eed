package trace

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/workload"
)

// Options configure the Philly, Helios, Acme and generic readers. The zero
// value is usable: errors on malformed records, 8 GPUs per task at most,
// no CPU or memory demand, timestamps in UTC, the first record's time as
// the epoch.
type Options struct {
	// File names the source in errors; may be empty.
	File string
	// SkipMalformed makes a reader skip malformed records and count them
	// in Stats instead of returning a *ParseError.
	SkipMalformed bool
	// Shape turns a job's GPU count into task groups.
	Shape Shape
	// Epoch is the instant Submit offsets count from for formats with
	// absolute timestamps. Zero means the first record's submission time;
	// records earlier than it then get negative offsets, which Rebase (and
	// the simulator) shifts so that the earliest job arrives at zero.
	Epoch time.Time
	// Location interprets timestamps that carry no zone; nil means UTC.
	Location *time.Location
	// KeepCPUOnly keeps jobs that request no GPU; by default they are
	// filtered out (and counted in Stats.Filtered).
	KeepCPUOnly bool
	// QueueFrom names the column (or JSON key) whose value becomes
	// Spec.Queue; empty means the format's default: the virtual cluster
	// for Philly and Helios, the workload type for Acme.
	QueueFrom string
	// Strict rejects a header with columns the reader does not know (for
	// JSON Lines, records with keys the mapping does not name), so a
	// misnamed column is an error rather than silently unused. Without
	// it, the CSV readers list such columns, and the JSON Lines reader
	// such keys, in Stats.IgnoredColumns. The Philly JSON reader reads
	// past unknown keys either way.
	Strict bool
}

// Shape says how a job's GPU count becomes task groups, and what each
// task needs besides GPUs.
//
// A job of n GPUs on k nodes (when the trace says k and k divides n with
// n/k ≤ MaxGPUsPerTask) becomes k tasks of n/k GPUs. Otherwise, n ≤
// MaxGPUsPerTask becomes one task of n GPUs, and a larger n becomes
// n/MaxGPUsPerTask tasks of MaxGPUsPerTask GPUs plus, when n is not a
// multiple, one task of the remainder (two groups, "main" and "rest").
// A job of 0 GPUs is CPU-only: k tasks (one if unknown).
type Shape struct {
	// MaxGPUsPerTask is the most GPUs one task (one host) takes; zero
	// means 8.
	MaxGPUsPerTask int
	// CPUMilliPerGPU and MemoryMiBPerGPU are given to each task per GPU
	// it holds when the trace says nothing about CPU or memory.
	CPUMilliPerGPU  int64
	MemoryMiBPerGPU int64
	// Topology is copied into every job of more than one task, e.g.
	// [{Level: "tor"}] to prefer keeping gangs inside one ToR.
	Topology []workload.Constraint
}

func (s Shape) maxPerTask() int {
	if s.MaxGPUsPerTask <= 0 {
		return 8
	}
	return s.MaxGPUsPerTask
}

// Groups returns the task groups of a job of gpus GPUs over nodes nodes
// (0: unknown), with cpuMilli CPU and memMiB memory in total (0: use the
// per-GPU defaults). gpus and nodes must not be negative.
func (s Shape) Groups(gpus, nodes int, cpuMilli, memMiB int64) []workload.TaskGroup {
	per := s.maxPerTask()
	split := func(total int64, part, whole int) int64 {
		if whole <= 0 {
			return 0
		}
		return total * int64(part) / int64(whole)
	}
	task := func(count, g int) workload.TaskGroup {
		tg := workload.TaskGroup{Count: count, GPUs: g}
		if cpuMilli > 0 {
			tg.CPUMilli = split(cpuMilli, g, gpus)
		} else {
			tg.CPUMilli = s.CPUMilliPerGPU * int64(g)
		}
		if memMiB > 0 {
			tg.MemoryMiB = split(memMiB, g, gpus)
		} else {
			tg.MemoryMiB = s.MemoryMiBPerGPU * int64(g)
		}
		return tg
	}
	switch {
	case gpus == 0:
		n := max(nodes, 1)
		return []workload.TaskGroup{{Count: n, CPUMilli: split(cpuMilli, 1, n), MemoryMiB: split(memMiB, 1, n)}}
	case nodes > 0 && gpus%nodes == 0 && gpus/nodes <= per:
		return []workload.TaskGroup{task(nodes, gpus/nodes)}
	case gpus <= per:
		return []workload.TaskGroup{task(1, gpus)}
	case gpus%per == 0:
		return []workload.TaskGroup{task(gpus/per, per)}
	default:
		m, r := task(gpus/per, per), task(1, gpus%per)
		m.Name, r.Name = "main", "rest"
		return []workload.TaskGroup{m, r}
	}
}

// job builds a Job from the parts every format has.
func (s Shape) job(id, queue string, gpus, nodes int, cpuMilli, memMiB int64) workload.Job {
	j := workload.Job{ID: id, Queue: queue, Groups: s.Groups(gpus, nodes, cpuMilli, memMiB)}
	if len(s.Topology) > 0 && j.Tasks() > 1 {
		j.Topology = slices.Clone(s.Topology)
	}
	return j
}

// StatsReader is a Reader that also reports what it read, skipped and
// filtered. Every reader of this package implements it.
type StatsReader interface {
	Reader
	Stats() Stats
}

// Collect reads every job of r. It stops at the first error other than
// io.EOF and returns the jobs read so far with it.
func Collect(r Reader) ([]Job, error) {
	var jobs []Job
	for {
		j, err := r.Next()
		if errors.Is(err, io.EOF) {
			return jobs, nil
		}
		if err != nil {
			return jobs, err
		}
		jobs = append(jobs, j)
	}
}

// Rebase sorts jobs by (Submit, Line, ID), stably, and shifts every Submit
// so that the earliest is zero. It returns the shift that was subtracted.
// Traces whose rows are not in submission order (the processed Philly CSV
// is one) need it before replay.
func Rebase(jobs []Job) time.Duration {
	if len(jobs) == 0 {
		return 0
	}
	slices.SortStableFunc(jobs, func(a, b Job) int {
		return cmp.Or(cmp.Compare(a.Submit, b.Submit), cmp.Compare(a.Line, b.Line), strings.Compare(a.Spec.ID, b.Spec.ID))
	})
	shift := jobs[0].Submit
	if shift != 0 {
		for i := range jobs {
			jobs[i].Submit -= shift
		}
	}
	return shift
}

// recordState is embedded by readers: options, counters, and the epoch.
type recordState struct {
	opt   Options
	stats Stats
	epoch time.Time
	haveE bool
}

func (b *recordState) init(o Options) {
	b.opt = o
	if !o.Epoch.IsZero() {
		b.epoch, b.haveE = o.Epoch, true
	}
}

// Stats returns what the reader has done so far.
func (b *recordState) Stats() Stats { return b.stats }

func (b *recordState) perr(line int, field, format string, args ...any) *ParseError {
	return &ParseError{File: b.opt.File, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// bad either returns err (errors mode) or counts it and returns nil (skip
// mode), in which case the caller moves on to the next record.
func (b *recordState) bad(err *ParseError) error {
	if !b.opt.SkipMalformed {
		return err
	}
	reason := err.Field
	if reason == "" {
		reason = "record"
	}
	b.stats.Skip(reason, err)
	return nil
}

// maxSpan bounds offsets and durations: a century.
const maxSpan = 100 * 365 * 24 * time.Hour

// offset turns an absolute submission time into an offset from the epoch;
// false when it is more than a century away.
func (b *recordState) offset(t time.Time) (time.Duration, bool) {
	if !b.haveE {
		b.epoch, b.haveE = t, true
	}
	d := t.Sub(b.epoch)
	return d, d > -maxSpan && d < maxSpan
}

func (b *recordState) loc() *time.Location {
	if b.opt.Location != nil {
		return b.opt.Location
	}
	return time.UTC
}

var stampLayouts = []string{
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05",
	time.RFC3339Nano,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05 MST",
}

// parseStamp parses the timestamp forms the public traces use.
func parseStamp(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range stampLayouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %q not in a known form (e.g. 2017-10-07 01:12:09)", s)
}

// parseSeconds parses a non-negative number of seconds ("66.0", "3600").
func parseSeconds(s string) (time.Duration, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number of seconds", s)
	}
	return secondsValue(v)
}

func secondsValue(v float64) (time.Duration, error) {
	switch {
	case v != v:
		return 0, errors.New("NaN seconds")
	case v < 0:
		return 0, fmt.Errorf("negative duration %gs", v)
	case v >= maxSpan.Seconds():
		return 0, fmt.Errorf("%gs is out of range (more than a century)", v)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// parseCount parses a non-negative integer count, accepting "8.0".
func parseCount(s string, limit int) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int64(f)) {
			return 0, fmt.Errorf("%q is not a whole number", s)
		}
		if f < 0 || f > float64(limit) {
			return 0, fmt.Errorf("%s outside 0..%d", s, limit)
		}
		n = int(f)
	}
	if n < 0 || n > limit {
		return 0, fmt.Errorf("%d outside 0..%d", n, limit)
	}
	return n, nil
}

// maxJobGPUs bounds the GPUs one trace job may ask for.
const maxJobGPUs = workload.MaxTasks
