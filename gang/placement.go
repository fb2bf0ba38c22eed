package gang

import (
	"errors"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// TaskRef names one task of a request: its group (index into
// Request.Groups) and its index within the group.
type TaskRef struct {
	Group, Index int32
}

// Placement says where each task of a request goes: one topology.Claim per
// placed task (host, CPU, memory, and the whole GPUs, share or MIG slot it
// takes). A Placer fills it; Commit applies it to a ledger all or nothing.
//
// A Placement owns its memory and reuses it: Place resets it first, so a
// caller that keeps placements must use a fresh one per request (or Clone).
// The zero value is an empty placement ready for use.
type Placement struct {
	// Job is the request's ID.
	Job string
	// Claims holds one claim per placed task; Tasks[i] says which task
	// Claims[i] is. Claims of one host may repeat the host (several tasks
	// on it).
	Claims []topology.Claim
	Tasks  []TaskRef
	// Placed counts the placed tasks per group (len(Request.Groups)); for
	// an elastic group it lies between Min and Count.
	Placed []int
	// Level and Domain name the domain that holds every task: the required
	// or preferred level the placer honoured (or the tier it chose), and
	// the domain at that level. Domain is the cluster root when nothing
	// tighter was needed.
	Level  topology.Level
	Domain topology.DomainID
	// Relaxed lists the preferred levels, innermost first, that the
	// placement does not honour.
	Relaxed []topology.Level

	gpus []topology.GPUClaim // backing store of Claims[i].GPUs
	held *topology.Ledger    // the ledger this placement is committed to, if any
	seq  uint64              // commit sequence, so stale Txns cannot undo a later commit
}

// ErrCommitted is returned by Commit for a placement that is already
// committed and not yet undone.
var ErrCommitted = errors.New("gang: placement already committed")

// Reset empties p, keeping its memory. It panics if p is committed: the
// ledger holds what p describes until the transaction is undone.
func (p *Placement) Reset() {
	if p.held != nil {
		panic("gang: Placement reused while committed; undo its Txn first")
	}
	p.Job = ""
	p.Claims = p.Claims[:0]
	p.Tasks = p.Tasks[:0]
	p.Placed = p.Placed[:0]
	p.Relaxed = p.Relaxed[:0]
	p.gpus = p.gpus[:0]
	p.Level, p.Domain = 0, topology.NoDomain
}

// Len returns the number of placed tasks.
func (p *Placement) Len() int { return len(p.Claims) }

// GPUs returns the number of distinct GPUs the placement touches (whole,
// shared or MIG). O(claims log claims); it allocates.
func (p *Placement) GPUs() int {
	var ids []topology.GPUID
	for i := range p.Claims {
		for _, gc := range p.Claims[i].GPUs {
			ids = append(ids, gc.GPU)
		}
	}
	slices.Sort(ids)
	return len(slices.Compact(ids))
}

// Hosts returns the distinct hosts of the placement in ascending order.
func (p *Placement) Hosts() []topology.HostID {
	out := make([]topology.HostID, 0, len(p.Claims))
	for i := range p.Claims {
		out = append(out, p.Claims[i].Host)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Clone returns a deep copy of p that is not committed.
func (p *Placement) Clone() *Placement {
	q := &Placement{
		Job: p.Job, Level: p.Level, Domain: p.Domain,
		Tasks:   slices.Clone(p.Tasks),
		Placed:  slices.Clone(p.Placed),
		Relaxed: slices.Clone(p.Relaxed),
		Claims:  make([]topology.Claim, len(p.Claims)),
	}
	n := 0
	for i := range p.Claims {
		n += len(p.Claims[i].GPUs)
	}
	q.gpus = make([]topology.GPUClaim, 0, n)
	for i, c := range p.Claims {
		lo := len(q.gpus)
		q.gpus = append(q.gpus, c.GPUs...)
		c.GPUs = q.gpus[lo:len(q.gpus):len(q.gpus)]
		q.Claims[i] = c
	}
	return q
}

// ClonePair returns two deep copies of p, each equal to what Clone
// returns, in half the allocations: the two share one allocation, and
// each slice of the pair another, split so that neither copy can grow
// into the other. The scheduler keeps one copy and hands the other to
// its caller.
func (p *Placement) ClonePair() (*Placement, *Placement) {
	if q := p.clonePairSmall(); q != nil {
		return &q.p[0], &q.p[1]
	}
	pair := new([2]Placement)
	a, b := &pair[0], &pair[1]
	*a = Placement{Job: p.Job, Level: p.Level, Domain: p.Domain}
	*b = *a
	a.Tasks, b.Tasks = splitClone(p.Tasks)
	a.Placed, b.Placed = splitClone(p.Placed)
	a.Relaxed, b.Relaxed = splitClone(p.Relaxed)
	claims := make([]topology.Claim, 2*len(p.Claims))
	a.Claims = claims[:len(p.Claims):len(p.Claims)]
	b.Claims = claims[len(p.Claims):]
	n := 0
	for i := range p.Claims {
		n += len(p.Claims[i].GPUs)
	}
	gpus := make([]topology.GPUClaim, 2*n)
	a.gpus, b.gpus = gpus[:0:n], gpus[n:n]
	for _, q := range []*Placement{a, b} {
		for i, c := range p.Claims {
			lo := len(q.gpus)
			q.gpus = append(q.gpus, c.GPUs...)
			c.GPUs = q.gpus[lo:len(q.gpus):len(q.gpus)]
			q.Claims[i] = c
		}
	}
	return a, b
}

// pairGPUs is how many GPU claims a pairBlock holds per copy.
const pairGPUs = 8

// pairBlock is the one allocation of ClonePair for a placement of one
// task in one group claiming at most pairGPUs GPUs (most jobs): both
// copies and every slice of each, split so that neither copy can grow
// into the other.
type pairBlock struct {
	p      [2]Placement
	claims [2]topology.Claim
	tasks  [2]TaskRef
	placed [2]int
	gpus   [2][pairGPUs]topology.GPUClaim
}

// clonePairSmall is ClonePair in one allocation, or nil when p is not a
// one-task placement that fits a pairBlock (then ClonePair splits its
// copies over five).
func (p *Placement) clonePairSmall() *pairBlock {
	if len(p.Claims) != 1 || len(p.Tasks) != 1 || len(p.Placed) != 1 || p.Relaxed != nil || len(p.Claims[0].GPUs) > pairGPUs {
		return nil
	}
	q := new(pairBlock)
	c := p.Claims[0]
	n := len(c.GPUs)
	for i := range q.p {
		a := &q.p[i]
		*a = Placement{Job: p.Job, Level: p.Level, Domain: p.Domain}
		q.tasks[i], q.placed[i] = p.Tasks[0], p.Placed[0]
		a.Tasks, a.Placed = q.tasks[i:i+1:i+1], q.placed[i:i+1:i+1]
		copy(q.gpus[i][:], c.GPUs)
		a.gpus = q.gpus[i][:n:n]
		q.claims[i] = c
		q.claims[i].GPUs = a.gpus
		a.Claims = q.claims[i : i+1 : i+1]
	}
	return q
}

// splitClone returns two copies of s from one allocation (nil for nil, as
// slices.Clone).
func splitClone[T any](s []T) ([]T, []T) {
	if s == nil {
		return nil, nil
	}
	n := len(s)
	both := make([]T, 2*n)
	copy(both, s)
	copy(both[n:], s)
	return both[:n:n], both[n:]
}

// addClaim appends a claim for task t; gpus are copied into p's own store.
func (p *Placement) addClaim(t TaskRef, h topology.HostID, cpu, mem int64, gpus ...topology.GPUClaim) {
	lo := len(p.gpus)
	p.gpus = append(p.gpus, gpus...)
	p.Claims = append(p.Claims, topology.Claim{Host: h, CPUMilli: cpu, MemoryMiB: mem, GPUs: p.gpus[lo:len(p.gpus):len(p.gpus)]})
	p.Tasks = append(p.Tasks, t)
	p.Placed[t.Group]++
}

// truncate drops the claims from n on (a failed attempt's tail).
func (p *Placement) truncate(n int) {
	k := 0
	for i := n; i < len(p.Claims); i++ {
		p.Placed[p.Tasks[i].Group]--
		k += len(p.Claims[i].GPUs)
	}
	p.gpus = p.gpus[:len(p.gpus)-k]
	p.Claims = p.Claims[:n]
	p.Tasks = p.Tasks[:n]
}

// Txn is a placement applied to a ledger. Undo takes it back; it is
// idempotent, and a Txn may be copied freely: the state lives in the
// Placement, so only the first Undo of a commit releases anything.
type Txn struct {
	l   *topology.Ledger
	p   *Placement
	seq uint64
}

// Commit applies every claim of p to l at once: either all tasks get their
// resources, or the ledger is left unchanged and the *topology.AllocError
// says which claim failed (the ledger changed since Place). p must not be
// modified (or placed into) until the Txn is undone. O(GPU claims × tree
// depth); no allocations.
func Commit(l *topology.Ledger, p *Placement) (Txn, error) {
	if p.held != nil {
		return Txn{}, ErrCommitted
	}
	if err := l.Allocate(p.Claims...); err != nil {
		return Txn{}, err
	}
	p.held = l
	p.seq++
	return Txn{l: l, p: p, seq: p.seq}, nil
}

// Reinstate applies p to l as Commit does, but ignoring health and
// cordons (topology.Ledger.Reinstate): for work that already holds its
// claims and keeps them, such as the tasks an elastic gang keeps after a
// shrink on a host cordoned or draining since. Capacity is checked, all
// or nothing.
func Reinstate(l *topology.Ledger, p *Placement) (Txn, error) {
	if p.held != nil {
		return Txn{}, ErrCommitted
	}
	if err := l.Reinstate(p.Claims...); err != nil {
		return Txn{}, err
	}
	p.held = l
	p.seq++
	return Txn{l: l, p: p, seq: p.seq}, nil
}

// Applied reports whether the transaction's claims are held on its ledger.
func (t Txn) Applied() bool { return t.p != nil && t.p.held == t.l && t.p.seq == t.seq }

// Undo releases what the transaction took, all or nothing. Undoing a Txn
// that is not applied (never was, or was undone) does nothing and returns
// nil. An error means the ledger no longer holds the claims as committed
// (someone released them behind the transaction's back); the ledger is
// then unchanged.
func (t Txn) Undo() error {
	if !t.Applied() {
		return nil
	}
	if err := t.l.Release(t.p.Claims...); err != nil {
		return err
	}
	t.p.held = nil
	return nil
}
