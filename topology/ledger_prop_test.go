package topology

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// This file tests the Ledger against a naive model on random clusters
// (specGen) and random sequences of allocations, releases, health changes,
// clones and queries.

// naiveGPUState is the model's view of one GPU.
type naiveGPUState struct {
	mode   GPUMode
	used   int
	mig    uint16
	health Health
}

// naiveLedger is the occupancy model: plain per-GPU and per-host state,
// every query answered by a scan.
type naiveLedger struct {
	c          *Cluster
	gpus       []naiveGPUState
	hostHealth []Health
	cordoned   []bool
	cpu, mem   []int64 // free
}

func newNaiveLedger(c *Cluster) *naiveLedger {
	n := &naiveLedger{c: c, gpus: make([]naiveGPUState, c.NumGPUs()), hostHealth: make([]Health, c.NumHosts()),
		cordoned: make([]bool, c.NumHosts()), cpu: make([]int64, c.NumHosts()), mem: make([]int64, c.NumHosts())}
	for h := range n.cpu {
		n.cpu[h], n.mem[h] = c.CPUMilli(HostID(h)), c.MemoryMiB(HostID(h))
	}
	return n
}

func (n *naiveLedger) clone() *naiveLedger {
	x := *n
	x.gpus = slices.Clone(n.gpus)
	x.hostHealth = slices.Clone(n.hostHealth)
	x.cordoned = slices.Clone(n.cordoned)
	x.cpu, x.mem = slices.Clone(n.cpu), slices.Clone(n.mem)
	return &x
}

func (n *naiveLedger) allocatable(g GPUID) bool {
	h := n.c.GPUHost(g)
	return n.gpus[g].health == Healthy && n.hostHealth[h] == Healthy && !n.cordoned[h]
}

func (n *naiveLedger) free(g GPUID) bool { return n.allocatable(g) && n.gpus[g].mode == ModeFree }

// naiveErr is the failure the model predicts.
type naiveErr struct {
	claim int
	gpu   GPUID
	err   error
}

func (n *naiveLedger) migModel(h HostID) *Accelerator {
	m := n.c.HostModel(h)
	if m == NoModel || n.c.Model(m).MIGSlots == 0 {
		return nil
	}
	return n.c.Model(m)
}

func naiveMask(start, size int) uint16 { return uint16((1<<size - 1) << start) }

// naiveProfileMask is what an instance of profile p of acc at start holds:
// its slots, and the bit of its exclusive resource, numbered from Slots up
// in the order the model's profiles first name them.
func naiveProfileMask(acc *Accelerator, p MIGProfile, start int) uint16 {
	mask := naiveMask(start, p.Size)
	if p.Exclusive == "" {
		return mask
	}
	var names []string
	for _, q := range acc.MIGProfiles {
		if q.Exclusive != "" && !slices.Contains(names, q.Exclusive) {
			names = append(names, q.Exclusive)
		}
	}
	return mask | 1<<(acc.MIGSlots+slices.Index(names, p.Exclusive))
}

// naiveUsed is the milli-GPU of a MIG mask: its slots, not its exclusive
// resources.
func naiveUsed(mask uint16, slots int) int {
	return bits.OnesCount16(mask&(1<<slots-1)) * 1000 / slots
}

// allocate applies claims all or nothing.
func (n *naiveLedger) allocate(claims []Claim) *naiveErr {
	w := n.clone()
	for ci, cl := range claims {
		h := cl.Host
		bad := func(g GPUID, err error) *naiveErr { return &naiveErr{ci, g, err} }
		switch {
		case h < 0 || int(h) >= n.c.NumHosts() || cl.CPUMilli < 0 || cl.MemoryMiB < 0:
			return bad(NoGPU, ErrBadClaim)
		case w.hostHealth[h] != Healthy:
			return bad(NoGPU, ErrUnhealthy)
		case w.cordoned[h]:
			return bad(NoGPU, ErrCordoned)
		case cl.CPUMilli > w.cpu[h]:
			return bad(NoGPU, ErrNoCPU)
		case cl.MemoryMiB > w.mem[h]:
			return bad(NoGPU, ErrNoMemory)
		}
		for _, gc := range cl.GPUs {
			g := gc.GPU
			if g < 0 || int(g) >= n.c.NumGPUs() || n.c.GPUHost(g) != h {
				return bad(NoGPU, ErrBadClaim)
			}
			if !w.allocatable(g) {
				return bad(g, ErrUnhealthy)
			}
			s := &w.gpus[g]
			switch gc.Kind {
			case ClaimWhole:
				if s.mode != ModeFree {
					return bad(g, ErrGPUBusy)
				}
				s.mode, s.used = ModeWhole, 1000
			case ClaimShare:
				switch {
				case gc.Milli < 1 || gc.Milli > 1000:
					return bad(g, ErrBadClaim)
				case s.mode != ModeFree && s.mode != ModeShared:
					return bad(g, ErrGPUBusy)
				case s.used+int(gc.Milli) > 1000:
					return bad(g, ErrShareTooLarge)
				}
				s.mode, s.used = ModeShared, s.used+int(gc.Milli)
			case ClaimMIG:
				acc := w.migModel(h)
				if acc == nil {
					return bad(g, ErrMIGUnsupported)
				}
				if gc.Profile < 0 || int(gc.Profile) >= len(acc.MIGProfiles) {
					return bad(g, ErrBadClaim)
				}
				p := acc.MIGProfiles[gc.Profile]
				if !slices.Contains(p.Starts, int(gc.Start)) {
					return bad(g, ErrMIGPlacement)
				}
				if s.mode != ModeFree && s.mode != ModeMIG {
					return bad(g, ErrGPUBusy)
				}
				mask := naiveProfileMask(acc, p, int(gc.Start))
				if s.mig&mask != 0 {
					return bad(g, ErrMIGSlotBusy)
				}
				s.mig |= mask
				s.mode, s.used = ModeMIG, naiveUsed(s.mig, acc.MIGSlots)
			default:
				return bad(g, ErrBadClaim)
			}
		}
		w.cpu[h] -= cl.CPUMilli
		w.mem[h] -= cl.MemoryMiB
	}
	*n = *w
	return nil
}

