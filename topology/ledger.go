package topology

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
)

// Health is the state of a GPU or host as the scheduler sees it.
type Health uint8

// Health states. Only Healthy GPUs on Healthy hosts take new work; Draining
// ones keep what they run; Failed ones run nothing useful.
const (
	Healthy  Health = iota // takes new work
	Draining               // keeps running work, takes none
	Failed                 // out of service
)

var healthNames = [...]string{"healthy", "draining", "failed"}

// String returns "healthy", "draining" or "failed".
func (h Health) String() string {
	if int(h) < len(healthNames) {
		return healthNames[h]
	}
	return "Health(" + strconv.Itoa(int(h)) + ")"
}

// GPUMode says how a GPU is being used.
type GPUMode uint8

// GPU modes. A GPU holds either one exclusive allocation, any number of
// fractional shares, or MIG instances; never a mix.
const (
	ModeFree   GPUMode = iota // nothing allocated
	ModeWhole                 // one exclusive allocation
	ModeShared                // fractional shares (milli-GPU)
	ModeMIG                   // MIG instances
)

var modeNames = [...]string{"free", "whole", "shared", "mig"}

// String returns the lower-case mode name.
func (m GPUMode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "GPUMode(" + strconv.Itoa(int(m)) + ")"
}

// MilliPerGPU is the capacity of one GPU in milli-GPU.
const MilliPerGPU = 1000

type gpuState struct {
	used   int16 // milli-GPU in use, 0..1000
	mode   GPUMode
	health Health
	mig    uint16 // occupied MIG slots
}

// Ledger is the mutable occupancy of one Cluster: what each GPU runs, how
// much CPU and memory each host has left, the health of GPUs and hosts, and
// per-domain counters of free capacity kept up to date on every change.
//
// Counters count only allocatable GPUs: a Healthy GPU on a usable host
// (Healthy and not cordoned, see HostUsable).
// "Free" GPUs are allocatable GPUs with nothing allocated.
//
// The ordered indexes behind BestHost, AscendHosts, BestDomain and
// AscendSharedGPUs are refreshed lazily: a change marks what it touched and
// the next query re-indexes only those entries. Queries therefore update
// internal state, and a Ledger is not safe for concurrent use, not even by
// readers; Clone gives each goroutine its own.
type Ledger struct {
	c *Cluster

	gpu        []gpuState
	hostHealth []Health
	cordoned   []bool // per host: cordoned (ledger_cordon.go)
	cpuFree    []int64
	memFree    []int64

	// The per-domain counters are kept for the host, network, cluster
	// and fabric domains; a domain inside a host (NUMA node, PCIe switch)
	// holds inside (-1) in all three, and its figures are summed from its
	// few GPUs when asked (ledger_inside.go), so that a change of a GPU
	// updates only the domains from its host up and its fabric domain.
	freeWhole []int32 // per domain: free allocatable GPUs
	freeMilli []int64 // per domain: free milli-GPU on allocatable GPUs
	healthy   []int32 // per domain: allocatable GPUs; shared with clones while healthyShared
	// healthyShared: healthy may be shared with other ledgers (Clone,
	// CopyFrom), so it is copied before it is written (ownHealthy). Only
	// health, cordon and live changes write it, never an allocation, so
	// what-if copies (reservation shadows) share it for free.
	healthyShared bool

	gen     uint64   // bumped by every successful change
	hostGen []uint64 // per host: a fresh stamp on every change on that host (ledger_stamp.go)
	stampID uint64   // this ledger's identity in the stamps it hands out
	stampN  uint64   // changes stamped under stampID

	idx ledgerIndex
	// slim: an Occupancy's ledger, without counters, indexes or stamps
	// (nil freeWhole, freeMilli, healthy, hostGen and idx): adjust,
	// touchShared and bumpHost skip it.
	slim bool
	// batch gathers one claim's changes to the domains its GPUs share
	// (ledger_batch.go); off outside applyClaim and releaseClaim.
	batch claimBatch
	// trackers are the Occupancies that hold this ledger's occupancy as
	// of their Track lazily (occupancy_track.go): before any change of a
	// host here, each keeps the host's state first (preserve). Clone and
	// CopyFrom do not copy it.
	trackers []*Occupancy
}

// NewLedger returns an empty ledger for c: everything healthy and free.
func NewLedger(c *Cluster) *Ledger {
	l := &Ledger{
		c: c,
		// With room for hosts joining live (Follow), like the cluster's.
		gpu:        make([]gpuState, len(c.gpus), slack(len(c.gpus))),
		hostHealth: make([]Health, len(c.hosts), slack(len(c.hosts))),
		cordoned:   make([]bool, len(c.hosts), slack(len(c.hosts))),
		cpuFree:    make([]int64, len(c.hosts), slack(len(c.hosts))),
		memFree:    make([]int64, len(c.hosts), slack(len(c.hosts))),
		freeWhole:  make([]int32, len(c.domains), slack(len(c.domains))),
		freeMilli:  make([]int64, len(c.domains), slack(len(c.domains))),
		healthy:    make([]int32, len(c.domains), slack(len(c.domains))),
		hostGen:    make([]uint64, len(c.hosts), slack(len(c.hosts))),
	}
	for h := range c.hosts {
		l.cpuFree[h] = c.hosts[h].cpuMilli
		l.memFree[h] = c.hosts[h].memMiB
	}
	if c.nRemoved == 0 {
		for d := range c.domains {
			n := int32(len(c.DomainGPUs(DomainID(d))))
			l.freeWhole[d] = n
			l.healthy[d] = n
			l.freeMilli[d] = int64(n) * MilliPerGPU
		}
		l.markInside(0)
	} else {
		l.markInside(0)
		// Removed hosts are out of service for good: count GPU by GPU.
		for h := range c.hosts {
			if c.Removed(HostID(h)) {
				l.hostHealth[h] = Failed
			}
		}
		for g := range c.gpus {
			f, m, o := l.contrib(GPUID(g))
			l.count(GPUID(g), f, m, o)
		}
	}
	l.idx.init(l)
	l.newStampID()
	return l
}

