// Package extproc runs a job ordering in another process — a Python
// policy, typically — behind policy.Ordering, over a documented protocol:
// JSON lines on the process's standard input and output
// (docs/policy-protocol.md; the Python side is python/gpusched_policy).
//
// The simulator starts one process per run (`--ordering 'exec:python3
// my_policy.py'`), says hello, then, once per scheduling cycle, sends the
// jobs that entered a queue and reads back their priorities; a process
// that asks for it also gets the running jobs every cycle. Each call is
// one line each way, so the cost per decision is one pipe round trip plus
// the encoding (measured in docs/policy-protocol.md).
//
// Unlike the decision packages, this one does I/O: it is a host adapter.
// An Ordering is not safe for concurrent use; each run has its own.
package extproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpusched/gpusched/sim/policy"
)

// Protocol is the protocol version the hello message carries.
const Protocol = 1

// Ordering is a policy.Ordering served by a process. Start returns it, as
// a policy.Reorderer when the process asked for running jobs.
type Ordering struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	w      *bufio.Writer
	r      *bufio.Reader
	stderr *tailBuffer
	buf    []byte // the request being written, reused
	reply  reply  // the last reply, reused
	calls  int
	spent  time.Duration // wall time inside calls (CallStats)
	broken error
	exited chan struct{} // closed when cmd.Wait returned (wait)
	exit   error         // what cmd.Wait returned
}

// reorderer is an Ordering whose process asked for running jobs.
type reorderer struct{ *Ordering }

// Running sends the running jobs and returns their priorities.
func (o reorderer) Running(now time.Duration, jobs []policy.Job) ([]int32, error) {
	return o.call("running", now, jobs)
}

type hello struct {
	Method   string `json:"method"`
	Protocol int    `json:"protocol"`
	Arg      string `json:"arg"`
	Seed     uint64 `json:"seed"`
}

type helloReply struct {
	Name     string `json:"name"`
	Running  bool   `json:"running"`
	Protocol int    `json:"protocol"`
	Error    string `json:"error"`
}

type reply struct {
	Priorities []int64 `json:"priorities"`
	Error      string  `json:"error"`
}

// Start starts argv (program and arguments, no shell) and says hello
// with arg (what followed the command in the flag, or "") and seed. The
// process must answer with its name and whether it wants running jobs.
func Start(argv []string, arg string, seed uint64) (policy.Ordering, error) {
	if len(argv) == 0 {
		return nil, errors.New("extproc: no command")
	}
	o := &Ordering{name: argv[0], stderr: &tailBuffer{max: 4096}}
	o.cmd = exec.Command(argv[0], argv[1:]...)
	o.cmd.Stderr = o.stderr
	var err error
	if o.stdin, err = o.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := o.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := o.cmd.Start(); err != nil {
		return nil, fmt.Errorf("extproc: %w", err)
	}
	o.w, o.r = bufio.NewWriterSize(o.stdin, 1<<16), bufio.NewReaderSize(out, 1<<16)
	b, _ := json.Marshal(hello{Method: "hello", Protocol: Protocol, Arg: arg, Seed: seed})
	var h helloReply
	if err := o.roundTrip(b, &h); err != nil {
		o.Close()
		return nil, err
	}
	if h.Error != "" {
		o.Close()
		return nil, fmt.Errorf("extproc: %s: hello: %s", o.name, h.Error)
	}
	if h.Protocol > Protocol {
		o.Close()
		return nil, fmt.Errorf("extproc: %s speaks protocol %d, this simulator %d", o.name, h.Protocol, Protocol)
	}
	if h.Name != "" {
		o.name = h.Name
	}
	if h.Running {
		return reorderer{o}, nil
	}
	return o, nil
}

// Name returns the name the process gave in its hello reply.
func (o *Ordering) Name() string { return o.name }

// CallStats returns the number of calls so far and the wall time spent
// in them (encoding, the round trip and the process's own work).
func (o *Ordering) CallStats() (int, time.Duration) { return o.calls, o.spent }

// Enqueued sends the jobs that entered a queue and returns their
// priorities.
func (o *Ordering) Enqueued(now time.Duration, jobs []policy.Job) ([]int32, error) {
	return o.call("enqueued", now, jobs)
}