// release returns claims all or nothing, on any health.
func (n *naiveLedger) release(claims []Claim) *naiveErr {
	w := n.clone()
	for ci, cl := range claims {
		h := cl.Host
		bad := func(g GPUID, err error) *naiveErr { return &naiveErr{ci, g, err} }
		switch {
		case h < 0 || int(h) >= n.c.NumHosts() || cl.CPUMilli < 0 || cl.MemoryMiB < 0:
			return bad(NoGPU, ErrBadClaim)
		case w.cpu[h]+cl.CPUMilli > n.c.CPUMilli(h) || w.mem[h]+cl.MemoryMiB > n.c.MemoryMiB(h):
			return bad(NoGPU, ErrNotAllocated)
		}
		for _, gc := range cl.GPUs {
			g := gc.GPU
			if g < 0 || int(g) >= n.c.NumGPUs() || n.c.GPUHost(g) != h {
				return bad(NoGPU, ErrBadClaim)
			}
			s := &w.gpus[g]
			switch gc.Kind {
			case ClaimWhole:
				if s.mode != ModeWhole {
					return bad(g, ErrNotAllocated)
				}
				s.mode, s.used = ModeFree, 0
			case ClaimShare:
				if s.mode != ModeShared || gc.Milli <= 0 || s.used < int(gc.Milli) {
					return bad(g, ErrNotAllocated)
				}
				s.used -= int(gc.Milli)
				if s.used == 0 {
					s.mode = ModeFree
				}
			case ClaimMIG:
				acc := w.migModel(h)
				if s.mode != ModeMIG || acc == nil || gc.Profile < 0 || int(gc.Profile) >= len(acc.MIGProfiles) {
					return bad(g, ErrNotAllocated)
				}
				p := acc.MIGProfiles[gc.Profile]
				if !slices.Contains(p.Starts, int(gc.Start)) {
					return bad(g, ErrNotAllocated) // no instance can be there
				}
				mask := naiveProfileMask(acc, p, int(gc.Start))
				if s.mig&mask != mask {
					return bad(g, ErrNotAllocated)
				}
				s.mig &^= mask
				s.used = naiveUsed(s.mig, acc.MIGSlots)
				if s.mig == 0 {
					s.mode = ModeFree
				}
			default:
				return bad(g, ErrBadClaim)
			}
		}
		w.cpu[h] += cl.CPUMilli
		w.mem[h] += cl.MemoryMiB
	}
	*n = *w
	return nil
}

// state renders everything the model knows, in the ledger's terms.
func (n *naiveLedger) state() string {
	var o obs
	c := n.c
	for g := range n.gpus {
		s := n.gpus[g]
		freeMilli := 0
		if n.allocatable(GPUID(g)) {
			freeMilli = 1000 - s.used
		}
		o.str("gpu").num(g, int(s.mode), s.used, int(s.mig), int(s.health), freeMilli).flag(n.free(GPUID(g))).nl()
	}
	for h := range n.cpu {
		o.str("host").num(h, int(n.hostHealth[h]), int(n.cpu[h]), int(n.mem[h]), n.domainFree(c.HostDomain(HostID(h)))).nl()
	}
	for d := DomainID(0); int(d) < c.NumDomains(); d++ {
		free, milli, ok := 0, 0, 0
		for _, g := range c.DomainGPUs(d) {
			if n.allocatable(g) {
				ok++
				milli += 1000 - n.gpus[g].used
				if n.gpus[g].mode == ModeFree {
					free++
				}
			}
		}
		o.str("domain").num(int(d), free, milli, ok).nl()
	}
	return o.String()
}

func (n *naiveLedger) domainFree(d DomainID) int {
	free := 0
	for _, g := range n.c.DomainGPUs(d) {
		if n.free(g) {
			free++
		}
	}
	return free
}

// ledgerState renders what the ledger reports, like naiveLedger.state:
// per GPU mode, used milli, MIG slots, health, free milli, free; per host
// health, free CPU, memory and GPUs; per domain free GPUs, free milli,
// healthy GPUs.
func ledgerState(l *Ledger) string {
	var o obs
	c := l.Cluster()
	for g := GPUID(0); int(g) < c.NumGPUs(); g++ {
		s := l.GPU(g)
		o.str("gpu").num(int(g), int(s.Mode), s.UsedMilli, int(s.MIGSlots), int(s.Health), l.GPUFreeMilli(g)).flag(l.GPUIsFree(g)).nl()
		if l.GPUIsFree(g) != (l.GPUIsIdle(g) && l.HostUsable(c.GPUHost(g))) {
			o.str("GPUIsIdle and HostUsable disagree with GPUIsFree").nl() // the naive model never renders this
		}
	}
	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		o.str("host").num(int(h), int(l.HostHealth(h)), int(l.CPUFree(h)), int(l.MemoryFree(h)), l.HostFreeGPUs(h)).nl()
	}
	for d := DomainID(0); int(d) < c.NumDomains(); d++ {
		o.str("domain").num(int(d), l.FreeGPUs(d), int(l.FreeMilli(d)), l.HealthyGPUs(d)).nl()
	}
	return o.String()
}

