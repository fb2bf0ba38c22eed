package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
)

// PhillyCSV reads the processed Philly trace (the Sia artifact's
// philly.csv): columns timestamp (submission, "2017-10-09 07:01:55"),
// duration (seconds), num_gpus, gpu_time and cluster (the virtual
// cluster, which becomes Spec.Queue). Rows need not be in time order:
// with a zero Options.Epoch, offsets count from the first row and may be
// negative; Rebase makes them count from the earliest. Job IDs are
// "philly-LINE". Jobs of zero duration are filtered out, and so are jobs
// of zero GPUs unless Options.KeepCPUOnly.
type PhillyCSV struct {
	recordState
	t *csvTable
}

var phillyCols = []string{"timestamp", "duration", "num_gpus", "cluster"}

// NewPhillyCSV reads the header of r and returns a reader of its rows.
func NewPhillyCSV(r io.Reader, o Options) (*PhillyCSV, error) {
	p := &PhillyCSV{}
	p.init(o)
	t, err := newCSVTable(r, &p.recordState, phillyCols, []string{"gpu_time"})
	if err != nil {
		return nil, err
	}
	p.t = t
	return p, nil
}

// Next returns the next job, io.EOF after the last, or a *ParseError.
func (p *PhillyCSV) Next() (Job, error) {
	return p.t.nextJob(p.parse)
}

func (p *PhillyCSV) parse(rec []string, line int) (Job, bool, *ParseError) {
	ts, err := parseStamp(p.t.get(rec, "timestamp"), p.loc())
	if err != nil {
		return Job{}, false, p.t.fieldErr(line, "timestamp", err)
	}
	d, err := parseSeconds(p.t.get(rec, "duration"))
	if err != nil {
		return Job{}, false, p.t.fieldErr(line, "duration", err)
	}
	g, err := parseCount(p.t.get(rec, "num_gpus"), maxJobGPUs)
	if err != nil {
		return Job{}, false, p.t.fieldErr(line, "num_gpus", err)
	}
	vc := p.t.get(rec, "cluster")
	if vc == "" {
		return Job{}, false, p.perr(line, "cluster", "empty virtual cluster")
	}
	off, ok := p.offset(ts)
	if !ok {
		return Job{}, false, p.perr(line, "timestamp", "more than a century from the epoch")
	}
	if d == 0 {
		p.stats.Filter("zero duration")
		return Job{}, false, nil
	}
	if g == 0 && !p.opt.KeepCPUOnly {
		p.stats.Filter("no GPU")
		return Job{}, false, nil
	}
	return Job{Spec: p.opt.Shape.job("philly-"+strconv.Itoa(line), vc, g, 0, 0, 0), Submit: off, Duration: d, Line: line}, true, nil
}

// PhillyJSON reads the original Philly log, cluster_job_log
// (msr-fiddle/philly-traces): a JSON array of jobs, or one job object per
// line, each with jobid, vc (→ Spec.Queue), user, status, submitted_time
// and attempts, each attempt with start_time, end_time and detail (one
// entry per server, with its GPU list).
//
// The job's duration is the sum of its attempts' run times (attempts
// without both times are left out); its shape is that of its last attempt
// with a detail: one task per server, holding that server's GPUs (Shape
// applies when the servers hold different numbers). Jobs with no usable
// attempt are filtered out. Line is the line where the job's object
// starts. A JSON syntax error ends the stream (it cannot be skipped); a
// value of the wrong type or a bad timestamp can be.
type PhillyJSON struct {
	recordState
	lt    *lineTracker
	br    *bufio.Reader
	skip  int64 // bytes consumed before the decoder started
	dec   *json.Decoder
	array bool
	begun bool
	err   error
}

// NewPhillyJSON returns a reader of the cluster_job_log in r.
func NewPhillyJSON(r io.Reader, o Options) *PhillyJSON {
	p := &PhillyJSON{lt: &lineTracker{r: r}}
	p.init(o)
	p.br = bufio.NewReader(p.lt)
	p.dec = json.NewDecoder(p.br)
	return p
}

