package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/workload"
)

// The openb pod lists of the Alibaba GPU cluster trace
// (cluster-trace-gpu-v2023; Weng et al., USENIX ATC'23, "Beware of
// Fragmentation") come in two shapes, both read by OpenB:
//
//	name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
//	name,cpu_milli,memory_mib,num_gpu,gpu_milli                      (the multigpu lists)
//
// Columns are found by their header names, in any order.

// Column names of the openb pod lists.
const (
	OpenBName          = "name"
	OpenBCPUMilli      = "cpu_milli"
	OpenBMemoryMiB     = "memory_mib"
	OpenBNumGPU        = "num_gpu"
	OpenBGPUMilli      = "gpu_milli"
	OpenBGPUSpec       = "gpu_spec"
	OpenBQoS           = "qos"
	OpenBPodPhase      = "pod_phase"
	OpenBCreationTime  = "creation_time"
	OpenBDeletionTime  = "deletion_time"
	OpenBScheduledTime = "scheduled_time"
)

// openbRequired are the columns every openb pod list has.
var openbRequired = []string{OpenBName, OpenBCPUMilli, OpenBMemoryMiB, OpenBNumGPU, OpenBGPUMilli}

// OpenBOptions configure an OpenB reader. The zero value reports the first
// malformed row as an error and reads past columns it does not know,
// listing them in Stats.IgnoredColumns.
type OpenBOptions struct {
	// File names the source in errors; may be empty.
	File string
	// SkipMalformed skips malformed rows and counts them in Stats (by the
	// column at fault, "record" for whole-row problems) instead of
	// returning a *ParseError. Header problems are always errors.
	SkipMalformed bool
	// Strict rejects a header with a column that is not one of the
	// openb columns, so that a misspelt optional column (gpuspec for
	// gpu_spec drops every GPU-model constraint) is an error. Without it
	// such columns are read past and listed in Stats.IgnoredColumns.
	Strict bool
	// QoSPriority, when not nil, maps the qos column to Spec.Priority
	// (class names compare case-insensitively), e.g. OpenBQoSPriorities;
	// the list must then have a qos column, and a row whose class the map
	// does not name is malformed. Nil reads past qos: every job has
	// priority 0.
	QoSPriority map[string]int32
}

// OpenBQoSPriorities is a mapping of the openb QoS classes onto
// priorities for OpenBOptions.QoSPriority, higher first: Kubernetes'
// Guaranteed 3, Alibaba's latency-sensitive LS 2, Burstable 1 and
// best-effort BE 0. With it, preemption lets latency-sensitive pods take
// GPUs from best-effort ones.
var OpenBQoSPriorities = map[string]int32{"Guaranteed": 3, "LS": 2, "Burstable": 1, "BE": 0}

// OpenB streams the jobs of an openb pod list. Each row becomes one job of
// one task group of one task:
//
//   - num_gpu = 0 and gpu_milli = 0: a CPU-only task;
//   - num_gpu = 1 and 0 < gpu_milli < 1000: a share of GPUMilli of one GPU;
//   - num_gpu = n ≥ 1 and gpu_milli = 1000: n whole GPUs;
//   - cpu_milli and memory_mib: the task's CPU (milli-cores) and memory;
//   - gpu_spec "A|B": acceptable models A and B (empty or "nan": any);
//     repeated names count once; ignored for CPU-only tasks, which run
//     on any host;
//   - creation_time: Submit, in seconds from the trace start;
//   - deletion_time − creation_time: Duration. When either time is
//     missing (the multigpu lists have no times) the job has Submit 0 (or
//     its creation time) and Duration 0, "unknown".
//
// Spec.ID is the name column. qos is read past unless
// OpenBOptions.QoSPriority maps its classes to priorities (the trace's
// QoS classes are not priorities by themselves); pod_phase and
// scheduled_time are read past: a pod's phase or scheduling time
// describes what the production scheduler did, not what the job asks for.
//
// These rows are malformed (a *ParseError naming the column, or a counted
// skip with SkipMalformed): an empty or repeated name; a value that is not
// a whole number (a trailing ".0" is accepted); negative CPU, memory, GPU
// count, GPU milli or times; more than workload.MaxGPUsPerTask GPUs;
// gpu_milli above 1000; num_gpu = 0 with gpu_milli > 0, or num_gpu ≥ 1
// with gpu_milli = 0 (the two disagree on whether the task uses a GPU);
// num_gpu > 1 with gpu_milli < 1000 (a share of several GPUs, which the
// trace's own simulator rejects too); deletion_time before creation_time;
// a row with more or fewer fields than the header.
type OpenB struct {
	opt   OpenBOptions
	qos   map[string]int32 // QoSPriority with lower-case keys
	r     *csv.Reader
	col   [len(openbColumns)]int // index of each known column, -1 if absent
	nf    int                    // fields per row (header width)
	names map[string]int         // line of each name seen, for duplicates
	line  int                    // line of the last record read
	stats Stats
}

