package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/workload"
)

// Mapping tells the generic readers which column (CSV) or key (JSON Lines)
// holds each field of a job, so users can replay their own logs. Names
// compare case-insensitively. Submit, Duration and one of GPUs or
// GPUMilli are required; the rest are optional.
type Mapping struct {
	// ID holds the job ID; absent, jobs are named "job-LINE".
	ID string
	// Submit holds the submission time, in SubmitFormat.
	Submit string
	// Duration holds the run time, a number of DurationUnit.
	Duration string
	// GPUs holds the job's total number of whole GPUs.
	GPUs string
	// GPUMilli holds a share of one GPU in milli-GPU (1..1000) for jobs of
	// one task; a row with both GPUs and a share uses the share when GPUs
	// is 0.
	GPUMilli string
	// Tasks holds the number of tasks (nodes) the GPUs are spread over.
	Tasks string
	// CPU holds the job's CPU in cores; MemoryMiB its memory in MiB.
	CPU       string
	MemoryMiB string
	// Queue holds the tenant; Priority an integer priority.
	Queue    string
	Priority string
	// Models holds the acceptable GPU models, separated by '|'.
	Models string
	// Type holds the job's type (Job.Type: a class of the speed table).
	Type string
	// SubmitFormat is "seconds" (the default: an offset in seconds),
	// "ms", "unix" (epoch seconds), "unix-ms", "datetime" (the
	// timestamp forms the public traces use, e.g. "2017-10-07 01:12:09"
	// or RFC 3339), or a Go time layout.
	SubmitFormat string
	// DurationUnit is the unit of the Duration field; zero means seconds.
	DurationUnit time.Duration
}

// ParseMapping parses "field=column,…" (e.g.
// "submit=ts,duration=secs,gpus=n,queue=team,submit-format=datetime") into
// a Mapping. Fields: id, submit, duration, gpus, gpu-milli, tasks, cpu,
// memory-mib, queue, priority, models, type (the job type, Job.Type),
// submit-format, duration-unit (a Go duration such as 1ms).
func ParseMapping(s string) (Mapping, error) {
	var m Mapping
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(strings.ToLower(k)), strings.TrimSpace(v)
		if !ok || v == "" {
			return m, fmt.Errorf("trace: mapping: %q is not field=column", kv)
		}
		switch k {
		case "id":
			m.ID = v
		case "submit":
			m.Submit = v
		case "duration":
			m.Duration = v
		case "gpus":
			m.GPUs = v
		case "gpu-milli", "gpumilli":
			m.GPUMilli = v
		case "tasks", "nodes":
			m.Tasks = v
		case "cpu":
			m.CPU = v
		case "memory-mib", "memory":
			m.MemoryMiB = v
		case "queue":
			m.Queue = v
		case "priority":
			m.Priority = v
		case "models", "model":
			m.Models = v
		case "type", "job-type":
			m.Type = v
		case "submit-format":
			m.SubmitFormat = v
		case "duration-unit":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return m, fmt.Errorf("trace: mapping: duration-unit %q is not a positive duration", v)
			}
			m.DurationUnit = d
		default:
			return m, fmt.Errorf("trace: mapping: unknown field %q (known: id, submit, duration, gpus, gpu-milli, tasks, cpu, memory-mib, queue, priority, models, type, submit-format, duration-unit)", k)
		}
	}
	return m, m.validate()
}

func (m Mapping) validate() error {
	switch {
	case m.Submit == "":
		return errors.New("trace: mapping: no submit column")
	case m.Duration == "":
		return errors.New("trace: mapping: no duration column")
	case m.GPUs == "" && m.GPUMilli == "":
		return errors.New("trace: mapping: no gpus (or gpu-milli) column")
	}
	switch m.SubmitFormat {
	case "", "seconds", "ms", "unix", "unix-ms", "datetime":
	default:
		if !strings.ContainsAny(m.SubmitFormat, "0123456789") {
			return fmt.Errorf("trace: mapping: submit format %q is neither a known name nor a Go time layout", m.SubmitFormat)
		}
	}
	return nil
}

func (m Mapping) columns() []string {
	var out []string
	for _, c := range []string{m.ID, m.Submit, m.Duration, m.GPUs, m.GPUMilli, m.Tasks, m.CPU, m.MemoryMiB, m.Queue, m.Priority, m.Models, m.Type} {
		if c != "" {
			out = append(out, strings.ToLower(c))
		}
	}
	return out
}

// mapped converts one record, given a lookup of its fields.
type mapped struct {
	recordState
	m Mapping
}

