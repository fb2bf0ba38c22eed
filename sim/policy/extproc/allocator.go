package extproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gpusched/gpusched/fairshare"
)

// Allocator is a per-GPU-model allocator served by a process: the
// allocation step of `--ordering gavel` (sim/gavel.Allocator) in another
// language. After the hello, each call sends one "allocate" request and
// reads back each job group's time share per model:
//
//	→ {"method":"allocate","models":["V100","K80"],"gpus":[36,36],
//	   "jobs":[{"id":"resnet50-bs64/1","gpus":1,"count":3,"throughput":[1,0.141]}]}
//	← {"time":[[0.8,0.2]]}
//
// python/examples/gavel_maxmin.py is one, in pure Python. Not safe for
// concurrent use.
type Allocator struct {
	o *Ordering
}

// StartAllocator starts argv as an allocator process and says hello
// with seed.
func StartAllocator(argv []string, seed uint64) (*Allocator, error) {
	o, err := Start(argv, "", seed)
	if err != nil {
		return nil, err
	}
	switch v := o.(type) {
	case *Ordering:
		return &Allocator{o: v}, nil
	case reorderer:
		return &Allocator{o: v.Ordering}, nil
	}
	return nil, errors.New("extproc: unexpected ordering type")
}

type allocJob struct {
	ID         string    `json:"id"`
	GPUs       int       `json:"gpus"`
	Count      int       `json:"count"`
	Throughput []float64 `json:"throughput"`
}

type allocRequest struct {
	Method string     `json:"method"`
	Models []string   `json:"models"`
	GPUs   []int      `json:"gpus"`
	Jobs   []allocJob `json:"jobs"`
}

type allocReply struct {
	Time  [][]float64 `json:"time"`
	Error string      `json:"error"`
}

// Allocate sends the groups and returns the process's time shares, one
// row per job of len(c.Models). The shape is checked here; whether the
// shares fit the cluster is the caller's check.
func (a *Allocator) Allocate(jobs []fairshare.HeteroJob, c fairshare.HeteroCluster) ([][]float64, error) {
	o := a.o
	if o.broken != nil {
		return nil, o.broken
	}
	start := time.Now()
	req := allocRequest{Method: "allocate", Models: c.Models, GPUs: c.GPUs, Jobs: make([]allocJob, len(jobs))}
	for i, j := range jobs {
		req.Jobs[i] = allocJob{ID: j.ID, GPUs: j.GPUs, Count: max(j.Count, 1), Throughput: j.Throughput}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var r allocReply
	if err := o.roundTrip(b, &r); err != nil {
		o.broken = err
		return nil, err
	}
	o.calls++
	o.spent += time.Since(start)
	if r.Error != "" {
		return nil, fmt.Errorf("%s: allocate: %s", o.name, r.Error)
	}
	if len(r.Time) != len(jobs) {
		return nil, fmt.Errorf("%s: allocate: %d rows for %d jobs", o.name, len(r.Time), len(jobs))
	}
	for i, row := range r.Time {
		if len(row) != len(c.Models) {
			return nil, fmt.Errorf("%s: allocate: job %s: %d shares for %d models", o.name, jobs[i].ID, len(row), len(c.Models))
		}
	}
	return r.Time, nil
}

// Name returns the name the process gave in its hello reply.
func (a *Allocator) Name() string { return a.o.name }

// CallStats returns the number of calls so far and the wall time spent
// in them.
func (a *Allocator) CallStats() (int, time.Duration) { return a.o.calls, a.o.spent }

// Close says goodbye and waits for the process to exit.
func (a *Allocator) Close() error { return a.o.Close() }