// openbColumns lists every known column; OpenB.col is indexed like it.
var openbColumns = [...]string{
	OpenBName, OpenBCPUMilli, OpenBMemoryMiB, OpenBNumGPU, OpenBGPUMilli,
	OpenBGPUSpec, OpenBQoS, OpenBPodPhase, OpenBCreationTime, OpenBDeletionTime, OpenBScheduledTime,
}

const (
	obName = iota
	obCPU
	obMem
	obNumGPU
	obGPUMilli
	obSpec
	obQoS
	obPhase
	obCreation
	obDeletion
	obScheduled
)

// NewOpenB reads the header of r and returns a reader of its rows. The
// header must name the five columns name, cpu_milli, memory_mib, num_gpu
// and gpu_milli; names compare case-insensitively after trimming spaces
// and a byte-order mark.
func NewOpenB(r io.Reader, opt OpenBOptions) (*OpenB, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	o := &OpenB{opt: opt, r: cr, names: map[string]int{}}
	for i := range o.col {
		o.col[i] = -1
	}
	hdr, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, o.perr(1, "", "empty input: no header row")
	}
	if err != nil {
		return nil, o.csvErr(err)
	}
	o.nf = len(hdr)
	seen := map[string]bool{}
	for i, h := range hdr {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if h != "" && seen[h] {
			return nil, o.perr(1, h, "column named twice in the header")
		}
		seen[h] = true
		known := false
		for k, name := range openbColumns {
			if h == name {
				o.col[k], known = i, true
			}
		}
		if !known {
			if opt.Strict {
				return nil, o.perr(1, h, "unknown column (openb pod lists have %s)", strings.Join(openbColumns[:], ", "))
			}
			o.stats.IgnoredColumns = append(o.stats.IgnoredColumns, h)
		}
	}
	for _, want := range openbRequired {
		if !seen[want] {
			return nil, o.perr(1, want, "missing column (header has %s)", strings.Join(openbLower(hdr), ", "))
		}
	}
	if opt.QoSPriority != nil {
		if !seen[OpenBQoS] {
			return nil, o.perr(1, OpenBQoS, "QoS priorities asked for, but the header has no qos column (it has %s)", strings.Join(openbLower(hdr), ", "))
		}
		o.qos = make(map[string]int32, len(opt.QoSPriority))
		for k, v := range opt.QoSPriority {
			o.qos[strings.ToLower(k)] = v
		}
	}
	return o, nil
}

func openbLower(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(v, "\ufeff")))
	}
	return out
}

// Stats returns what the reader has done so far.
func (o *OpenB) Stats() Stats { return o.stats }

// Next returns the next job, io.EOF after the last one, or a *ParseError
// for a malformed row (unless OpenBOptions.SkipMalformed). After a
// *ParseError the reader may be asked for the next row.
func (o *OpenB) Next() (Job, error) {
	for {
		rec, err := o.r.Read()
		if errors.Is(err, io.EOF) {
			return Job{}, io.EOF
		}
		var pe *ParseError
		line := 0
		if err != nil {
			var ce *csv.ParseError
			if !errors.As(err, &ce) {
				// The stream itself failed: nothing more can be read.
				return Job{}, o.perr(o.line+1, "", "reading: %v", err)
			}
			pe = o.csvErr(err)
		} else {
			line, _ = o.r.FieldPos(0)
			o.line = line
			if len(rec) != o.nf {
				pe = o.perr(line, "", "%d fields, the header has %d", len(rec), o.nf)
			} else {
				var j Job
				j, pe = o.row(rec, line)
				if pe == nil {
					o.stats.Read++
					return j, nil
				}
			}
		}
		if !o.opt.SkipMalformed {
			return Job{}, pe
		}
		reason := pe.Field
		if reason == "" {
			reason = "record"
		}
		o.stats.Skip(reason, pe)
	}
}

// ReadOpenB reads every job of an openb pod list.
func ReadOpenB(r io.Reader, opt OpenBOptions) ([]Job, Stats, error) {
	o, err := NewOpenB(r, opt)
	if err != nil {
		return nil, Stats{}, err
	}
	var jobs []Job
	for {
		j, err := o.Next()
		if errors.Is(err, io.EOF) {
			return jobs, o.Stats(), nil
		}
		if err != nil {
			return jobs, o.Stats(), err
		}
		jobs = append(jobs, j)
	}
}

func (o *OpenB) field(rec []string, c int) string {
	if o.col[c] < 0 {
		return ""
	}
	return strings.TrimSpace(rec[o.col[c]])
}