func (g *mapped) convert(get func(string) string, line int) (Job, bool, *ParseError) {
	m := &g.m
	field := func(name string) string {
		if name == "" {
			return ""
		}
		return get(strings.ToLower(name))
	}
	id := field(m.ID)
	if m.ID == "" {
		id = "job-" + strconv.Itoa(line)
	} else if id == "" {
		return Job{}, false, g.perr(line, m.ID, "empty job ID")
	}
	sv := field(m.Submit)
	var off time.Duration
	switch m.SubmitFormat {
	case "", "seconds", "ms", "unix", "unix-ms":
		v, err := strconv.ParseFloat(sv, 64)
		if err != nil {
			return Job{}, false, g.perr(line, m.Submit, "%q is not a number", sv)
		}
		if strings.HasSuffix(m.SubmitFormat, "ms") {
			v /= 1000
		}
		if v < -maxSpan.Seconds() || v > maxSpan.Seconds() || v != v {
			return Job{}, false, g.perr(line, m.Submit, "time %q out of range", sv)
		}
		t := time.Duration(v * float64(time.Second))
		if strings.HasPrefix(m.SubmitFormat, "unix") {
			var ok bool
			if off, ok = g.offset(time.Unix(0, 0).Add(t)); !ok {
				return Job{}, false, g.perr(line, m.Submit, "time %q more than a century from the epoch", sv)
			}
		} else {
			off = t // plain offsets: Options.Epoch does not apply
		}
	default:
		var ts time.Time
		var err error
		if m.SubmitFormat == "datetime" {
			ts, err = parseStamp(sv, g.loc())
		} else {
			ts, err = time.ParseInLocation(m.SubmitFormat, sv, g.loc())
		}
		if err != nil {
			return Job{}, false, g.perr(line, m.Submit, "%v", err)
		}
		var ok bool
		if off, ok = g.offset(ts); !ok {
			return Job{}, false, g.perr(line, m.Submit, "time %q more than a century from the epoch", sv)
		}
	}
	dv := field(m.Duration)
	dn, err := strconv.ParseFloat(dv, 64)
	if err != nil {
		return Job{}, false, g.perr(line, m.Duration, "%q is not a number", dv)
	}
	unit := m.DurationUnit
	if unit == 0 {
		unit = time.Second
	}
	d, err := secondsValue(dn * unit.Seconds())
	if err != nil {
		return Job{}, false, g.perr(line, m.Duration, "%v", err)
	}
	gpus, milli, tasks := 0, 0, 0
	if v := field(m.GPUs); v != "" {
		if gpus, err = parseCount(v, maxJobGPUs); err != nil {
			return Job{}, false, g.perr(line, m.GPUs, "%v", err)
		}
	}
	if v := field(m.GPUMilli); v != "" && gpus == 0 {
		if milli, err = parseCount(v, workload.MilliPerGPU); err != nil {
			return Job{}, false, g.perr(line, m.GPUMilli, "%v", err)
		}
		if milli == workload.MilliPerGPU {
			gpus, milli = 1, 0
		}
	}
	if v := field(m.Tasks); v != "" {
		if tasks, err = parseCount(v, workload.MaxTasks); err != nil {
			return Job{}, false, g.perr(line, m.Tasks, "%v", err)
		}
	}
	var cpu, mem int64
	if v := field(m.CPU); v != "" {
		c, err := strconv.ParseFloat(v, 64)
		if err != nil || c < 0 || c > 1e9 {
			return Job{}, false, g.perr(line, m.CPU, "%q is not a CPU count", v)
		}
		cpu = int64(c * 1000)
	}
	if v := field(m.MemoryMiB); v != "" {
		mm, err := strconv.ParseFloat(v, 64)
		if err != nil || mm < 0 || mm > 1e12 {
			return Job{}, false, g.perr(line, m.MemoryMiB, "%q is not a memory size", v)
		}
		mem = int64(mm)
	}
	var prio int64
	if v := field(m.Priority); v != "" {
		if prio, err = strconv.ParseInt(v, 10, 32); err != nil {
			return Job{}, false, g.perr(line, m.Priority, "%q is not a 32-bit integer", v)
		}
	}
	if d == 0 {
		g.stats.Filter("zero duration")
		return Job{}, false, nil
	}
	if gpus == 0 && milli == 0 && !g.opt.KeepCPUOnly {
		g.stats.Filter("no GPU")
		return Job{}, false, nil
	}
	j := g.opt.Shape.job(id, field(m.Queue), gpus, tasks, cpu, mem)
	if milli > 0 {
		tg := &j.Groups[0]
		tg.GPUMilli = milli
		if cpu == 0 {
			tg.CPUMilli = g.opt.Shape.CPUMilliPerGPU * int64(milli) / workload.MilliPerGPU
		}
		if mem == 0 {
			tg.MemoryMiB = g.opt.Shape.MemoryMiBPerGPU * int64(milli) / workload.MilliPerGPU
		}
		if tasks > 1 {
			return Job{}, false, g.perr(line, m.Tasks, "a GPU share (%d milli) is for one task, not %d", milli, tasks)
		}
	}
	j.Priority = int32(prio)
	if v := field(m.Models); v != "" {
		for _, md := range strings.Split(v, "|") {
			if md = strings.TrimSpace(md); md != "" {
				for i := range j.Groups {
					j.Groups[i].Models = append(j.Groups[i].Models, md)
				}
			}
		}
	}
	return Job{Spec: j, Submit: off, Duration: d, Line: line, Type: field(m.Type)}, true, nil
}