type phillyAttempt struct {
	StartTime *string `json:"start_time"`
	EndTime   *string `json:"end_time"`
	Detail    []struct {
		IP   string   `json:"ip"`
		GPUs []string `json:"gpus"`
	} `json:"detail"`
}

type phillyJob struct {
	Status        string          `json:"status"`
	VC            string          `json:"vc"`
	JobID         string          `json:"jobid"`
	Attempts      []phillyAttempt `json:"attempts"`
	SubmittedTime *string         `json:"submitted_time"`
	User          string          `json:"user"`
}

// Next returns the next job, io.EOF after the last, or a *ParseError.
func (p *PhillyJSON) Next() (Job, error) {
	if p.err != nil {
		return Job{}, p.err
	}
	if !p.begun {
		p.begun = true
		if err := p.start(); err != nil {
			p.err = err
			return Job{}, err
		}
	}
	for {
		if !p.dec.More() {
			if p.array {
				if _, err := p.dec.Token(); err != nil {
					p.err = p.syntax(err)
					return Job{}, p.err
				}
			}
			if _, err := p.dec.Token(); err != io.EOF {
				if err == nil {
					err = errors.New("data after the end of the job list")
				}
				p.err = p.syntax(err)
				return Job{}, p.err
			}
			p.err = io.EOF
			return Job{}, io.EOF
		}
		line := p.lt.lineAt(p.streamOffset())
		var pj phillyJob
		if err := p.dec.Decode(&pj); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				if err := p.bad(p.perr(line, te.Field, "%s: want %s", te.Value, te.Type)); err != nil {
					return Job{}, err
				}
				continue
			}
			p.err = p.syntax(err)
			return Job{}, p.err
		}
		j, keep, pe := p.convert(&pj, line)
		if pe != nil {
			if err := p.bad(pe); err != nil {
				return Job{}, err
			}
			continue
		}
		if keep {
			p.stats.Read++
			return j, nil
		}
	}
}

// start looks at the first byte that is not white space: '[' begins an
// array of jobs, '{' a stream of objects (JSON Lines).
func (p *PhillyJSON) start() error {
	for {
		b, err := p.br.Peek(1)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return p.perr(1, "", "%v", err)
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			p.br.Discard(1)
			p.skip++
			continue
		case '[':
			p.array = true
			if _, err := p.dec.Token(); err != nil {
				return p.syntax(err)
			}
			return nil
		case '{':
			return nil
		}
		return p.perr(p.lt.lineAt(p.skip), "", "want a JSON array of jobs or one job object per line, got %q", b[0])
	}
}

func (p *PhillyJSON) streamOffset() int64 { return p.dec.InputOffset() + p.skip }

func (p *PhillyJSON) syntax(err error) error {
	var se *json.SyntaxError
	off := p.streamOffset()
	if errors.As(err, &se) {
		off = se.Offset + p.skip
	}
	if err == io.ErrUnexpectedEOF {
		err = errors.New("unexpected end of input")
	}
	return p.perr(p.lt.lineAt(off), "", "JSON: %v", err)
}

func absent(s *string) bool {
	return s == nil || *s == "" || strings.EqualFold(*s, "none") || strings.EqualFold(*s, "null")
}

