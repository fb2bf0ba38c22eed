package extproc

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/topology"
)

// NodePicker is a node-level placement policy (frag.Policy) served by a
// process: `--policy 'exec:COMMAND ARGS'`. The gang placer (gang.New with
// Options.Node) keeps the gang's constraints — all tasks or none, the
// domain levels the job asks for, GPU locality inside a host — and asks
// the process, for each task, which of the candidate hosts takes it:
//
//	→ {"method":"pick","gpus":8,"milli":0,"hosts":[{"host":"h0","free":8,"gpus":8,"net":"tor0"},…]}
//	← {"host":"h0"}
//
// The candidates are the hosts in the task's scope that can take it now
// (healthy, model accepted, enough CPU, memory and free GPUs); free is
// their whole free GPUs, net the innermost network domain (ToR) they are
// under. A reply naming no host ("") declines the task; a host that is
// not a candidate stops the run with an error naming the policy and the
// field (NodePicker.Err): nothing falls back to a built-in policy. When no
// host can take the task the process is not asked.
//
// python/examples/worst_fit.py is one. Not safe for concurrent use.
type NodePicker struct {
	o    *Ordering
	c    *topology.Cluster
	err  error
	cand []topology.HostID
	free []int
	r    pickReply
}

type pickReply struct {
	Host  *string `json:"host"`
	Error string  `json:"error"`
}

// StartNodePicker starts argv as a node picker for cluster c and says
// hello with seed.
func StartNodePicker(argv []string, c *topology.Cluster, seed uint64) (*NodePicker, error) {
	o, err := Start(argv, "", seed)
	if err != nil {
		return nil, err
	}
	switch v := o.(type) {
	case *Ordering:
		return &NodePicker{o: v, c: c}, nil
	case reorderer:
		return &NodePicker{o: v.Ordering, c: c}, nil
	}
	return nil, errors.New("extproc: unexpected ordering type")
}

// Pick implements frag.Policy: it asks the process which candidate host
// takes t. After an error (Err) it places nothing.
func (n *NodePicker) Pick(l *topology.Ledger, t frag.Task, s frag.Scope) (topology.Claim, bool) {
	if n.err != nil {
		return topology.Claim{}, false
	}
	n.candidates(l, &t, s)
	if len(n.cand) == 0 {
		return topology.Claim{}, false
	}
	o := n.o
	if o.broken != nil {
		n.err = o.broken
		return topology.Claim{}, false
	}
	start := time.Now()
	o.buf = n.appendPick(o.buf[:0], &t)
	n.r = pickReply{}
	if err := o.roundTrip(o.buf, &n.r); err != nil {
		o.broken, n.err = err, err
		return topology.Claim{}, false
	}
	o.calls++
	o.spent += time.Since(start)
	h, err := n.chosen()
	if err != nil {
		n.err = err
		return topology.Claim{}, false
	}
	if h == topology.NoHost {
		return topology.Claim{}, false
	}
	return topology.Claim{Host: h, CPUMilli: t.CPUMilli, MemoryMiB: t.MemoryMiB}, true
}

// chosen checks the last reply: NoHost for a declined task, else a
// candidate host.
func (n *NodePicker) chosen() (topology.HostID, error) {
	if n.r.Error != "" {
		return topology.NoHost, fmt.Errorf("%s: pick: %s", n.o.name, n.r.Error)
	}
	if n.r.Host == nil {
		return topology.NoHost, fmt.Errorf(`%s: pick: reply without "host" (give "" to decline the task)`, n.o.name)
	}
	name := *n.r.Host
	if name == "" {
		return topology.NoHost, nil
	}
	h, ok := n.c.HostByName(name)
	if !ok {
		return topology.NoHost, fmt.Errorf(`%s: pick: "host": %q is not a host of the cluster`, n.o.name, name)
	}
	if !slices.Contains(n.cand, h) {
		return topology.NoHost, fmt.Errorf(`%s: pick: "host": %q was not a candidate (outside the task's scope, or without the free GPUs, CPU or memory it needs)`, n.o.name, name)
	}
	return h, nil
}