// Cluster returns the cluster this ledger tracks.
func (l *Ledger) Cluster() *Cluster { return l.c }

// Generation returns a counter that grows with every successful change to
// the ledger (allocation, release, health). Equal generations mean equal
// state, which lets callers cache answers.
func (l *Ledger) Generation() uint64 { return l.gen }

// Clone returns an independent copy. It copies O(GPUs + domains) memory,
// the indexes' keys included.
func (l *Ledger) Clone() *Ledger {
	n := &Ledger{
		c:          l.c,
		gpu:        append([]gpuState(nil), l.gpu...),
		hostHealth: append([]Health(nil), l.hostHealth...),
		cordoned:   append([]bool(nil), l.cordoned...),
		cpuFree:    append([]int64(nil), l.cpuFree...),
		memFree:    append([]int64(nil), l.memFree...),
		freeWhole:  append([]int32(nil), l.freeWhole...),
		freeMilli:  append([]int64(nil), l.freeMilli...),
		healthy:    l.healthy, // copy-on-write (ownHealthy)
		gen:        l.gen,
		hostGen:    append([]uint64(nil), l.hostGen...),
	}
	l.healthyShared, n.healthyShared = true, true
	n.idx = l.idx.clone()
	n.newStampID()
	return n
}

// CopyFrom makes l an exact copy of src, reusing l's memory. Both must track
// the same Cluster. It is the cheap form of Clone for planners that run
// many what-ifs: it copies into l's arrays and allocates only the indexes'
// key arrays (one per index). An Occupancy is cheaper still for what-ifs
// that only allocate and release.
func (l *Ledger) CopyFrom(src *Ledger) {
	if l.c != src.c {
		panic("topology: Ledger.CopyFrom across clusters")
	}
	l.settleTrackers() // l's whole state changes
	copy(l.gpu, src.gpu)
	copy(l.hostHealth, src.hostHealth)
	copy(l.cordoned, src.cordoned)
	copy(l.cpuFree, src.cpuFree)
	copy(l.memFree, src.memFree)
	copy(l.freeWhole, src.freeWhole)
	copy(l.freeMilli, src.freeMilli)
	l.healthy = src.healthy // copy-on-write (ownHealthy)
	l.healthyShared, src.healthyShared = true, true
	copy(l.hostGen, src.hostGen)
	l.gen = src.gen
	l.idx.copyFrom(&src.idx)
}

// HostGeneration returns a stamp that changes whenever anything on host h
// changes (allocations, releases, health of the host or its GPUs), so callers
// can cache per-host answers. Changes that are rolled back still count.
// Stamps are unique across the ledgers of a process: two ledgers of one
// cluster whose host h has the same HostGeneration have h in the same
// state, also after Clone and CopyFrom (see ledger_stamp.go). Values are
// not counts and need not increase.
func (l *Ledger) HostGeneration(h HostID) uint64 { return l.hostGen[h] }

// FreeGPUs returns the number of free allocatable GPUs in domain d. O(1);
// for a domain inside a host, O(its GPUs).
func (l *Ledger) FreeGPUs(d DomainID) int {
	if n := l.freeWhole[d]; n != inside {
		return int(n)
	}
	return l.insideFree(d)
}

// FreeMilli returns the free milli-GPU on allocatable GPUs of domain d,
// counting partly used GPUs. O(1); for a domain inside a host, O(its GPUs).
func (l *Ledger) FreeMilli(d DomainID) int64 {
	if n := l.freeMilli[d]; n != inside {
		return n
	}
	return l.insideMilli(d)
}

// HealthyGPUs returns the number of allocatable GPUs of domain d (healthy,
// on a healthy host), used or not. O(1); for a domain inside a host, O(its
// GPUs).
func (l *Ledger) HealthyGPUs(d DomainID) int {
	if n := l.healthy[d]; n != inside {
		return int(n)
	}
	return l.insideHealthy(d)
}

// HostFreeGPUs returns the number of free allocatable GPUs on host h. O(1).
func (l *Ledger) HostFreeGPUs(h HostID) int { return int(l.freeWhole[l.c.hosts[h].domain]) }

// CPUFree returns the unallocated CPU of host h in milli-cores.
func (l *Ledger) CPUFree(h HostID) int64 { return l.cpuFree[h] }