// CSV reads a CSV file with a header row through a Mapping.
type CSV struct {
	mapped
	t *csvTable
}

// NewCSV reads the header of r and checks that every column the mapping
// names is there; with Options.Strict, that every column is mapped.
// Without it, the columns the mapping does not name are listed in
// Stats.IgnoredColumns.
func NewCSV(r io.Reader, m Mapping, o Options) (*CSV, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	c := &CSV{mapped: mapped{m: m}}
	c.init(o)
	t, err := newCSVTable(r, &c.recordState, m.columns(), nil)
	if err != nil {
		return nil, err
	}
	c.t = t
	return c, nil
}

// Next returns the next job, io.EOF after the last, or a *ParseError.
func (c *CSV) Next() (Job, error) {
	return c.t.nextJob(func(rec []string, line int) (Job, bool, *ParseError) {
		return c.convert(func(n string) string { return c.t.get(rec, n) }, line)
	})
}

// JSONL reads JSON Lines (one object per line) through a Mapping. Values
// may be JSON strings or numbers; blank lines are ignored. Keys the
// mapping names must be present (a missing one is a malformed record);
// with Options.Strict, keys it does not name are malformed too, and
// without it they are listed in Stats.IgnoredColumns (lower-case, in the
// order first seen; sorted within a record).
type JSONL struct {
	mapped
	sc      *bufio.Scanner
	line    int
	cols    []string
	ignored map[string]bool // unknown keys seen, lower-case
	err     error
}

// NewJSONL returns a reader of the JSON Lines in r.
func NewJSONL(r io.Reader, m Mapping, o Options) (*JSONL, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	j := &JSONL{mapped: mapped{m: m}, sc: bufio.NewScanner(r), cols: m.columns(), ignored: map[string]bool{}}
	j.sc.Buffer(make([]byte, 64<<10), 16<<20)
	j.init(o)
	return j, nil
}

// Next returns the next job, io.EOF after the last, or a *ParseError.
func (j *JSONL) Next() (Job, error) {
	if j.err != nil {
		return Job{}, j.err
	}
	for j.sc.Scan() {
		j.line++
		b := bytes.TrimSpace(j.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		job, keep, pe := j.parse(b)
		if pe == nil {
			if !keep {
				continue
			}
			j.stats.Read++
			return job, nil
		}
		if err := j.bad(pe); err != nil {
			return Job{}, err
		}
	}
	if err := j.sc.Err(); err != nil {
		j.err = j.perr(j.line+1, "", "%v", err)
		return Job{}, j.err
	}
	j.err = io.EOF
	return Job{}, io.EOF
}

func (j *JSONL) parse(b []byte) (Job, bool, *ParseError) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return Job{}, false, j.perr(j.line, "", "JSON: %v", err)
	}
	vals := make(map[string]string, len(obj))
	for k, raw := range obj {
		k = strings.ToLower(k)
		if raw[0] == '"' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return Job{}, false, j.perr(j.line, k, "%v", err)
			}
			vals[k] = strings.TrimSpace(s)
		} else if string(raw) != "null" {
			vals[k] = string(raw)
		}
	}
	for _, c := range j.cols {
		if _, ok := vals[c]; !ok {
			return Job{}, false, j.perr(j.line, c, "missing key (or null)")
		}
	}
	var unknown []string
	for k := range obj {
		if lk := strings.ToLower(k); !slices.Contains(j.cols, lk) && (j.opt.Strict || !j.ignored[lk]) {
			unknown = append(unknown, lk)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if j.opt.Strict {
			return Job{}, false, j.perr(j.line, unknown[0], "unknown key")
		}
		for _, k := range slices.Compact(unknown) {
			j.ignored[k] = true
			j.stats.IgnoredColumns = append(j.stats.IgnoredColumns, k)
		}
	}
	return j.convert(func(n string) string { return vals[n] }, j.line)
}