// candidates collects the hosts in s that can take t now and their free
// whole GPUs in s.
func (n *NodePicker) candidates(l *topology.Ledger, t *frag.Task, s frag.Scope) {
	c := n.c
	n.cand, n.free = n.cand[:0], n.free[:0]
	var inScope func(topology.GPUID) bool
	hosts := c.DomainHostList(s.Within)
	if hosts == nil { // a fabric domain, or a domain inside a host
		gpus := c.DomainGPUs(s.Within)
		inScope = func(g topology.GPUID) bool { return slices.Contains(gpus, g) }
		for _, g := range gpus {
			if h := c.GPUHost(g); len(hosts) == 0 || hosts[len(hosts)-1] != h {
				hosts = append(hosts, h)
			}
		}
	}
	for _, h := range hosts {
		if s.Allow != nil && !s.Allow(h) || !l.HostUsable(h) || l.CPUFree(h) < t.CPUMilli || l.MemoryFree(h) < t.MemoryMiB {
			continue
		}
		g0, ng := c.HostGPUs(h)
		if (t.GPUs > 0 || t.GPUMilli > 0) && (ng == 0 || t.Models != nil && !slices.Contains(t.Models, c.HostModel(h))) {
			continue
		}
		whole, share := 0, false
		for i := range ng {
			g := g0 + topology.GPUID(i)
			if inScope != nil && !inScope(g) || l.GPU(g).Mode == topology.ModeMIG {
				continue
			}
			f := l.GPUFreeMilli(g)
			if f == topology.MilliPerGPU {
				whole++
			}
			if t.GPUMilli > 0 && f >= t.GPUMilli {
				share = true
			}
		}
		if whole < t.GPUs || t.GPUMilli > 0 && !share {
			continue
		}
		n.cand, n.free = append(n.cand, h), append(n.free, whole)
	}
}

// appendPick encodes a pick request by hand (see appendRequest).
func (n *NodePicker) appendPick(b []byte, t *frag.Task) []byte {
	c := n.c
	net := topology.Level(-1)
	if c.LevelCluster() > topology.LevelHost+1 {
		net = topology.LevelHost + 1
	}
	b = append(b, `{"method":"pick","gpus":`...)
	b = strconv.AppendInt(b, int64(t.GPUs), 10)
	b = append(b, `,"milli":`...)
	b = strconv.AppendInt(b, int64(t.GPUMilli), 10)
	b = append(b, `,"hosts":[`...)
	for i, h := range n.cand {
		if i > 0 {
			b = append(b, ',')
		}
		_, ng := c.HostGPUs(h)
		b = append(b, `{"host":`...)
		b = strconv.AppendQuote(b, c.HostName(h))
		b = append(b, `,"free":`...)
		b = strconv.AppendInt(b, int64(n.free[i]), 10)
		b = append(b, `,"gpus":`...)
		b = strconv.AppendInt(b, int64(ng), 10)
		b = append(b, `,"net":`...)
		name := ""
		if net >= 0 {
			name = c.DomainName(c.HostAt(h, net))
		}
		b = strconv.AppendQuote(b, name)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// Err returns the error that stopped the picker (a malformed or invalid
// reply, the process gone), or nil. The simulator checks it after a run
// and reports it instead of the run's results.
func (n *NodePicker) Err() error { return n.err }

// Name returns the name the process gave in its hello reply.
func (n *NodePicker) Name() string { return n.o.name }

// CallStats returns the number of pick calls so far and the wall time
// spent in them.
func (n *NodePicker) CallStats() (int, time.Duration) { return n.o.calls, n.o.spent }

// Close says goodbye and waits for the process to exit.
func (n *NodePicker) Close() error { return n.o.Close() }