// MemoryFree returns the unallocated memory of host h in MiB.
func (l *Ledger) MemoryFree(h HostID) int64 { return l.memFree[h] }

// GPUStatus is the occupancy of one GPU.
type GPUStatus struct {
	Mode      GPUMode
	UsedMilli int    // 0..1000
	MIGSlots  uint16 // occupied MIG slots, bit i = slot i; above the model's slots, its exclusive resources held (MIGProfile.Mask)
	Health    Health // the GPU's own health (see HostHealth for its host)
}

// GPU returns the occupancy of GPU g.
func (l *Ledger) GPU(g GPUID) GPUStatus { return statusOf(l.gpu[g]) }

// statusOf is a GPU's state as GPU reports it.
func statusOf(s gpuState) GPUStatus {
	return GPUStatus{Mode: s.mode, UsedMilli: int(s.used), MIGSlots: s.mig, Health: s.health}
}

// GPUFreeMilli returns the free milli-GPU of g, or 0 if g is not
// allocatable (unhealthy, or on an unhealthy host).
func (l *Ledger) GPUFreeMilli(g GPUID) int {
	if !l.allocatable(g) {
		return 0
	}
	return MilliPerGPU - int(l.gpu[g].used)
}

// GPUIsFree reports whether g is allocatable and has nothing allocated.
func (l *Ledger) GPUIsFree(g GPUID) bool {
	return l.allocatable(g) && l.gpu[g].mode == ModeFree
}

// GPUIsIdle reports whether g is healthy with nothing allocated, whatever
// its host's health and cordon: GPUIsFree(g) is GPUIsIdle(g) and
// HostUsable of g's host. For callers that check a host's GPUs after the
// host once.
func (l *Ledger) GPUIsIdle(g GPUID) bool {
	s := &l.gpu[g]
	return s.health == Healthy && s.mode == ModeFree
}

// HostHealth returns the health of host h.
func (l *Ledger) HostHealth(h HostID) Health { return l.hostHealth[h] }

func (l *Ledger) allocatable(g GPUID) bool {
	return l.gpu[g].health == Healthy && l.HostUsable(l.c.gpus[g].host)
}

// contrib is what one GPU adds to the counters of its domains.
func (l *Ledger) contrib(g GPUID) (free int32, milli int64, ok int32) {
	if !l.allocatable(g) {
		return 0, 0, 0
	}
	s := &l.gpu[g]
	if s.mode == ModeFree {
		free = 1
	}
	return free, int64(MilliPerGPU - int(s.used)), 1
}

// touchShared marks g for the shared-GPU index, which a slim ledger (an
// Occupancy's) does not keep.
func (l *Ledger) touchShared(g GPUID) {
	if !l.slim {
		l.idx.touchShared(g)
	}
}

// adjust adds deltas to every domain containing g (its tree ancestors and
// fabric domain) and marks changed index entries.
func (l *Ledger) adjust(g GPUID, dFree int32, dMilli int64, dOK int32) {
	if l.slim {
		return
	}
	l.count(g, dFree, dMilli, dOK)
	if dFree != 0 {
		l.touchGPU(g)
	}
}

// count adds deltas to the counters of the domains containing g from its
// host up (those inside the host keep none) and of its fabric domain;
// while a claim is batched, those of the domains from g's host up are
// gathered in l.batch instead (endClaim applies them).
func (l *Ledger) count(g GPUID, dFree int32, dMilli int64, dOK int32) {
	c := l.c
	x := &c.gpus[g]
	if b := &l.batch; b.on {
		b.gpu = g
		b.free += dFree
		b.milli += dMilli
		b.ok += dOK
		if x.fabric != NoDomain {
			l.batchFabric(x.fabric, dFree, dMilli, dOK)
		}
		return
	}
	end := x.ancLo + x.ancN
	anc := c.anc[end-l.sharedAnc() : end]
	for _, d := range anc {
		l.freeWhole[d] += dFree
		l.freeMilli[d] += dMilli
	}
	if x.fabric != NoDomain {
		l.freeWhole[x.fabric] += dFree
		l.freeMilli[x.fabric] += dMilli
	}
	if dOK != 0 {
		l.ownHealthy()
		for _, d := range anc {
			l.healthy[d] += dOK
		}
		if x.fabric != NoDomain {
			l.healthy[x.fabric] += dOK
		}
	}
}

// ownHealthy gives l its own copy of healthy before a write if it may be
// shared with another ledger.
func (l *Ledger) ownHealthy() {
	if l.healthyShared {
		l.healthy = append([]int32(nil), l.healthy...)
		l.healthyShared = false
	}
}

// Sentinel reasons carried by *AllocError.
var (
	ErrGPUBusy        = errors.New("GPU busy")
	ErrUnhealthy      = errors.New("not healthy")
	ErrNoCPU          = errors.New("not enough CPU")
	ErrNoMemory       = errors.New("not enough memory")
	ErrShareTooLarge  = errors.New("share does not fit")
	ErrMIGUnsupported = errors.New("MIG not supported")
	ErrMIGPlacement   = errors.New("illegal MIG placement")
	ErrMIGSlotBusy    = errors.New("MIG slots busy")
	ErrBadClaim       = errors.New("malformed claim")
	ErrNotAllocated   = errors.New("not allocated")
	ErrCordoned       = errors.New("host cordoned")
)