// obs accumulates an observation as text; faster than fmt, which would
// dominate the property test's run time.
type obs struct{ b []byte }

func (o *obs) str(s string) *obs { o.b = append(o.b, s...); return o }

func (o *obs) num(v ...int) *obs {
	for _, x := range v {
		o.b = append(o.b, ' ')
		o.b = strconv.AppendInt(o.b, int64(x), 10)
	}
	return o
}

func (o *obs) flag(v bool) *obs {
	o.b = append(o.b, ' ')
	o.b = strconv.AppendBool(o.b, v)
	return o
}

func (o *obs) nl() { o.b = append(o.b, '\n') }

func (o *obs) String() string { return string(o.b) }

// rawState is the ledger's own state, for byte-for-byte comparisons.
type rawState struct {
	gpu                []gpuState
	hostHealth         []Health
	cpu, mem           []int64
	freeWhole, healthy []int32
	freeMilli          []int64
	gen                uint64
}

func rawOf(l *Ledger) rawState {
	return rawState{slices.Clone(l.gpu), slices.Clone(l.hostHealth), slices.Clone(l.cpuFree), slices.Clone(l.memFree),
		slices.Clone(l.freeWhole), slices.Clone(l.healthy), slices.Clone(l.freeMilli), l.gen}
}

// bigK is a count beyond any 32-bit counter (the largest int on a 32-bit
// platform).
const bigK = min(1<<32+1, math.MaxInt)

// The arguments the query checks try.
var (
	queryKs      = []int{-1, 0, 1, 2, 3, 4, 8, 9, 300, bigK}
	queryMinFree = []int{-1, 0, 1, 3}
	queryMilli   = []int{-1, 0, 1, 250, 500, 999, 1000, 1001}
)

// queryDomains are the domains BestHost and AscendHosts are asked about:
// the root, every network domain and a few hosts.
func queryDomains(c *Cluster) []DomainID {
	ds := []DomainID{c.Root()}
	for l := LevelHost + 1; l < c.LevelCluster(); l++ {
		ds = append(ds, c.DomainsAt(l)...)
	}
	for h := 0; h < c.NumHosts() && h < 4; h++ {
		ds = append(ds, c.HostDomain(HostID(h)))
	}
	return ds
}

func queryModels(c *Cluster) []ModelID {
	ms := []ModelID{NoModel}
	for m := range c.Models() {
		ms = append(ms, ModelID(m))
	}
	return ms
}

// answers renders the answers of every query. It refreshes the ledger's
// indexes; pass a Clone to leave l as it is.
func answers(l *Ledger) string {
	var o obs
	c := l.Cluster()
	item := func(id, free int) bool { o.num(id, free); return true }
	for _, d := range queryDomains(c) {
		for _, m := range queryModels(c) {
			for _, k := range queryKs {
				h, ok := l.BestHost(d, k, m)
				o.str("BestHost").num(int(d), k, int(m), int(h)).flag(ok).nl()
			}
			for _, k := range queryMinFree {
				o.str("AscendHosts").num(int(d), int(m), k).str(" =")
				l.AscendHosts(d, m, k, func(h HostID, free int) bool { return item(int(h), free) })
				o.nl()
			}
		}
		// Stopping early yields a prefix.
		o.str("AscendHosts first two").num(int(d)).str(" =")
		n := 0
		l.AscendHosts(d, NoModel, 0, func(h HostID, free int) bool {
			item(int(h), free)
			n++
			return n < 2
		})
		o.nl()
	}
	for lv := Level(-1); lv <= c.LevelCluster()+1; lv++ {
		for _, k := range append(slices.Clone(queryMinFree), bigK) {
			o.str("AscendDomains").num(int(lv), k).str(" =")
			l.AscendDomains(lv, k, func(d DomainID, free int) bool { return item(int(d), free) })
			o.nl()
		}
		for _, k := range queryKs {
			d, ok := l.BestDomain(lv, k)
			o.str("BestDomain").num(int(lv), k, int(d)).flag(ok).nl()
		}
		d, free := l.MaxFreeDomain(lv)
		o.str("MaxFreeDomain").num(int(lv), int(d), free).nl()
	}
	for _, m := range queryModels(c) {
		for _, k := range queryMilli {
			o.str("AscendSharedGPUs").num(int(m), k).str(" =")
			l.AscendSharedGPUs(m, k, func(g GPUID, free int) bool { return item(int(g), free) })
			o.nl()
		}
	}
	return o.String()
}

type hostFree struct {
	h     HostID
	free  int
	group int
}