func (o *Ordering) call(method string, now time.Duration, jobs []policy.Job) ([]int32, error) {
	if o.broken != nil {
		return nil, o.broken
	}
	start := time.Now()
	o.buf = appendRequest(o.buf[:0], method, now, jobs)
	o.reply = reply{Priorities: o.reply.Priorities[:0]}
	if err := o.roundTrip(o.buf, &o.reply); err != nil {
		o.broken = err
		return nil, err
	}
	o.calls++
	o.spent += time.Since(start)
	if o.reply.Error != "" {
		return nil, fmt.Errorf("%s: %s: %s", o.name, method, o.reply.Error)
	}
	if len(o.reply.Priorities) != len(jobs) {
		return nil, fmt.Errorf("%s: %s: %d priorities for %d jobs", o.name, method, len(o.reply.Priorities), len(jobs))
	}
	out := make([]int32, len(jobs))
	for i, p := range o.reply.Priorities {
		if p < -1<<31 || p > 1<<31-1 {
			return nil, fmt.Errorf("%s: %s: priority %d of job %s outside int32", o.name, method, p, jobs[i].ID)
		}
		out[i] = int32(p)
	}
	return out, nil
}

// roundTrip writes one line and decodes the reply line into v.
func (o *Ordering) roundTrip(line []byte, v any) error {
	o.w.Write(line)
	o.w.WriteByte('\n')
	if err := o.w.Flush(); err != nil {
		return o.died(err)
	}
	b, err := o.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), b...)
		for err == bufio.ErrBufferFull {
			b, err = o.r.ReadSlice('\n')
			long = append(long, b...)
		}
		b = long
	}
	if err != nil {
		return o.died(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("extproc: %s: reply %.200q: %w (a policy must print nothing but replies on standard output; log to standard error)", o.name, b, err)
	}
	return nil
}

// died reports the process gone, with the tail of its standard error.
// The process's standard error is copied by os/exec until cmd.Wait
// returns, so died waits for the exit (a moment: its standard output is
// closed) before reading the tail; without that the tail was sometimes
// still empty (TestProcessErrors).
func (o *Ordering) died(err error) error {
	select {
	case <-o.wait():
	case <-time.After(2 * time.Second):
	}
	msg := strings.TrimSpace(o.stderr.String())
	if msg != "" {
		return fmt.Errorf("extproc: %s: %w; its standard error ends:\n%s", o.name, err, msg)
	}
	return fmt.Errorf("extproc: %s: %w", o.name, err)
}

// Close says goodbye, closes the process's standard input and waits for
// it to exit.
func (o *Ordering) Close() error {
	if o.broken == nil {
		o.w.WriteString(`{"method":"bye"}` + "\n")
		o.w.Flush()
	}
	o.stdin.Close()
	<-o.wait()
	return o.exit
}

// wait returns a channel closed once the process has exited and cmd.Wait
// returned (called once, whoever asks first).
func (o *Ordering) wait() <-chan struct{} {
	if o.exited == nil {
		o.exited = make(chan struct{})
		if o.cmd == nil { // no process (a test's Ordering over pipes)
			close(o.exited)
			return o.exited
		}
		go func() {
			o.exit = o.cmd.Wait()
			close(o.exited)
		}()
	}
	return o.exited
}

// appendRequest encodes one request by hand: its shape is fixed and
// encoding/json's reflection would dominate the cost of a small call.
func appendRequest(b []byte, method string, now time.Duration, jobs []policy.Job) []byte {
	b = append(b, `{"method":"`...)
	b = append(b, method...)
	b = append(b, `","now":`...)
	b = appendSeconds(b, now)
	b = append(b, `,"jobs":[`...)
	for i, j := range jobs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = strconv.AppendQuote(b, j.ID)
		b = append(b, `,"queue":`...)
		b = strconv.AppendQuote(b, j.Queue)
		b = append(b, `,"gpus":`...)
		b = strconv.AppendFloat(b, j.GPUs, 'g', -1, 64)
		b = append(b, `,"priority":`...)
		b = strconv.AppendInt(b, int64(j.Priority), 10)
		b = append(b, `,"submit":`...)
		b = appendSeconds(b, j.Submit)
		b = append(b, `,"runtime":`...)
		b = appendSeconds(b, j.Runtime)
		b = append(b, `,"ran":`...)
		b = appendSeconds(b, j.Ran)
		b = append(b, `,"done":`...)
		b = appendSeconds(b, j.Done)
		b = append(b, `,"running":`...)
		b = strconv.AppendBool(b, j.Running)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func appendSeconds(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, d.Seconds(), 'f', -1, 64)
}

// tailBuffer keeps the last max bytes written to it. os/exec writes it
// from its own goroutine.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if n := t.b.Len() - t.max; n > 0 {
		t.b.Next(n)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
