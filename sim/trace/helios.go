package trace

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SlurmCSV reads the job logs of the Helios (SenseTime, SC'21:
// S-Lab-System-Group/HeliosData cluster_log.csv) and Acme (Shanghai AI
// Lab, NSDI'24: InternLM/AcmeTrace trace_seren.csv and trace_kalos.csv)
// traces, which share a Slurm-derived schema: job_id, user, gpu_num,
// cpu_num, node_num, state, submit_time, start_time, end_time, duration
// (seconds) and queue (seconds waited); Helios adds vc, Acme adds type
// and gpu_time, and Kalos mem_per_pod_GB, shared_mem_per_pod, fail_time
// and stop_time.
//
// Each row becomes a job of gpu_num GPUs over node_num tasks (see Shape),
// with cpu_num cores and, where given, mem_per_pod_GB per task; Queue is
// the vc (Helios) or type (Acme) column unless Options.QueueFrom names
// another. Duration is the duration column, or end_time − start_time when
// that is empty. Jobs that never ran (zero duration) are filtered out,
// and so are CPU-only jobs unless Options.KeepCPUOnly. The state column
// is not used: a cancelled or failed job held its GPUs for its duration
// all the same.
type SlurmCSV struct {
	recordState
	t     *csvTable
	queue string
}

var slurmRequired = []string{"job_id", "gpu_num", "submit_time"}
var slurmOptional = []string{"user", "vc", "cpu_num", "node_num", "state", "start_time", "end_time", "duration", "queue",
	"type", "gpu_time", "mem_per_pod_gb", "shared_mem_per_pod", "fail_time", "stop_time"}

// NewHeliosCSV returns a reader of a Helios cluster_log.csv.
func NewHeliosCSV(r io.Reader, o Options) (*SlurmCSV, error) { return newSlurm(r, o, "vc") }

// NewAcmeCSV returns a reader of an Acme trace_seren.csv or
// trace_kalos.csv.
func NewAcmeCSV(r io.Reader, o Options) (*SlurmCSV, error) { return newSlurm(r, o, "type") }

func newSlurm(r io.Reader, o Options, queue string) (*SlurmCSV, error) {
	s := &SlurmCSV{}
	s.init(o)
	if o.QueueFrom != "" {
		queue = strings.ToLower(o.QueueFrom)
	}
	// A queue column of the user's choice is read, hence known.
	t, err := newCSVTable(r, &s.recordState, slurmRequired, append(slices.Clone(slurmOptional), queue))
	if err != nil {
		return nil, err
	}
	if !t.has(queue) {
		return nil, s.perr(1, queue, "missing column for the queue (header has %s)", strings.Join(t.names, ", "))
	}
	if !t.has("duration") && !(t.has("start_time") && t.has("end_time")) {
		return nil, s.perr(1, "duration", "missing column: need duration, or start_time and end_time")
	}
	s.t, s.queue = t, queue
	return s, nil
}

// Next returns the next job, io.EOF after the last, or a *ParseError.
func (s *SlurmCSV) Next() (Job, error) {
	return s.t.nextJob(s.parse)
}

func (s *SlurmCSV) parse(rec []string, line int) (Job, bool, *ParseError) {
	t := s.t
	id := t.get(rec, "job_id")
	if id == "" {
		return Job{}, false, s.perr(line, "job_id", "empty job ID")
	}
	sub, err := parseStamp(t.get(rec, "submit_time"), s.loc())
	if err != nil {
		return Job{}, false, t.fieldErr(line, "submit_time", err)
	}
	gpus, err := parseCount(t.get(rec, "gpu_num"), maxJobGPUs)
	if err != nil {
		return Job{}, false, t.fieldErr(line, "gpu_num", err)
	}
	nodes := 0
	if v := t.get(rec, "node_num"); v != "" {
		if nodes, err = parseCount(v, 1<<20); err != nil {
			return Job{}, false, t.fieldErr(line, "node_num", err)
		}
	}
	var cpu, mem int64
	if v := t.get(rec, "cpu_num"); v != "" {
		c, err := strconv.ParseFloat(v, 64)
		if err != nil || c < 0 || c > 1e9 {
			return Job{}, false, s.perr(line, "cpu_num", "%q is not a CPU count", v)
		}
		cpu = int64(c * 1000)
	}
	if v := t.get(rec, "mem_per_pod_gb"); v != "" {
		m, err := strconv.ParseFloat(v, 64)
		if err != nil || m < 0 || m > 1e9 {
			return Job{}, false, s.perr(line, "mem_per_pod_gb", "%q is not a memory size", v)
		}
		mem = int64(m*1024) * int64(max(nodes, 1))
	}
	var d time.Duration
	if v := t.get(rec, "duration"); v != "" {
		if d, err = parseSeconds(v); err != nil {
			return Job{}, false, t.fieldErr(line, "duration", err)
		}
	} else if st, et := t.get(rec, "start_time"), t.get(rec, "end_time"); st != "" && et != "" {
		a, err := parseStamp(st, s.loc())
		if err != nil {
			return Job{}, false, t.fieldErr(line, "start_time", err)
		}
		b, err := parseStamp(et, s.loc())
		if err != nil {
			return Job{}, false, t.fieldErr(line, "end_time", err)
		}
		if b.Before(a) {
			return Job{}, false, s.perr(line, "end_time", "ends before it starts: negative duration")
		}
		if d = b.Sub(a); d >= maxSpan {
			return Job{}, false, s.perr(line, "end_time", "runs for more than a century")
		}
	}
	q := t.get(rec, s.queue)
	off, ok := s.offset(sub)
	if !ok {
		return Job{}, false, s.perr(line, "submit_time", "more than a century from the epoch")
	}
	if d == 0 {
		s.stats.Filter("zero duration")
		return Job{}, false, nil
	}
	if gpus == 0 && !s.opt.KeepCPUOnly {
		s.stats.Filter("no GPU")
		return Job{}, false, nil
	}
	return Job{Spec: s.opt.Shape.job(id, q, gpus, nodes, cpu, mem), Submit: off, Duration: d, Line: line}, true, nil
}