// ascendHosts lists, by brute force, what AscendHosts documents: hosts
// under d of model m with at least minFree free GPUs, ascending by (free,
// ID), grouped by innermost network domain under an outer network domain
// and by model under the root when m is NoModel and there are networks.
func (n *naiveLedger) ascendHosts(d DomainID, m ModelID, minFree int) []hostFree {
	c := n.c
	minFree = max(minFree, 0)
	if minFree > MaxGPUsPerHost {
		return nil
	}
	info := c.Domain(d)
	var out []hostFree
	for h := info.FirstHost; h < info.EndHost; h++ {
		_, nGPU := c.HostGPUs(h)
		if nGPU == 0 || m != NoModel && c.HostModel(h) != m {
			continue
		}
		free := n.domainFree(c.HostDomain(h))
		if free < minFree {
			continue
		}
		group := 0
		switch {
		case info.Kind == KindCluster && m == NoModel && c.NumLevels() > 3:
			group = int(c.HostModel(h))
		case info.Kind == KindNetwork && info.Level > LevelHost+1:
			group = int(c.HostAt(h, LevelHost+1))
		}
		out = append(out, hostFree{h, free, group})
	}
	slices.SortFunc(out, func(a, b hostFree) int {
		if a.group != b.group {
			return a.group - b.group
		}
		if a.free != b.free {
			return a.free - b.free
		}
		return int(a.h - b.h)
	})
	return out
}

// bestHost is the best fit under d: fewest free GPUs among hosts with at
// least k, ties to the lowest ID, over all groups.
func (n *naiveLedger) bestHost(d DomainID, k int, m ModelID) (HostID, bool) {
	best := hostFree{h: NoHost}
	for _, x := range n.ascendHosts(d, m, k) {
		if best.h == NoHost || x.free < best.free || x.free == best.free && x.h < best.h {
			best = x
		}
	}
	return best.h, best.h != NoHost
}

type domFree struct {
	d    DomainID
	free int
}

func (n *naiveLedger) levelDomains(lv Level) []domFree {
	var out []domFree
	for _, d := range n.c.DomainsAt(lv) {
		out = append(out, domFree{d, n.domainFree(d)})
	}
	return out
}

// answers renders what the queries should answer, by brute force.
func (n *naiveLedger) answers() string {
	var o obs
	c := n.c
	for _, d := range queryDomains(c) {
		for _, m := range queryModels(c) {
			for _, k := range queryKs {
				h, ok := n.bestHost(d, k, m)
				o.str("BestHost").num(int(d), k, int(m), int(h)).flag(ok).nl()
			}
			for _, k := range queryMinFree {
				o.str("AscendHosts").num(int(d), int(m), k).str(" =")
				for _, x := range n.ascendHosts(d, m, k) {
					o.num(int(x.h), x.free)
				}
				o.nl()
			}
		}
		o.str("AscendHosts first two").num(int(d)).str(" =")
		for i, x := range n.ascendHosts(d, NoModel, 0) {
			if i < 2 {
				o.num(int(x.h), x.free)
			}
		}
		o.nl()
	}
	for lv := Level(-1); lv <= c.LevelCluster()+1; lv++ {
		var all []domFree // at LevelHost in AscendHosts order under the root
		switch {
		case lv == LevelHost:
			for _, x := range n.ascendHosts(c.Root(), NoModel, 0) {
				all = append(all, domFree{c.HostDomain(x.h), x.free})
			}
		case lv >= 0 && lv <= c.LevelCluster():
			all = n.levelDomains(lv)
			slices.SortFunc(all, func(a, b domFree) int {
				if a.free != b.free {
					return a.free - b.free
				}
				return int(a.d - b.d)
			})
		}
		for _, k := range append(slices.Clone(queryMinFree), bigK) {
			o.str("AscendDomains").num(int(lv), k).str(" =")
			for _, x := range all {
				if x.free >= k {
					o.num(int(x.d), x.free)
				}
			}
			o.nl()
		}
		for _, k := range queryKs {
			d, ok := NoDomain, false
			if lv == LevelHost {
				var h HostID
				if h, ok = n.bestHost(c.Root(), k, NoModel); ok {
					d = c.HostDomain(h)
				}
			} else {
				for _, x := range all {
					if x.free >= k {
						d, ok = x.d, true
						break
					}
				}
			}
			o.str("BestDomain").num(int(lv), k, int(d)).flag(ok).nl()
		}
		// The most free GPUs, ties to the highest ID.
		maxD, maxFree := NoDomain, 0
		for _, x := range all {
			if maxD == NoDomain || x.free > maxFree || x.free == maxFree && x.d > maxD {
				maxD, maxFree = x.d, x.free
			}
		}
		o.str("MaxFreeDomain").num(int(lv), int(maxD), maxFree).nl()
	}
	for _, m := range queryModels(c) {
		for _, k := range queryMilli {
			o.str("AscendSharedGPUs").num(int(m), k).str(" =")
			var gs []domFree
			for g := GPUID(0); int(g) < c.NumGPUs() && k <= 1000; g++ {
				s := n.gpus[g]
				if c.GPU(g).Model == m && s.mode == ModeShared && s.used < 1000 && n.allocatable(g) && 1000-s.used >= k {
					gs = append(gs, domFree{DomainID(g), 1000 - s.used})
				}
			}
			slices.SortFunc(gs, func(a, b domFree) int {
				if a.free != b.free {
					return a.free - b.free
				}
				return int(a.d - b.d)
			})
			for _, x := range gs {
				o.num(int(x.d), x.free)
			}
			o.nl()
		}
	}
	return o.String()
}

// firstDiff returns the first line where a and b differ.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d, %d lines", len(la), len(lb))
}

// ledgerMachine is the state machine rapid drives.
type ledgerMachine struct {
	c        *Cluster
	l        *Ledger
	n        *naiveLedger
	live     []Claim // claims granted on l and not released
	released []Claim // claims once granted and since released

	frozen      *Ledger // a ledger no longer changed, which must stay as it was
	frozenState string
	frozenAns   string
	spare       *Ledger      // a ledger to CopyFrom into
	spareOcc    *Occupancy   // an Occupancy to CopyFrom into (occupancy_test.go)
	tracked     []trackedOcc // Occupancies tracking ledgers, each with its oracle (occupancy_test.go)
	trackPool   []*Occupancy // Occupancies forgotten, to Track again
}