func (p *PhillyJSON) convert(pj *phillyJob, line int) (Job, bool, *ParseError) {
	if pj.JobID == "" {
		return Job{}, false, p.perr(line, "jobid", "missing job ID")
	}
	if absent(pj.SubmittedTime) {
		return Job{}, false, p.perr(line, "submitted_time", "missing submission time")
	}
	sub, err := parseStamp(*pj.SubmittedTime, p.loc())
	if err != nil {
		return Job{}, false, p.perr(line, "submitted_time", "%v", err)
	}
	off, ok := p.offset(sub)
	if !ok {
		return Job{}, false, p.perr(line, "submitted_time", "more than a century from the epoch")
	}
	var run time.Duration
	gpus, nodes := -1, 0
	for i := range pj.Attempts {
		a := &pj.Attempts[i]
		field := "attempts[" + strconv.Itoa(i) + "]"
		if len(a.Detail) > 0 {
			gpus, nodes = 0, len(a.Detail)
			per := len(a.Detail[0].GPUs)
			for _, d := range a.Detail {
				gpus += len(d.GPUs)
				if len(d.GPUs) != per {
					nodes = 0 // uneven: let Shape decide
				}
			}
		}
		if absent(a.StartTime) || absent(a.EndTime) {
			continue
		}
		st, err := parseStamp(*a.StartTime, p.loc())
		if err != nil {
			return Job{}, false, p.perr(line, field+".start_time", "%v", err)
		}
		et, err := parseStamp(*a.EndTime, p.loc())
		if err != nil {
			return Job{}, false, p.perr(line, field+".end_time", "%v", err)
		}
		if et.Before(st) {
			return Job{}, false, p.perr(line, field+".end_time", "ends (%s) before it starts (%s): negative duration", *a.EndTime, *a.StartTime)
		}
		if run += et.Sub(st); run >= maxSpan {
			return Job{}, false, p.perr(line, field+".end_time", "runs for more than a century")
		}
	}
	switch {
	case gpus < 0 || run == 0:
		p.stats.Filter("no completed attempt")
		return Job{}, false, nil
	case gpus > maxJobGPUs:
		return Job{}, false, p.perr(line, "attempts", "%d GPUs: more than %d", gpus, maxJobGPUs)
	case gpus == 0 && !p.opt.KeepCPUOnly:
		p.stats.Filter("no GPU")
		return Job{}, false, nil
	}
	return Job{Spec: p.opt.Shape.job(pj.JobID, pj.VC, gpus, nodes, 0, 0), Submit: off, Duration: run, Line: line}, true, nil
}

// lineTracker passes reads through and maps stream offsets, asked for in
// increasing order, to 1-based line numbers, keeping only the bytes
// between the last offset asked for and the end of what was read.
type lineTracker struct {
	r    io.Reader
	buf  []byte
	base int64
	line int
}

func (t *lineTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf = append(t.buf, p[:n]...)
	return n, err
}

// lineAt returns the line of the first byte at or after off that is not
// white space or a comma (where the next value starts).
func (t *lineTracker) lineAt(off int64) int {
	k := int(off - t.base)
	k = max(0, min(k, len(t.buf)))
	for k < len(t.buf) {
		c := t.buf[k]
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ',' {
			break
		}
		k++
	}
	t.line += bytes.Count(t.buf[:k], []byte{'\n'})
	t.buf = t.buf[k:]
	t.base += int64(k)
	return t.line + 1
}

// VC is one virtual cluster of a quota file such as philly_vc.csv.
type VC struct {
	// Name is the virtual cluster's name (the Queue of its jobs).
	Name string
	// Nodes is its number of nodes.
	Nodes int
	// GPUs is Nodes × the GPUs per node given to ReadVCs.
	GPUs int
}

// ReadVCs reads a virtual-cluster file with the columns vc and "node num"
// (HeliosArtifact's philly_vc.csv) and returns one VC per row, in file
// order, with GPUs = nodes × gpusPerNode. Names must be unique.
// Options.SkipMalformed is ignored: a quota file is small and must be
// right.
func ReadVCs(r io.Reader, gpusPerNode int, o Options) ([]VC, error) {
	st := &recordState{}
	o.SkipMalformed = false
	st.init(o)
	if gpusPerNode < 1 {
		return nil, st.perr(0, "", "GPUs per node %d; want at least 1", gpusPerNode)
	}
	t, err := newCSVTable(r, st, []string{"vc", "node num"}, nil)
	if err != nil {
		return nil, err
	}
	var out []VC
	seen := map[string]int{}
	for {
		rec, line, err := t.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		name := t.get(rec, "vc")
		if name == "" {
			return nil, st.perr(line, "vc", "empty name")
		}
		if prev, dup := seen[name]; dup {
			return nil, st.perr(line, "vc", "%q already defined on line %d", name, prev)
		}
		seen[name] = line
		n, err := parseCount(t.get(rec, "node num"), 1<<24)
		if err != nil {
			return nil, t.fieldErr(line, "node num", err)
		}
		out = append(out, VC{Name: name, Nodes: n, GPUs: n * gpusPerNode})
	}
}