// row turns one record into a job.
func (o *OpenB) row(rec []string, line int) (Job, *ParseError) {
	name := o.field(rec, obName)
	if name == "" {
		return Job{}, o.perr(line, OpenBName, "empty name")
	}
	if first, dup := o.names[name]; dup {
		return Job{}, o.perr(line, OpenBName, "name %q already used on line %d", name, first)
	}
	num := func(c int, limit int64) (int64, *ParseError) {
		v, err := openbWhole(o.field(rec, c), limit)
		if err != nil {
			return 0, o.perr(line, openbColumns[c], "%v", err)
		}
		return v, nil
	}
	cpu, pe := num(obCPU, openbMaxAmount)
	if pe != nil {
		return Job{}, pe
	}
	mem, pe := num(obMem, openbMaxAmount)
	if pe != nil {
		return Job{}, pe
	}
	ngpu, pe := num(obNumGPU, workload.MaxGPUsPerTask)
	if pe != nil {
		return Job{}, pe
	}
	gmilli, pe := num(obGPUMilli, workload.MilliPerGPU)
	if pe != nil {
		return Job{}, pe
	}
	g := workload.TaskGroup{Count: 1, CPUMilli: cpu, MemoryMiB: mem}
	switch {
	case ngpu == 0 && gmilli == 0:
		// CPU-only.
	case ngpu == 0:
		return Job{}, o.perr(line, OpenBGPUMilli, "gpu_milli %d with num_gpu 0: does the task use a GPU or not?", gmilli)
	case gmilli == 0:
		return Job{}, o.perr(line, OpenBGPUMilli, "gpu_milli 0 with num_gpu %d: does the task use a GPU or not?", ngpu)
	case gmilli == workload.MilliPerGPU:
		g.GPUs = int(ngpu)
	case ngpu == 1:
		g.GPUMilli = int(gmilli)
	default:
		return Job{}, o.perr(line, OpenBGPUMilli, "a share of %d milli on each of %d GPUs; shares are of one GPU (num_gpu 1)", gmilli, ngpu)
	}
	if g.GPUs > 0 || g.GPUMilli > 0 {
		g.Models = openbSpec(o.field(rec, obSpec))
	}
	j := Job{Spec: workload.Job{ID: name, Groups: []workload.TaskGroup{g}}, Line: line}
	if o.qos != nil {
		q := o.field(rec, obQoS)
		p, ok := o.qos[strings.ToLower(q)]
		if !ok {
			return Job{}, o.perr(line, OpenBQoS, "QoS class %q has no priority (the mapping names %s)", q, strings.Join(qosNames(o.opt.QoSPriority), ", "))
		}
		j.Spec.Priority = p
	}
	cs, ds := o.field(rec, obCreation), o.field(rec, obDeletion)
	var created, deleted int64
	if cs != "" {
		if created, pe = num(obCreation, openbMaxSeconds); pe != nil {
			return Job{}, pe
		}
		j.Submit = time.Duration(created) * time.Second
	}
	if ds != "" {
		if deleted, pe = num(obDeletion, openbMaxSeconds); pe != nil {
			return Job{}, pe
		}
	}
	if cs != "" && ds != "" {
		if deleted < created {
			return Job{}, o.perr(line, OpenBDeletionTime, "deletion_time %d before creation_time %d", deleted, created)
		}
		j.Duration = time.Duration(deleted-created) * time.Second
	}
	if st := o.field(rec, obScheduled); st != "" {
		if _, pe = num(obScheduled, openbMaxSeconds); pe != nil {
			return Job{}, pe
		}
	}
	o.names[name] = line
	return j, nil
}

// qosNames returns the classes of a QoS mapping, sorted.
func qosNames(m map[string]int32) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// openbMaxSeconds bounds openb times so that they fit a time.Duration.
const openbMaxSeconds = int64(1<<63-1) / int64(time.Second)

// openbMaxAmount bounds CPU (milli-cores) and memory (MiB) per task: the
// limits topology accepts for a whole host.
const openbMaxAmount = 1 << 40

// openbWhole parses a non-negative whole number no larger than limit.
// "8000.0" is accepted (pandas writes integer columns with missing values
// as floats); "8000.5", "-1", "1e3" and "" are not.
func openbWhole(s string, limit int64) (int64, error) {
	if s == "" {
		return 0, errors.New("empty value")
	}
	t := s
	if i := strings.IndexByte(t, '.'); i >= 0 {
		if strings.Trim(t[i+1:], "0") != "" {
			return 0, fmt.Errorf("%q is not a whole number", s)
		}
		t = t[:i]
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("negative value %d", v)
	}
	if v > limit {
		return 0, fmt.Errorf("%d is above the limit %d", v, limit)
	}
	return v, nil
}

// openbSpec splits "A|B" into model names, dropping empty parts, "nan" and
// repeats.
func openbSpec(s string) []string {
	if s == "" || strings.EqualFold(s, "nan") {
		return nil
	}
	var out []string
	for _, m := range strings.Split(s, "|") {
		m = strings.TrimSpace(m)
		if m == "" || strings.EqualFold(m, "nan") {
			continue
		}
		dup := false
		for _, p := range out {
			if p == m {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, m)
		}
	}
	return out
}

func (o *OpenB) perr(line int, field, format string, args ...any) *ParseError {
	return &ParseError{File: o.opt.File, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (o *OpenB) csvErr(err error) *ParseError {
	var ce *csv.ParseError
	if errors.As(err, &ce) {
		o.line = ce.Line
		return o.perr(ce.Line, "", "CSV syntax at column %d: %v", ce.Column, ce.Err)
	}
	return o.perr(o.line+1, "", "reading: %v", err)
}