func (m *ledgerMachine) pickHost(t *rapid.T) HostID {
	return HostID(rapid.IntRange(0, m.c.NumHosts()-1).Draw(t, "host"))
}

// genClaim draws a claim, mostly plausible; with bogus set it may be
// malformed in any field.
func (m *ledgerMachine) genClaim(t *rapid.T, bogus bool) Claim {
	c := m.c
	odd := func(label string) bool { return bogus && rapid.IntRange(0, 7).Draw(t, label) == 0 }
	cl := Claim{Host: m.pickHost(t)}
	if odd("bad host") {
		cl.Host = rapid.SampledFrom([]HostID{-1, HostID(c.NumHosts())}).Draw(t, "host")
		return cl
	}
	h := cl.Host
	amount := func(free int64, label string) int64 {
		switch rapid.IntRange(0, 3).Draw(t, label+" kind") {
		case 0, 1:
			return 0
		case 2:
			return int64(rapid.IntRange(0, int(min(free, 1<<20))).Draw(t, label))
		}
		if odd(label + " odd") {
			return rapid.SampledFrom([]int64{-1, free + 1}).Draw(t, label)
		}
		return free
	}
	cl.CPUMilli = amount(m.n.cpu[h], "cpu")
	cl.MemoryMiB = amount(m.n.mem[h], "mem")
	first, nGPU := c.HostGPUs(h)
	for k := rapid.IntRange(0, min(3, nGPU)).Draw(t, "gpu claims"); k > 0; k-- {
		gc := GPUClaim{GPU: first + GPUID(rapid.IntRange(0, nGPU-1).Draw(t, "gpu"))}
		if odd("bad gpu") {
			gc.GPU = GPUID(rapid.IntRange(-1, c.NumGPUs()).Draw(t, "gpu"))
		}
		acc := m.n.migModel(h)
		kinds := []ClaimKind{ClaimWhole, ClaimShare}
		if acc != nil || bogus {
			kinds = append(kinds, ClaimMIG, ClaimMIG)
		}
		gc.Kind = rapid.SampledFrom(kinds).Draw(t, "kind")
		if odd("bad kind") {
			gc.Kind = 7
		}
		switch gc.Kind {
		case ClaimShare:
			gc.Milli = rapid.SampledFrom([]int32{1, 100, 250, 300, 500, 999, 1000}).Draw(t, "milli")
			if odd("bad milli") {
				gc.Milli = rapid.SampledFrom([]int32{0, -5, 1001}).Draw(t, "milli")
			}
		case ClaimMIG:
			if acc == nil {
				break
			}
			gc.Profile = MIGProfileID(rapid.IntRange(0, len(acc.MIGProfiles)-1).Draw(t, "profile"))
			gc.Start = int8(rapid.SampledFrom(acc.MIGProfiles[gc.Profile].Starts).Draw(t, "start"))
			if odd("bad profile") {
				gc.Profile = MIGProfileID(rapid.SampledFrom([]int{-1, len(acc.MIGProfiles)}).Draw(t, "profile"))
			}
			if odd("bad start") {
				gc.Start = int8(rapid.IntRange(-1, acc.MIGSlots).Draw(t, "start"))
			}
		}
		cl.GPUs = append(cl.GPUs, gc)
	}
	return cl
}

func cloneClaims(cs []Claim) []Claim {
	out := slices.Clone(cs)
	for i := range out {
		out[i].GPUs = slices.Clone(out[i].GPUs)
	}
	return out
}

// expectResult checks err against the model's prediction.
func expectResult(t *rapid.T, op string, err error, want *naiveErr) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s failed: %v; the model says it succeeds", op, err)
		}
		return
	}
	var ae *AllocError
	if !errors.As(err, &ae) {
		t.Fatalf("%s: error %v, want an *AllocError (claim %d, GPU %d, %v)", op, err, want.claim, want.gpu, want.err)
	}
	if ae.Claim != want.claim || ae.GPU != want.gpu || !errors.Is(err, want.err) || ae.Error() == "" {
		t.Fatalf("%s: error %v (claim %d, GPU %d), want claim %d, GPU %d, %v", op, err, ae.Claim, ae.GPU, want.claim, want.gpu, want.err)
	}
}

// apply runs op on l and checks the outcome against the model: on success
// the generation moves on by one and the claims' hosts change generation;
// on failure the ledger is unchanged byte for byte, answers included.
func (m *ledgerMachine) apply(t *rapid.T, op string, claims []Claim, want *naiveErr, run func() error) {
	t.Helper()
	before := rawOf(m.l)
	hostGens := make([]uint64, len(claims))
	for i, cl := range claims {
		if cl.Host >= 0 && int(cl.Host) < m.c.NumHosts() {
			hostGens[i] = m.l.HostGeneration(cl.Host)
		}
	}
	var ansBefore string
	if want != nil {
		ansBefore = answers(m.l.Clone())
	}
	err := run()
	expectResult(t, op, err, want)
	if want != nil {
		if after := rawOf(m.l); !reflect.DeepEqual(before, after) {
			t.Fatalf("failed %s changed the ledger", op)
		}
		if ans := answers(m.l.Clone()); ans != ansBefore {
			t.Fatalf("failed %s changed query answers: %s", op, firstDiff(ans, ansBefore))
		}
		return
	}
	if m.l.Generation() != before.gen+1 {
		t.Fatalf("%s: generation %d after %d", op, m.l.Generation(), before.gen)
	}
	for i, cl := range claims {
		if m.l.HostGeneration(cl.Host) == hostGens[i] {
			t.Fatalf("%s: host generation of %s unchanged", op, m.c.HostName(cl.Host))
		}
	}
}