// AllocError says which claim failed, on which host and GPU, and why. Err
// is one of the sentinel errors above.
type AllocError struct {
	Op     string // "allocate" or "release"
	Claim  int    // index of the failing claim
	Host   HostID
	GPU    GPUID // NoGPU when the host itself was at fault
	Err    error
	Detail string
	name   string
}

// Error names the operation, the GPU or host, and the reason.
func (e *AllocError) Error() string {
	s := e.Op + " " + e.name + ": " + e.Err.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns the sentinel reason.
func (e *AllocError) Unwrap() error { return e.Err }

func (l *Ledger) fail(op string, ci int, h HostID, g GPUID, err error, format string, args ...any) *AllocError {
	e := &AllocError{Op: op, Claim: ci, Host: h, GPU: g, Err: err, Detail: fmt.Sprintf(format, args...)}
	switch {
	case g >= 0 && int(g) < len(l.c.gpus):
		e.name = l.c.GPUName(g)
	case h >= 0 && int(h) < len(l.c.hosts):
		e.name = l.c.hosts[h].name
	default:
		e.name = "host " + strconv.Itoa(int(h))
	}
	return e
}

// ClaimKind says what a GPUClaim takes from a GPU.
type ClaimKind uint8

// Claim kinds.
const (
	ClaimWhole ClaimKind = iota // the whole GPU, exclusively
	ClaimShare                  // Milli milli-GPU of a GPU in shared mode
	ClaimMIG                    // one MIG instance of Profile at slot Start
)

// GPUClaim is what one task takes from one GPU.
type GPUClaim struct {
	GPU     GPUID
	Kind    ClaimKind
	Milli   int32        // ClaimShare: 1..1000
	Profile MIGProfileID // ClaimMIG: index into the model's MIGProfiles
	Start   int8         // ClaimMIG: start slot, one of the profile's Starts
}

// Claim is what one task takes from one host: CPU, memory and GPUs.
type Claim struct {
	Host      HostID
	CPUMilli  int64
	MemoryMiB int64
	GPUs      []GPUClaim
}

// Equal reports whether c and o claim the same: host, CPU, memory and the
// same GPU claims in the same order.
func (c Claim) Equal(o Claim) bool {
	return c.Host == o.Host && c.CPUMilli == o.CPUMilli && c.MemoryMiB == o.MemoryMiB && slices.Equal(c.GPUs, o.GPUs)
}

// Allocate applies claims all or nothing: if any claim cannot be met, the
// ledger is left exactly as it was and an *AllocError says which claim, host
// or GPU failed and why. Claims are applied in order, so two claims of one
// call compete for the same capacity. It does not retain claims.
// O(claims × GPUs × tree depth); no allocations on success.
func (l *Ledger) Allocate(claims ...Claim) error {
	for ci := range claims {
		if err := l.applyClaim(ci, &claims[ci], true); err != nil {
			for j := ci - 1; j >= 0; j-- {
				l.undoClaim(&claims[j], len(claims[j].GPUs))
			}
			return err
		}
	}
	l.gen++
	return nil
}

// Release returns what claims took, all or nothing: if any claim was not
// allocated as described, the ledger is left unchanged and an *AllocError
// says why. Releasing works on unhealthy GPUs and hosts.
func (l *Ledger) Release(claims ...Claim) error {
	for ci := range claims {
		if err := l.releaseClaim(ci, &claims[ci]); err != nil {
			for j := ci - 1; j >= 0; j-- {
				l.redoClaim(&claims[j])
			}
			return err
		}
	}
	l.gen++
	return nil
}

// AllocateGPU takes GPU g whole, with no CPU or memory. O(tree depth), no
// allocations.
func (l *Ledger) AllocateGPU(g GPUID) error {
	if g < 0 || int(g) >= len(l.gpu) {
		return l.fail("allocate", 0, NoHost, NoGPU, ErrBadClaim, "GPU id %d out of range", g)
	}
	l.preserve(l.c.gpus[g].host)
	if err := l.takeGPU(0, GPUClaim{GPU: g}, true); err != nil {
		return err
	}
	l.gen++
	return nil
}

// ReleaseGPU returns a whole GPU taken by AllocateGPU or a ClaimWhole.
func (l *Ledger) ReleaseGPU(g GPUID) error {
	if g < 0 || int(g) >= len(l.gpu) {
		return l.fail("release", 0, NoHost, NoGPU, ErrBadClaim, "GPU id %d out of range", g)
	}
	l.preserve(l.c.gpus[g].host)
	if err := l.giveGPU(0, GPUClaim{GPU: g}); err != nil {
		return err
	}
	l.gen++
	return nil
}

// applyClaim takes one claim of Allocate (claims[ci]) after checking it,
// all or nothing. With health false (TrialRestore) it skips the health
// checks of the host and its GPUs.
func (l *Ledger) applyClaim(ci int, cl *Claim, health bool) error {
	h := cl.Host
	if h < 0 || int(h) >= len(l.c.hosts) {
		return l.fail("allocate", ci, h, NoGPU, ErrBadClaim, "host id %d out of range", h)
	}
	if cl.CPUMilli < 0 || cl.MemoryMiB < 0 {
		return l.fail("allocate", ci, h, NoGPU, ErrBadClaim, "negative CPU or memory")
	}
	l.preserve(h)
	if health && l.hostHealth[h] != Healthy {
		return l.fail("allocate", ci, h, NoGPU, ErrUnhealthy, "host is %s", l.hostHealth[h])
	}
	if health && l.cordoned[h] {
		return l.fail("allocate", ci, h, NoGPU, ErrCordoned, "")
	}
	if cl.CPUMilli > l.cpuFree[h] {
		return l.fail("allocate", ci, h, NoGPU, ErrNoCPU, "needs %d milli-cores, %d free", cl.CPUMilli, l.cpuFree[h])
	}
	if cl.MemoryMiB > l.memFree[h] {
		return l.fail("allocate", ci, h, NoGPU, ErrNoMemory, "needs %d MiB, %d free", cl.MemoryMiB, l.memFree[h])
	}
	usable := l.HostUsable(h)
	first, n := l.c.hosts[h].gpuLo, uint(l.c.hosts[h].nGPU) // h's GPUs: first … first+n-1
	l.beginClaim()
	for gi := range cl.GPUs {
		gc := cl.GPUs[gi]
		if uint(gc.GPU-first) >= n {
			l.undoClaimGPUs(cl, gi)
			l.endClaim()
			return l.fail("allocate", ci, h, NoGPU, ErrBadClaim, "GPU id %d is not on host %s", gc.GPU, l.c.hosts[h].name)
		}
		if gc.Kind == ClaimWhole && usable && l.takeWhole(gc.GPU) {
			continue
		}
		if err := l.takeGPU(ci, gc, health); err != nil {
			l.undoClaimGPUs(cl, gi)
			l.endClaim()
			return err
		}
	}
	l.endClaim()
	l.cpuFree[h] -= cl.CPUMilli
	l.memFree[h] -= cl.MemoryMiB
	l.bumpHost(h)
	return nil
}

// undoClaim reverses a fully applied claim (n = len(GPUs)).
func (l *Ledger) undoClaim(cl *Claim, n int) {
	l.bumpHost(cl.Host)
	l.cpuFree[cl.Host] += cl.CPUMilli
	l.memFree[cl.Host] += cl.MemoryMiB
	l.undoClaimGPUs(cl, n)
}

func (l *Ledger) undoClaimGPUs(cl *Claim, n int) {
	for gi := n - 1; gi >= 0; gi-- {
		if err := l.giveGPU(0, cl.GPUs[gi]); err != nil {
			panic("topology: ledger undo failed: " + err.Error())
		}
	}
}

func (l *Ledger) releaseClaim(ci int, cl *Claim) error {
	h := cl.Host
	if h < 0 || int(h) >= len(l.c.hosts) {
		return l.fail("release", ci, h, NoGPU, ErrBadClaim, "host id %d out of range", h)
	}
	if cl.CPUMilli < 0 || cl.MemoryMiB < 0 {
		return l.fail("release", ci, h, NoGPU, ErrBadClaim, "negative CPU or memory")
	}
	l.preserve(h)
	if l.cpuFree[h]+cl.CPUMilli > l.c.hosts[h].cpuMilli {
		return l.fail("release", ci, h, NoGPU, ErrNotAllocated, "releasing %d milli-cores, only %d allocated",
			cl.CPUMilli, l.c.hosts[h].cpuMilli-l.cpuFree[h])
	}
	if l.memFree[h]+cl.MemoryMiB > l.c.hosts[h].memMiB {
		return l.fail("release", ci, h, NoGPU, ErrNotAllocated, "releasing %d MiB, only %d allocated",
			cl.MemoryMiB, l.c.hosts[h].memMiB-l.memFree[h])
	}
	usable := l.HostUsable(h)
	first, n := l.c.hosts[h].gpuLo, uint(l.c.hosts[h].nGPU) // h's GPUs: first … first+n-1
	l.beginClaim()
	for gi := range cl.GPUs {
		gc := cl.GPUs[gi]
		var err error
		switch {
		case uint(gc.GPU-first) >= n:
			err = l.fail("release", ci, h, NoGPU, ErrBadClaim, "GPU id %d is not on host %s", gc.GPU, l.c.hosts[h].name)
		case gc.Kind == ClaimWhole && l.giveWhole(gc.GPU, usable):
		default:
			err = l.giveGPU(ci, gc)
		}
		if err != nil {
			for j := gi - 1; j >= 0; j-- {
				if e := l.takeGPU(0, cl.GPUs[j], false); e != nil {
					panic("topology: ledger redo failed: " + e.Error())
				}
			}
			l.endClaim()
			return err
		}
	}
	l.endClaim()
	l.cpuFree[h] += cl.CPUMilli
	l.memFree[h] += cl.MemoryMiB
	l.bumpHost(h)
	return nil
}

// redoClaim re-applies a released claim during rollback, ignoring health.
func (l *Ledger) redoClaim(cl *Claim) {
	l.bumpHost(cl.Host)
	l.cpuFree[cl.Host] -= cl.CPUMilli
	l.memFree[cl.Host] -= cl.MemoryMiB
	for gi := range cl.GPUs {
		if err := l.takeGPU(0, cl.GPUs[gi], false); err != nil {
			panic("topology: ledger redo failed: " + err.Error())
		}
	}
}

// takeGPU applies one GPU claim. With health, the GPU must be allocatable
// (it and its host healthy); without, it may be unhealthy (re-applying a
// claim that was just released: rollback of Release, TrialRestore).
func (l *Ledger) takeGPU(ci int, gc GPUClaim, health bool) error {
	g := gc.GPU
	if health && !l.allocatable(g) {
		h := l.c.gpus[g].host
		if l.gpu[g].health != Healthy {
			return l.fail("allocate", ci, h, g, ErrUnhealthy, "GPU is %s", l.gpu[g].health)
		}
		if l.hostHealth[h] == Healthy {
			return l.fail("allocate", ci, h, g, ErrCordoned, "")
		}
		return l.fail("allocate", ci, h, g, ErrUnhealthy, "host is %s", l.hostHealth[h])
	}
	if err := l.checkTake(ci, gc); err != nil {
		return err
	}
	l.apply(gc)
	return nil
}

// takeWhole is takeGPU's fast path for a whole-GPU claim on a usable host
// (checked by the caller, once per claim): a healthy free GPU goes from
// contributing (1 free, 1000 milli, 1 allocatable) to (0, 0, 1). It
// reports false, changing nothing, for any other GPU; takeGPU then takes
// it or says why not. The caller bumps the host's stamp.
func (l *Ledger) takeWhole(g GPUID) bool {
	s := &l.gpu[g]
	if s.mode != ModeFree || s.health != Healthy {
		return false
	}
	s.mode, s.used = ModeWhole, MilliPerGPU
	if !l.slim {
		l.count(g, -1, -MilliPerGPU, 0)
		l.touchGPU(g)
	}
	return true
}

// giveWhole is giveGPU's fast path for a whole-GPU claim: a GPU held whole
// is freed, and counted free again when it is allocatable (healthy, on a
// host that is usable, which the caller says). It reports false, changing
// nothing, for a GPU not held whole; giveGPU then says why. The caller
// bumps the host's stamp.
func (l *Ledger) giveWhole(g GPUID, usable bool) bool {
	s := &l.gpu[g]
	if s.mode != ModeWhole {
		return false
	}
	s.mode, s.used = ModeFree, 0
	if !l.slim && usable && s.health == Healthy {
		l.count(g, 1, MilliPerGPU, 0)
		l.touchGPU(g)
	}
	return true
}

func (l *Ledger) checkTake(ci int, gc GPUClaim) error {
	g := gc.GPU
	s := &l.gpu[g]
	h := l.c.gpus[g].host
	switch gc.Kind {
	case ClaimWhole:
		if s.mode != ModeFree {
			return l.fail("allocate", ci, h, g, ErrGPUBusy, "GPU is %s, %d/1000 milli used", s.mode, s.used)
		}
	case ClaimShare:
		if gc.Milli <= 0 || gc.Milli > MilliPerGPU {
			return l.fail("allocate", ci, h, g, ErrBadClaim, "share of %d milli outside 1..1000", gc.Milli)
		}
		if s.mode != ModeFree && s.mode != ModeShared {
			return l.fail("allocate", ci, h, g, ErrGPUBusy, "GPU is %s", s.mode)
		}
		if int32(s.used)+gc.Milli > MilliPerGPU {
			return l.fail("allocate", ci, h, g, ErrShareTooLarge, "needs %d milli, %d free", gc.Milli, MilliPerGPU-int(s.used))
		}
	case ClaimMIG:
		m := l.c.hosts[h].model
		if m == NoModel || l.c.models[m].MIGSlots == 0 {
			return l.fail("allocate", ci, h, g, ErrMIGUnsupported, "model has no MIG profiles")
		}
		acc := &l.c.models[m]
		if gc.Profile < 0 || int(gc.Profile) >= len(acc.MIGProfiles) {
			return l.fail("allocate", ci, h, g, ErrBadClaim, "MIG profile %d out of range", gc.Profile)
		}
		p := &acc.MIGProfiles[gc.Profile]
		legal := false
		for _, st := range p.Starts {
			if st == int(gc.Start) {
				legal = true
				break
			}
		}
		if !legal {
			return l.fail("allocate", ci, h, g, ErrMIGPlacement, "profile %s cannot start at slot %d (legal: %v)", p.Name, gc.Start, p.Starts)
		}
		if s.mode != ModeFree && s.mode != ModeMIG {
			return l.fail("allocate", ci, h, g, ErrGPUBusy, "GPU is %s", s.mode)
		}
		mask := p.Mask(int(gc.Start))
		if s.mig&mask&slotBits(acc.MIGSlots) != 0 {
			return l.fail("allocate", ci, h, g, ErrMIGSlotBusy, "profile %s at slot %d overlaps slots %016b", p.Name, gc.Start, s.mig)
		}
		if s.mig&mask != 0 {
			return l.fail("allocate", ci, h, g, ErrMIGSlotBusy, "profile %s: the GPU's %s are held by another instance", p.Name, p.Exclusive)
		}
	default:
		return l.fail("allocate", ci, h, g, ErrBadClaim, "unknown claim kind %d", gc.Kind)
	}
	return nil
}

// slotBits is the mask of a model's slots, without the bits of its
// exclusive resources above them.
func slotBits(slots int) uint16 { return uint16(1<<slots - 1) }

// migUsed is the milli-GPU counted for a MIG slot mask.
func migUsed(mask uint16, slots int) int16 {
	return int16(bits.OnesCount16(mask&slotBits(slots)) * MilliPerGPU / slots)
}

// apply changes the state of a GPU for a checked claim and updates counters.
func (l *Ledger) apply(gc GPUClaim) {
	g := gc.GPU
	f0, m0, o0 := l.contrib(g)
	s := &l.gpu[g]
	switch gc.Kind {
	case ClaimWhole:
		s.mode, s.used = ModeWhole, MilliPerGPU
	case ClaimShare:
		s.mode = ModeShared
		s.used += int16(gc.Milli)
	case ClaimMIG:
		acc := &l.c.models[l.c.hosts[l.c.gpus[g].host].model]
		s.mode = ModeMIG
		s.mig |= acc.MIGProfiles[gc.Profile].Mask(int(gc.Start))
		s.used = migUsed(s.mig, acc.MIGSlots)
	}
	f1, m1, o1 := l.contrib(g)
	l.adjust(g, f1-f0, m1-m0, o1-o0)
	l.bumpHost(l.c.gpus[g].host)
	if gc.Kind == ClaimShare {
		l.touchShared(g)
	}
}

// giveGPU reverses one GPU claim.
func (l *Ledger) giveGPU(ci int, gc GPUClaim) error {
	g := gc.GPU
	s := &l.gpu[g]
	h := l.c.gpus[g].host
	var mask uint16
	switch gc.Kind {
	case ClaimWhole:
		if s.mode != ModeWhole {
			return l.fail("release", ci, h, g, ErrNotAllocated, "GPU is %s, not held whole", s.mode)
		}
	case ClaimShare:
		if s.mode != ModeShared || gc.Milli <= 0 || int32(s.used) < gc.Milli {
			return l.fail("release", ci, h, g, ErrNotAllocated, "releasing a %d milli share; GPU is %s with %d milli used", gc.Milli, s.mode, s.used)
		}
	case ClaimMIG:
		m := l.c.hosts[h].model
		if s.mode != ModeMIG || m == NoModel || gc.Profile < 0 || int(gc.Profile) >= len(l.c.models[m].MIGProfiles) {
			return l.fail("release", ci, h, g, ErrNotAllocated, "no such MIG instance; GPU is %s", s.mode)
		}
		p := &l.c.models[m].MIGProfiles[gc.Profile]
		if !slices.Contains(p.Starts, int(gc.Start)) {
			// No instance of the profile can be there; releasing its slots
			// would also break the rollback, which re-takes them.
			return l.fail("release", ci, h, g, ErrNotAllocated, "profile %s has no instance at slot %d (legal: %v)", p.Name, gc.Start, p.Starts)
		}
		mask = p.Mask(int(gc.Start))
		if s.mig&mask != mask {
			return l.fail("release", ci, h, g, ErrNotAllocated, "MIG slots %016b not all held (held %016b)", mask, s.mig)
		}
	default:
		return l.fail("release", ci, h, g, ErrBadClaim, "unknown claim kind %d", gc.Kind)
	}
	f0, m0, o0 := l.contrib(g)
	switch gc.Kind {
	case ClaimWhole:
		s.mode, s.used = ModeFree, 0
	case ClaimShare:
		s.used -= int16(gc.Milli)
		if s.used == 0 {
			s.mode = ModeFree
		}
		l.touchShared(g)
	case ClaimMIG:
		s.mig &^= mask
		s.used = migUsed(s.mig, l.c.models[l.c.hosts[h].model].MIGSlots)
		if s.mig == 0 {
			s.mode = ModeFree
		}
	}
	f1, m1, o1 := l.contrib(g)
	l.adjust(g, f1-f0, m1-m0, o1-o0)
	l.bumpHost(h)
	return nil
}

// SetGPUHealth sets the health of GPU g. Work on it stays allocated until
// released; a GPU that is not Healthy takes no new work and leaves the free
// counters.
func (l *Ledger) SetGPUHealth(g GPUID, h Health) error {
	if g < 0 || int(g) >= len(l.gpu) {
		return fmt.Errorf("topology: GPU id %d out of range", g)
	}
	if h > Failed {
		return fmt.Errorf("topology: bad health %d", h)
	}
	if host := l.c.gpus[g].host; l.c.Removed(host) {
		return fmt.Errorf("topology: GPU %s: host %s was removed", l.c.GPUName(g), l.c.hosts[host].name)
	}
	if l.gpu[g].health == h {
		return nil
	}
	l.preserve(l.c.gpus[g].host)
	f0, m0, o0 := l.contrib(g)
	l.gpu[g].health = h
	f1, m1, o1 := l.contrib(g)
	l.adjust(g, f1-f0, m1-m0, o1-o0)
	l.bumpHost(l.c.gpus[g].host)
	l.idx.touchShared(g)
	l.gen++
	return nil
}

// SetHostHealth sets the health of host h and so of all its GPUs for
// allocation purposes. O(GPUs of the host × tree depth).
func (l *Ledger) SetHostHealth(h HostID, hh Health) error {
	if h < 0 || int(h) >= len(l.hostHealth) {
		return fmt.Errorf("topology: host id %d out of range", h)
	}
	if hh > Failed {
		return fmt.Errorf("topology: bad health %d", hh)
	}
	if l.c.Removed(h) {
		return fmt.Errorf("topology: host %s was removed", l.c.hosts[h].name)
	}
	if l.hostHealth[h] == hh {
		return nil
	}
	l.flipHost(h, func() { l.hostHealth[h] = hh })
	return nil
}

// flipHost applies a change of host h's state that may change which of
// its GPUs are allocatable: it takes the host's GPUs out of the counters,
// flips, and puts them back. O(GPUs of the host × tree depth).
func (l *Ledger) flipHost(h HostID, flip func()) {
	l.preserve(h)
	x := &l.c.hosts[h]
	for g := x.gpuLo; g < x.gpuLo+GPUID(x.nGPU); g++ {
		f, m, o := l.contrib(g)
		l.adjust(g, -f, -m, -o)
	}
	flip()
	for g := x.gpuLo; g < x.gpuLo+GPUID(x.nGPU); g++ {
		f, m, o := l.contrib(g)
		l.adjust(g, f, m, o)
		l.idx.touchShared(g)
	}
	l.idx.touchHost(h, l.c.hosts[h].parent)
	l.bumpHost(h)
	l.gen++
}

// Check recomputes every counter and index from the per-GPU state and
// compares them with the incrementally kept ones. It returns nil when they
// agree. O(GPUs × tree depth + domains log domains); for tests and audits.
func (l *Ledger) Check() error {
	c := l.c
	free := make([]int32, len(c.domains))
	milli := make([]int64, len(c.domains))
	ok := make([]int32, len(c.domains))
	for gi := range l.gpu {
		g := GPUID(gi)
		s := l.gpu[g]
		if s.used < 0 || s.used > MilliPerGPU {
			return fmt.Errorf("GPU %s: used %d milli out of range", c.GPUName(g), s.used)
		}
		switch s.mode {
		case ModeFree:
			if s.used != 0 || s.mig != 0 {
				return fmt.Errorf("GPU %s: free but used %d milli, MIG %b", c.GPUName(g), s.used, s.mig)
			}
		case ModeWhole:
			if s.used != MilliPerGPU || s.mig != 0 {
				return fmt.Errorf("GPU %s: whole but used %d milli", c.GPUName(g), s.used)
			}
		case ModeShared:
			if s.used <= 0 || s.mig != 0 {
				return fmt.Errorf("GPU %s: shared with used %d milli", c.GPUName(g), s.used)
			}
		case ModeMIG:
			m := c.hosts[c.gpus[g].host].model
			if m == NoModel || c.models[m].MIGSlots == 0 || s.mig == 0 || s.used != migUsed(s.mig, c.models[m].MIGSlots) {
				return fmt.Errorf("GPU %s: inconsistent MIG state %b, used %d", c.GPUName(g), s.mig, s.used)
			}
		default:
			return fmt.Errorf("GPU %s: bad mode %d", c.GPUName(g), s.mode)
		}
		f, m, o := l.contrib(g)
		for _, d := range c.Ancestors(g) {
			free[d] += f
			milli[d] += m
			ok[d] += o
		}
		if fd := c.gpus[g].fabric; fd != NoDomain {
			free[fd] += f
			milli[fd] += m
			ok[fd] += o
		}
	}
	for d := range c.domains {
		if c.domains[d].level < 0 && (l.freeWhole[d] != inside || l.freeMilli[d] != inside || l.healthy[d] != inside) {
			return fmt.Errorf("domain %s: counters free=%d milli=%d healthy=%d kept inside a host, want none",
				c.DomainName(DomainID(d)), l.freeWhole[d], l.freeMilli[d], l.healthy[d])
		}
		id := DomainID(d)
		if f, m, o := l.FreeGPUs(id), l.FreeMilli(id), l.HealthyGPUs(id); int32(f) != free[d] || m != milli[d] || int32(o) != ok[d] {
			return fmt.Errorf("domain %s: counters free=%d milli=%d healthy=%d, recomputed %d %d %d",
				c.DomainName(id), f, m, o, free[d], milli[d], ok[d])
		}
	}
	for h := range c.hosts {
		x := &c.hosts[h]
		if l.cpuFree[h] < 0 || l.cpuFree[h] > x.cpuMilli {
			return fmt.Errorf("host %s: free CPU %d outside [0, %d]", x.name, l.cpuFree[h], x.cpuMilli)
		}
		if l.memFree[h] < 0 || l.memFree[h] > x.memMiB {
			return fmt.Errorf("host %s: free memory %d outside [0, %d]", x.name, l.memFree[h], x.memMiB)
		}
	}
	return l.idx.check(l)
}