func (m *ledgerMachine) Allocate(t *rapid.T) {
	claims := make([]Claim, rapid.IntRange(1, 3).Draw(t, "claims"))
	bogus := rapid.IntRange(0, 3).Draw(t, "bogus") == 0
	for i := range claims {
		claims[i] = m.genClaim(t, bogus)
	}
	want := m.n.allocate(claims)
	m.apply(t, "Allocate", claims, want, func() error { return m.l.Allocate(claims...) })
	if want == nil {
		m.live = append(m.live, cloneClaims(claims)...)
	}
}

func (m *ledgerMachine) AllocateGPU(t *rapid.T) {
	g := GPUID(rapid.IntRange(-1, m.c.NumGPUs()).Draw(t, "gpu"))
	var claims []Claim
	var want *naiveErr
	if g < 0 || int(g) >= m.c.NumGPUs() {
		want = &naiveErr{0, NoGPU, ErrBadClaim}
	} else {
		claims = []Claim{{Host: m.c.GPUHost(g), GPUs: []GPUClaim{{GPU: g}}}}
		want = m.n.allocate(claims)
		if want != nil && want.gpu == NoGPU {
			want.gpu = g // AllocateGPU names the GPU even when its host is at fault
			if want.err == ErrCordoned && m.n.gpus[g].health != Healthy {
				want.err = ErrUnhealthy // and the GPU's own health first
			}
		}
	}
	m.apply(t, "AllocateGPU", claims, want, func() error { return m.l.AllocateGPU(g) })
	if want == nil {
		m.live = append(m.live, claims...)
	}
}

// Release gives back some live claims, sometimes with a malformed or stale
// claim among them. Releases the model accepts although they do not match
// live claims run on a clone only, so that the live claims stay exact.
func (m *ledgerMachine) Release(t *rapid.T) {
	if len(m.live) == 0 {
		t.Skip("nothing allocated")
	}
	idx := rapid.SliceOfNDistinct(rapid.IntRange(0, len(m.live)-1), 1, min(3, len(m.live)), rapid.ID[int]).Draw(t, "claims")
	var claims []Claim
	for _, i := range idx {
		claims = append(claims, m.live[i])
	}
	extra := rapid.IntRange(0, 3).Draw(t, "extra")
	if extra > 0 {
		var x Claim
		switch {
		case extra == 1 && len(m.released) > 0:
			x = rapid.SampledFrom(m.released).Draw(t, "stale") // a double release
		case extra == 2:
			x = claims[0] // the same claim twice in one call
		default:
			x = m.genClaim(t, true)
		}
		pos := rapid.IntRange(0, len(claims)).Draw(t, "position")
		claims = slices.Insert(claims, pos, x)
	}
	shadow := m.n.clone()
	want := shadow.release(claims)
	if want == nil && extra > 0 {
		// Accepted only because other claims hold that capacity: check it
		// on a clone, and that the clone is independent.
		before := rawOf(m.l)
		cl := m.l.Clone()
		if err := cl.Release(claims...); err != nil {
			t.Fatalf("Release on a clone failed: %v; the model says it succeeds", err)
		}
		if got, want := ledgerState(cl), shadow.state(); got != want {
			t.Fatalf("after Release on a clone: %s", firstDiff(got, want))
		}
		if err := cl.Check(); err != nil {
			t.Fatalf("after Release on a clone: %v", err)
		}
		if !reflect.DeepEqual(before, rawOf(m.l)) {
			t.Fatal("Release on a clone changed the original")
		}
		return
	}
	m.apply(t, "Release", claims, want, func() error { return m.l.Release(claims...) })
	if want == nil {
		m.n = shadow
		slices.Sort(idx)
		for i := len(idx) - 1; i >= 0; i-- {
			m.released = append(m.released, m.live[idx[i]])
			m.live = slices.Delete(m.live, idx[i], idx[i]+1)
		}
	}
}

func (m *ledgerMachine) SetGPUHealth(t *rapid.T) {
	g := GPUID(rapid.IntRange(-1, m.c.NumGPUs()).Draw(t, "gpu"))
	h := Health(rapid.IntRange(0, 3).Draw(t, "health"))
	before := rawOf(m.l)
	err := m.l.SetGPUHealth(g, h)
	valid := g >= 0 && int(g) < m.c.NumGPUs() && h <= Failed
	if valid != (err == nil) {
		t.Fatalf("SetGPUHealth(%d, %d) = %v", g, h, err)
	}
	if !valid || m.n.gpus[g].health == h {
		if !reflect.DeepEqual(before, rawOf(m.l)) {
			t.Fatalf("SetGPUHealth(%d, %d) that changes nothing changed the ledger", g, h)
		}
		return
	}
	m.n.gpus[g].health = h
	if m.l.Generation() != before.gen+1 {
		t.Fatal("SetGPUHealth did not move the generation on")
	}
}

func (m *ledgerMachine) SetHostHealth(t *rapid.T) {
	h := HostID(rapid.IntRange(-1, m.c.NumHosts()).Draw(t, "host"))
	hh := Health(rapid.IntRange(0, 3).Draw(t, "health"))
	before := rawOf(m.l)
	valid := h >= 0 && int(h) < m.c.NumHosts() && hh <= Failed
	var gen uint64
	if valid {
		gen = m.l.HostGeneration(h)
	}
	err := m.l.SetHostHealth(h, hh)
	if valid != (err == nil) {
		t.Fatalf("SetHostHealth(%d, %d) = %v", h, hh, err)
	}
	if !valid || m.n.hostHealth[h] == hh {
		if !reflect.DeepEqual(before, rawOf(m.l)) {
			t.Fatalf("SetHostHealth(%d, %d) that changes nothing changed the ledger", h, hh)
		}
		return
	}
	m.n.hostHealth[h] = hh
	if m.l.Generation() != before.gen+1 || m.l.HostGeneration(h) == gen {
		t.Fatal("SetHostHealth did not move the generations on")
	}
}

// SetHostCordoned cordons or uncordons a host: its GPUs leave or rejoin
// the counters, and the fast paths of whole-GPU claims must see it.
func (m *ledgerMachine) SetHostCordoned(t *rapid.T) {
	h := HostID(rapid.IntRange(-1, m.c.NumHosts()).Draw(t, "host"))
	on := rapid.Bool().Draw(t, "cordoned")
	before := rawOf(m.l)
	valid := h >= 0 && int(h) < m.c.NumHosts()
	err := m.l.SetHostCordoned(h, on)
	if valid != (err == nil) {
		t.Fatalf("SetHostCordoned(%d, %v) = %v", h, on, err)
	}
	if !valid || m.n.cordoned[h] == on {
		if !reflect.DeepEqual(before, rawOf(m.l)) {
			t.Fatalf("SetHostCordoned(%d, %v) that changes nothing changed the ledger", h, on)
		}
		return
	}
	m.n.cordoned[h] = on
}

// checkFrozen checks that the ledger set aside has not changed.
func (m *ledgerMachine) checkFrozen(t *rapid.T) {
	if m.frozen == nil {
		return
	}
	if got := ledgerState(m.frozen); got != m.frozenState {
		t.Fatalf("a ledger set aside changed: %s", firstDiff(got, m.frozenState))
	}
	if got := answers(m.frozen.Clone()); got != m.frozenAns {
		t.Fatalf("a ledger set aside answers differently: %s", firstDiff(got, m.frozenAns))
	}
	if err := m.frozen.Check(); err != nil {
		t.Fatalf("a ledger set aside: %v", err)
	}
}

// setAside freezes one of two equal ledgers and goes on with the other.
func (m *ledgerMachine) setAside(t *rapid.T, other *Ledger) {
	if got, want := ledgerState(other), ledgerState(m.l); got != want {
		t.Fatalf("copy differs: %s", firstDiff(got, want))
	}
	ans := answers(m.l.Clone())
	if got := answers(other.Clone()); got != ans {
		t.Fatalf("copy answers differently: %s", firstDiff(got, ans))
	}
	old := m.frozen
	if rapid.Bool().Draw(t, "go on with the copy") {
		m.frozen, m.l = m.l, other
	} else {
		m.frozen = other
	}
	m.frozenState, m.frozenAns = ledgerState(m.frozen), ans
	if old != nil {
		m.spare = old
	}
}

func (m *ledgerMachine) Clone(t *rapid.T) {
	m.checkFrozen(t)
	m.setAside(t, m.l.Clone())
}

func (m *ledgerMachine) CopyFrom(t *rapid.T) {
	m.checkFrozen(t)
	dst := m.spare
	if dst == nil || rapid.IntRange(0, 3).Draw(t, "fresh spare") == 0 {
		dst = NewLedger(m.c)
		for g := GPUID(0); int(g) < m.c.NumGPUs(); g += 3 {
			_ = dst.AllocateGPU(g) // some state to overwrite
		}
		_ = dst.SetHostHealth(0, Draining)
	}
	if dst == m.frozen {
		m.frozen = nil
	}
	m.spare = nil
	dst.CopyFrom(m.l)
	if err := dst.Check(); err != nil {
		t.Fatalf("after CopyFrom: %v", err)
	}
	m.setAside(t, dst)
}

// Query compares every query with a scan of the model. It refreshes the
// indexes, which the other actions leave to accumulate changes.
func (m *ledgerMachine) Query(t *rapid.T) {
	if got, want := answers(m.l), m.n.answers(); got != want {
		t.Fatalf("queries disagree with the model: %s", firstDiff(got, want))
	}
}

// CheckInPlace runs Check on the ledger itself (which refreshes indexes).
func (m *ledgerMachine) CheckInPlace(t *rapid.T) {
	if err := m.l.Check(); err != nil {
		t.Fatal(err)
	}
}

// Check runs after every action: Check on a clone (leaving the indexes
// of l to accumulate changes), the model's state, and the live claims.
func (m *ledgerMachine) Check(t *rapid.T) {
	if err := m.l.Clone().Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got, want := ledgerState(m.l), m.n.state(); got != want {
		t.Fatalf("ledger and model differ: %s", firstDiff(got, want))
	}
	m.checkLive(t)
	m.checkTracked(t, false)
}

// checkLive derives every GPU's occupancy and every host's CPU and memory
// from the live claims: no GPU, share or MIG slot is held twice, nothing
// is over capacity, and the ledger holds exactly what the claims hold.
func (m *ledgerMachine) checkLive(t *rapid.T) {
	c := m.c
	whole := make([]int, c.NumGPUs())
	share := make([]int, c.NumGPUs())
	mig := make([]uint16, c.NumGPUs())
	cpu := make([]int64, c.NumHosts())
	mem := make([]int64, c.NumHosts())
	for _, cl := range m.live {
		cpu[cl.Host] += cl.CPUMilli
		mem[cl.Host] += cl.MemoryMiB
		for _, gc := range cl.GPUs {
			g := gc.GPU
			switch gc.Kind {
			case ClaimWhole:
				whole[g]++
			case ClaimShare:
				share[g] += int(gc.Milli)
			case ClaimMIG:
				acc := m.n.migModel(cl.Host)
				mask := naiveProfileMask(acc, acc.MIGProfiles[gc.Profile], int(gc.Start))
				if mig[g]&mask != 0 {
					t.Fatalf("MIG slots %016b of %s given twice", mig[g]&mask, c.GPUName(g))
				}
				mig[g] |= mask
			}
		}
	}
	for g := GPUID(0); int(g) < c.NumGPUs(); g++ {
		kinds := 0
		for _, held := range []bool{whole[g] > 0, share[g] > 0, mig[g] != 0} {
			if held {
				kinds++
			}
		}
		if whole[g] > 1 || kinds > 1 || share[g] > 1000 {
			t.Fatalf("%s held %d times whole, %d milli shared, MIG %016b", c.GPUName(g), whole[g], share[g], mig[g])
		}
		want := GPUStatus{Mode: ModeFree, Health: m.n.gpus[g].health}
		switch {
		case whole[g] == 1:
			want.Mode, want.UsedMilli = ModeWhole, 1000
		case share[g] > 0:
			want.Mode, want.UsedMilli = ModeShared, share[g]
		case mig[g] != 0:
			want.Mode, want.MIGSlots = ModeMIG, mig[g]
			want.UsedMilli = naiveUsed(mig[g], c.Model(c.HostModel(c.GPUHost(g))).MIGSlots)
		}
		if got := m.l.GPU(g); got != want {
			t.Fatalf("%s is %+v; its live claims make it %+v", c.GPUName(g), got, want)
		}
	}
	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		if cpu[h] > c.CPUMilli(h) || mem[h] > c.MemoryMiB(h) ||
			m.l.CPUFree(h) != c.CPUMilli(h)-cpu[h] || m.l.MemoryFree(h) != c.MemoryMiB(h)-mem[h] {
			t.Fatalf("host %s: live claims hold %d milli-cores, %d MiB; ledger has %d, %d free of %d, %d", c.HostName(h),
				cpu[h], mem[h], m.l.CPUFree(h), m.l.MemoryFree(h), c.CPUMilli(h), c.MemoryMiB(h))
		}
	}
}

// TestLedgerProperties drives a ledger on random clusters through random
// operations and checks it after every step against the naive model.
func TestLedgerProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := specGen{ch: rapidChooser{t}}
		s := g.spec()
		c, err := Build(s)
		if err != nil {
			t.Fatalf("valid spec rejected: %v", err)
		}
		m := &ledgerMachine{c: c, l: NewLedger(c), n: newNaiveLedger(c)}
		actions := rapid.StateMachineActions(m)
		for range 3 { // about 90 steps (45 with -short)
			t.Repeat(actions)
		}
		m.Query(t)
		m.checkFrozen(t)
		m.checkTracked(t, true)
	})
}

// TestCopyFromOtherCluster checks the documented panic.
func TestCopyFromOtherCluster(t *testing.T) {
	a, b := NewLedger(presetCluster(t, "dgx-h100")), NewLedger(presetCluster(t, "dgx-h100"))
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "topology: ") {
			t.Fatalf("recover() = %v, want a topology panic", r)
		}
	}()
	a.CopyFrom(b)
}

// TestReleaseMIGAtIllegalStart: releasing a MIG instance at a slot where
// its profile cannot start used to succeed on the slots another instance
// held, and panicked when a later claim of the same call failed and the
// rollback re-took it.
func TestReleaseMIGAtIllegalStart(t *testing.T) {
	c := presetCluster(t, "dgx-a100")
	l := NewLedger(c)
	// 1g.20gb (profile 1, two slots) at slot 6 holds slots 6 and 7.
	if err := l.Allocate(Claim{Host: 0, GPUs: []GPUClaim{{GPU: 0, Kind: ClaimMIG, Profile: 1, Start: 6}}}); err != nil {
		t.Fatal(err)
	}
	before := rawOf(l)
	// 1g.10gb (profile 0) starts at 0..6, never at 7.
	err := l.Release(Claim{Host: 0, GPUs: []GPUClaim{{GPU: 0, Kind: ClaimMIG, Profile: 0, Start: 7}}},
		Claim{Host: 0, GPUs: []GPUClaim{{GPU: 1}}})
	var ae *AllocError
	if !errors.As(err, &ae) || !errors.Is(err, ErrNotAllocated) || ae.Claim != 0 || ae.GPU != 0 {
		t.Fatalf("Release: %v, want claim 0 not allocated", err)
	}
	if !reflect.DeepEqual(before, rawOf(l)) {
		t.Fatal("failed Release changed the ledger")
	}
	if err := l.Release(Claim{Host: 0, GPUs: []GPUClaim{{GPU: 0, Kind: ClaimMIG, Profile: 1, Start: 6}}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}
