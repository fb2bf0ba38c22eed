package frag

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/gpusched/gpusched/topology"
)

// Policy names, as NewPolicy accepts them. The first six are the policies
// the FGD paper compares (in the order of its figures); first-fit and
// worst-fit are the classic extremes.
const (
	FGD           = "fgd"
	BestFit       = "best-fit"
	DotProduct    = "dot-product"
	GPUPacking    = "gpu-packing"
	GPUClustering = "gpu-clustering"
	Random        = "random"
	FirstFit      = "first-fit"
	WorstFit      = "worst-fit"
)

type kind uint8

const (
	kindFGD kind = iota
	kindBestFit
	kindDotProduct
	kindGPUPacking
	kindGPUClustering
	kindRandom
	kindFirstFit
	kindWorstFit
)

var policyNames = [...]string{
	kindFGD: FGD, kindBestFit: BestFit, kindDotProduct: DotProduct, kindGPUPacking: GPUPacking,
	kindGPUClustering: GPUClustering, kindRandom: Random, kindFirstFit: FirstFit, kindWorstFit: WorstFit,
}

// PolicyNames returns the names NewPolicy accepts: fgd, best-fit,
// dot-product, gpu-packing, gpu-clustering, random, first-fit, worst-fit.
func PolicyNames() []string { return append([]string(nil), policyNames[:]...) }

// PaperPolicies returns the policies of the FGD paper's comparison: fgd,
// best-fit, dot-product, gpu-packing, gpu-clustering, random.
func PaperPolicies() []string { return append([]string(nil), policyNames[:kindFirstFit]...) }

// TieBreak says how a policy chooses among hosts of equal score.
type TieBreak uint8

// Tie-breaking rules.
const (
	// TieLowestID takes the host with the lowest HostID (and, within it,
	// the GPUs with the lowest IDs among equally good ones).
	TieLowestID TieBreak = iota
	// TieRandom takes one of the equally scored hosts uniformly at random,
	// drawing from Options.Rand on every Pick, as the stock Kubernetes
	// scheduler does. Still deterministic for a given source.
	TieRandom
	// TieShuffled takes the equally scored host that comes first in a
	// random order of all hosts, drawn once from Options.Rand when the
	// policy first sees a cluster. This is what the FGD paper's simulator
	// does: its Kubernetes fork breaks ties by the smallest node name,
	// and it prefixes node names with a seeded random permutation.
	TieShuffled
)

// Scoring says how precisely a policy scores hosts.
type Scoring uint8

// Scorings.
const (
	// ScorePaper scores as the FGD paper's artifact does, on the integer
	// 0..100 scale of Kubernetes score plugins (formulas at NewPolicy).
	// Hosts within one point of each other tie and go to the tie-break.
	// This is what the paper measured, and it matters: with exact
	// scores FGD leaves about one point more of the openb cluster's GPUs
	// unallocated, because the coarse scale turns near-equal choices into
	// ties that a fixed host order then packs.
	ScorePaper Scoring = iota
	// ScoreExact ranks hosts by the exact quantity behind each score;
	// hosts tie only when it is equal.
	ScoreExact
	// ScoreArtifact is ScorePaper with FGD's fragmentation computed in
	// the artifact's float arithmetic (its class order and weights, its
	// sums by fragment kind) instead of exactly: where the exact growth is
	// zero, the artifact's rounding can leave it a hair either side, and
	// the score 49 or 50. It reproduces the artifact's placements seed by
	// seed (with SampleArtifact and a distribution learned with
	// LearnOptions.ArtifactOrder); the other policies score as ScorePaper.
	ScoreArtifact
)

// Options configure NewPolicy.
type Options struct {
	// Distribution is the target workload of "fgd" (required there,
	// ignored by the others); see Learn.
	Distribution Distribution
	// Rand is the randomness of "random", TieRandom and TieShuffled
	// (required by them). The policy draws from it on every Pick; it must not be shared
	// with concurrent users.
	Rand *rand.Rand
	// TieBreak chooses among equally scored hosts; "random" always draws.
	TieBreak TieBreak
	// Scoring chooses the artifact's integer scores (the default) or
	// exact ones.
	Scoring Scoring
}

// ErrUnknownPolicy is returned by NewPolicy for a name it does not know.
var ErrUnknownPolicy = errors.New("frag: unknown policy")

// Resetter is implemented by every policy of this package. Reset drops
// everything a policy cached (memory, not correctness: caches are keyed by
// topology.Ledger.HostGeneration, which identifies a host's state across
// all ledgers of a cluster, so one policy may serve a ledger, its clones
// and copies in turn) and gpu-clustering's record of reported tasks.
type Resetter interface {
	Reset()
}

// Tracker is implemented by policies whose scores depend on which kinds of
// tasks run on a host and not only on its free capacity: gpu-clustering.
// A caller that allocates a claim the policy returned should report it
// with Allocated, and its release with Released. Hosts with nothing
// reported are judged from the ledger alone (see gpu-clustering).
type Tracker interface {
	Allocated(c topology.Claim, t Task)
	Released(c topology.Claim, t Task)
}

// NewPolicy returns the named placement policy. Every policy places a task
// on one host: first it keeps the hosts that can take it (in Scope,
// healthy, of an accepted model, with the CPU and memory, and with enough
// allocatable GPUs: whole-free ones for whole GPUs, one with the share
// free for a share), then it scores them and takes the best, ties broken
// by Options.TieBreak. Whole GPUs are the host's lowest-numbered free ones.
// The scores are those of the FGD paper's artifact
// (hkust-adsl/kubernetes-scheduler-simulator), higher is better. With
// ScorePaper (the default) they are integers 0..100 as there; with
// ScoreExact hosts are ranked by the quantity inside the ⌊⌋. C and G are
// the largest host CPU and GPU capacity (milli) of the cluster, ΔF the
// growth of the host's fragmentation (see Measure) in milli-GPU:
//
//   - fgd: ⌊100·σ(−ΔF/1000)⌋, σ the logistic function: the host where the
//     fragmentation grows least; a share goes on the GPU of the best score
//     (the lowest-numbered among equals).
//   - best-fit: ⌊100(1 − left)⌋ with left = ½(cpuFree−cpu)/C +
//     ½(gpuFree−gpu)/G; a share takes the GPU with the least free capacity
//     that holds it.
//   - dot-product: ⌊100(1 − dot)⌋ with dot = ½(cpuFree·cpu/C² +
//     gpuFree·gpu/G²), the normalised dot product of the host's free and
//     the task's demand vectors (the artifact prefers the smaller); shares
//     as best-fit.
//   - gpu-packing: a share on a partly used GPU scores
//     max(100 − ⌊⌊free·100/1000⌋/10⌋, 50) (the fuller the GPU the better),
//     k free GPUs of a host already in use max(50 − k, 33), a host all of
//     whose n GPUs are free max(33 − n, n); shares as best-fit. CPU-only
//     tasks score 0 everywhere.
//   - gpu-clustering: 75, 50, 25 or 0 for a host running only tasks of the
//     task's kind (a share, or n whole GPUs), that kind among others,
//     nothing, or only other kinds, plus ⌊25·(G−gpuFree)/G⌋. Kinds come
//     from Tracker reports; a host without reports counts a shared GPU as a
//     share task and its whole GPUs as one task of that many GPUs. CPU-only
//     tasks score 0 everywhere.
//   - random: a host drawn uniformly among those that fit, and a share on
//     a GPU drawn uniformly among those that hold it.
//   - first-fit: the lowest-numbered host that fits, the lowest-numbered
//     GPU that holds a share.
//   - worst-fit: ⌊100·left⌋ (best-fit's left), the emptiest host; a share
//     takes the GPU with the most free capacity.
//
// Each call returns a new, independent policy. A policy may serve several
// ledgers of one cluster in turn (its caches are keyed by HostGeneration);
// it is not safe for concurrent use.
func NewPolicy(name string, opt Options) (Policy, error) {
	k := -1
	for i, n := range policyNames {
		if n == name {
			k = i
		}
	}
	if k < 0 {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownPolicy, name, strings.Join(policyNames[:], ", "))
	}
	p := &policy{kind: kind(k), tie: opt.TieBreak, rng: opt.Rand, scoring: opt.Scoring}
	switch {
	case opt.Scoring > ScoreArtifact:
		return nil, fmt.Errorf("frag: %s: unknown scoring %d", name, opt.Scoring)
	case opt.TieBreak > TieShuffled:
		return nil, fmt.Errorf("frag: %s: unknown tie-break %d", name, opt.TieBreak)
	case p.kind == kindRandom:
		p.tie = TieRandom
	}
	if p.tie != TieLowestID && p.rng == nil {
		return nil, fmt.Errorf("frag: %s: Options.Rand is required for random choices", name)
	}
	if p.kind == kindFGD {
		if err := opt.Distribution.Validate(); err != nil {
			return nil, fmt.Errorf("frag: fgd: %w", err)
		}
		p.dist = Distribution{Classes: append([]Class(nil), opt.Distribution.Classes...)}
		for i := range p.dist.Classes {
			p.dist.Classes[i].Task.Models = canonModels(p.dist.Classes[i].Task.Models)
		}
	}
	return p, nil
}

// policy implements every named policy; kind selects the score.
type policy struct {
	kind    kind
	scoring Scoring
	tie     TieBreak
	rng     *rand.Rand
	dist    Distribution

	// Bound to a cluster by bind.
	c      *topology.Cluster
	meas   *Measure
	maxCPU int64   // largest host CPU capacity
	maxGPU int64   // largest host GPU capacity in milli
	rank   []int32 // TieShuffled: each host's place in the random order
	v      view
	fgd    fgdCache
	tags   clusterTags

	slotCap int // FGD shape slots; 0: sized by the cluster (tests shrink it)

	art []artClass // ScoreArtifact's classes (fgd_artifact.go)

	okModel []bool // per model+1: the current task accepts it
	scratch []int16
}

// Name returns the policy's name.
func (p *policy) Name() string { return policyNames[p.kind] }

// String returns the policy's name.
func (p *policy) String() string { return p.Name() }

// Reset drops everything cached about the last ledger, and gpu-clustering's
// memory of reported tasks.
func (p *policy) Reset() {
	p.c = nil
	p.v = view{}
	p.fgd = fgdCache{}
	p.tags = clusterTags{}
}

// bind prepares the policy for ledger l.
func (p *policy) bind(l *topology.Ledger) {
	c := l.Cluster()
	if c != p.c {
		p.c = c
		nh := c.NumHosts()
		p.maxCPU, p.maxGPU = 0, 0
		for h := range topology.HostID(nh) {
			p.maxCPU = max(p.maxCPU, c.CPUMilli(h))
			_, n := c.HostGPUs(h)
			p.maxGPU = max(p.maxGPU, int64(n)*topology.MilliPerGPU)
		}
		if p.maxCPU == 0 {
			p.maxCPU = 1
		}
		if p.maxGPU == 0 {
			p.maxGPU = topology.MilliPerGPU
		}
		p.v.init(c)
		p.okModel = make([]bool, len(c.Models())+1)
		p.tags.init(nh)
		p.rank = nil
		if p.tie == TieShuffled {
			p.rank = make([]int32, nh)
			for i, h := range p.rng.Perm(nh) {
				p.rank[h] = int32(i)
			}
		}
		usesMem := false
		if p.kind == kindFGD {
			m, err := NewMeasure(c, p.dist)
			if err != nil {
				panic("frag: distribution validated at construction failed: " + err.Error())
			}
			p.meas, usesMem = m, m.usesMem
			if p.scoring == ScoreArtifact {
				p.compileArtifact(c)
			}
		}
		if p.cached() {
			p.fgd.init(nh, usesMem, p.slotCap)
		}
	}
}

// Pick implements Policy.
func (p *policy) Pick(l *topology.Ledger, t Task, s Scope) (topology.Claim, bool) {
	if t.Validate() != nil {
		return topology.Claim{}, false
	}
	p.bind(l)
	c := p.c
	for i := range p.okModel {
		p.okModel[i] = t.accepts(topology.ModelID(i - 1))
	}
	ch := chooser{p: p, allow: s.Allow, best: topology.NoHost, cost: math.Inf(1)}
	d := s.Within
	if d < 0 || int(d) >= c.NumDomains() {
		return topology.Claim{}, false
	}
	switch c.DomainKindOf(d) {
	case topology.KindCluster, topology.KindNetwork, topology.KindHost:
		p.scan(l, t, c.DomainHostList(d), &ch)
		if ch.best == topology.NoHost {
			return topology.Claim{}, false
		}
		return p.claim(l, ch.best, t, ch.gpu, nil), true
	default:
		return p.pickSub(l, t, d, &ch)
	}
}

// chooser keeps the best host offered so far.
type chooser struct {
	p     *policy
	allow func(topology.HostID) bool
	best  topology.HostID
	cost  float64
	gpu   int
	ties  int
}

// offer considers host h at cost with share GPU offset gpu. It reports
// whether h became the choice.
func (ch *chooser) offer(h topology.HostID, cost float64, gpu int) bool {
	switch {
	case cost < ch.cost:
		if ch.allow != nil && !ch.allow(h) {
			return false
		}
		ch.best, ch.cost, ch.gpu, ch.ties = h, cost, gpu, 1
		return true
	case cost != ch.cost:
	case ch.p.tie == TieRandom:
		if ch.allow != nil && !ch.allow(h) {
			return false
		}
		ch.ties++
		if ch.p.rng.IntN(ch.ties) == 0 {
			ch.best, ch.gpu = h, gpu
			return true
		}
	case ch.p.tie == TieShuffled && ch.p.rank[h] < ch.p.rank[ch.best]:
		if ch.allow != nil && !ch.allow(h) {
			return false
		}
		ch.best, ch.gpu = h, gpu
		return true
	}
	return false
}

// quick checks what needs no GPU state: health, model, CPU and memory.
func (p *policy) quick(l *topology.Ledger, h topology.HostID, t *Task) bool {
	return l.HostUsable(h) && p.okModel[p.v.model[h]] &&
		l.CPUFree(h) >= t.CPUMilli && l.MemoryFree(h) >= t.MemoryMiB
}

// scan offers every host of hosts that can take t.
func (p *policy) scan(l *topology.Ledger, t Task, hosts []topology.HostID, ch *chooser) {
	per, n := t.perGPU()
	var slot *fgdSlot
	if p.cached() {
		slot = p.fgd.slot(t)
	}
	for _, h := range hosts {
		if !p.quick(l, h, &t) {
			continue
		}
		gen := l.HostGeneration(h)
		p.v.refresh(l, h, gen)
		// GPU feasibility from the view's summaries.
		if n > 0 {
			if per == topology.MilliPerGPU {
				if int(p.v.full[h]) < n {
					continue
				}
			} else if int(p.v.maxFree[h]) < per {
				continue
			}
		}
		var cost float64
		gpu := -1
		switch {
		case slot != nil:
			if slot.gen[h] != gen+1 {
				hs := p.v.state(l, h)
				if p.kind == kindFGD {
					slot.delta[h], slot.gpu[h] = p.fgdDelta(&hs, &t, p.fgdBase(l, h, gen, &hs))
				} else {
					slot.delta[h], slot.gpu[h] = p.baseCost(l, &hs, &t), -1
				}
				slot.gen[h] = gen + 1
			}
			cost, gpu = slot.delta[h], int(slot.gpu[h])
			if math.IsInf(cost, 1) {
				continue
			}
		case p.kind == kindFirstFit:
			if ch.offer(h, 0, -1) {
				return
			}
			continue
		case p.kind == kindGPUClustering:
			hs := p.v.state(l, h)
			cost = p.baseCost(l, &hs, &t)
		}
		ch.offer(h, cost, gpu)
	}
}

// cached reports whether the policy's host costs depend on the host's
// state and the task's shape only, so that they can be cached per shape:
// all but first-fit and random (no costs) and gpu-clustering (which also
// depends on Tracker reports).
func (p *policy) cached() bool {
	switch p.kind {
	case kindFirstFit, kindRandom, kindGPUClustering:
		return false
	}
	return true
}

// pickSub places within a domain smaller than a host (a NUMA node, a PCIe
// bridge or switch, a fabric domain): only its GPUs may be used. Nothing
// is cached on this path.
func (p *policy) pickSub(l *topology.Ledger, t Task, d topology.DomainID, ch *chooser) (topology.Claim, bool) {
	c := p.c
	gpus := c.DomainGPUs(d)
	var bestMask []bool
	for i := 0; i < len(gpus); {
		h := c.GPUHost(gpus[i])
		first, n := c.HostGPUs(h)
		mask := make([]bool, n)
		j := i
		for ; j < len(gpus) && c.GPUHost(gpus[j]) == h; j++ {
			mask[gpus[j]-first] = true
		}
		i = j
		if !p.quick(l, h, &t) {
			continue
		}
		p.v.refresh(l, h, l.HostGeneration(h))
		hs := directState(l, h)
		hs.mask = mask
		if !hs.fits(&t) {
			continue
		}
		var cost float64
		gpu := -1
		switch p.kind {
		case kindFGD:
			var g16 int16
			cost, g16 = p.fgdDelta(&hs, &t, p.meas.frag(hs.model, hs.cpu, hs.mem, true, hs.free))
			gpu = int(g16)
		case kindFirstFit:
		default:
			cost = p.baseCost(l, &hs, &t)
		}
		if ch.offer(h, cost, gpu) {
			bestMask = mask
			if p.kind == kindFirstFit {
				break
			}
		}
	}
	if ch.best == topology.NoHost {
		return topology.Claim{}, false
	}
	return p.claim(l, ch.best, t, ch.gpu, bestMask), true
}

// claim builds the claim of t on host h: share GPU offset gpu (or a
// policy-chosen one when gpu < 0), whole GPUs the lowest-numbered free
// allowed ones.
func (p *policy) claim(l *topology.Ledger, h topology.HostID, t Task, gpu int, mask []bool) topology.Claim {
	cl := topology.Claim{Host: h, CPUMilli: t.CPUMilli, MemoryMiB: t.MemoryMiB}
	per, n := t.perGPU()
	if n == 0 {
		return cl
	}
	first, cnt := p.c.HostGPUs(h)
	if per == topology.MilliPerGPU {
		cl.GPUs = make([]topology.GPUClaim, 0, n)
		for i := 0; i < cnt && len(cl.GPUs) < n; i++ {
			g := first + topology.GPUID(i)
			if (mask == nil || mask[i]) && usableFree(l, g) == topology.MilliPerGPU {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: g, Kind: topology.ClaimWhole})
			}
		}
		return cl
	}
	if gpu < 0 {
		hs := directState(l, h)
		hs.mask = mask
		gpu = p.shareGPU(&hs, per)
	}
	cl.GPUs = []topology.GPUClaim{{GPU: first + topology.GPUID(gpu), Kind: topology.ClaimShare, Milli: int32(per)}}
	return cl
}

// shareGPU picks the GPU offset of a share of per milli by the policy's
// GPU rule: worst-fit the most free, first-fit the first, random any, the
// others the least free that holds it; ties to the lowest offset.
func (p *policy) shareGPU(hs *hostState, per int) int {
	best, bf, cnt := -1, int16(0), 0
	for i, f := range hs.free {
		if int(f) < per || !hs.allowed(i) {
			continue
		}
		switch p.kind {
		case kindFirstFit:
			return i
		case kindWorstFit:
			if best < 0 || f > bf {
				best, bf = i, f
			}
		case kindRandom:
			cnt++
			if p.rng.IntN(cnt) == 0 {
				best = i
			}
		default:
			if best < 0 || f < bf {
				best, bf = i, f
			}
		}
	}
	return best
}

// baseCost is the cost (lower is better) of t on a feasible host for the
// policies other than fgd and first-fit.
func (p *policy) baseCost(l *topology.Ledger, hs *hostState, t *Task) float64 {
	tm := t.milli()
	switch p.kind {
	case kindBestFit, kindWorstFit:
		if p.scoring != ScoreExact {
			// ⌊100(1 − left)⌋ for best-fit, ⌊100·left⌋ for worst-fit. The
			// artifact then rescales scores to 0..100 over the candidates,
			// which never lets another host join the top score.
			left := 0.5*float64(hs.cpu-t.CPUMilli)/float64(p.maxCPU) + 0.5*float64(hs.total-tm)/float64(p.maxGPU)
			if p.kind == kindWorstFit {
				return -math.Trunc(100 * left)
			}
			return -math.Trunc(100 * (1 - left))
		}
		// ½(cpuFree−cpu)/C + ½(gpuFree−gpu)/G, scaled by 2CG to stay in
		// integers so that equal leftovers tie exactly.
		left := float64((hs.cpu-t.CPUMilli)*p.maxGPU + (hs.total-tm)*p.maxCPU)
		if p.kind == kindWorstFit {
			return -left
		}
		return left
	case kindDotProduct:
		c, g := float64(p.maxCPU), float64(p.maxGPU)
		d := 0.5 * (float64(hs.cpu)*float64(t.CPUMilli)/(c*c) + float64(hs.total)*float64(tm)/(g*g))
		if p.scoring != ScoreExact {
			return -math.Trunc(100 * (1 - d))
		}
		return d
	case kindGPUPacking:
		return -float64(p.packingScore(hs, t))
	case kindGPUClustering:
		return -float64(p.clusteringScore(hs, t))
	}
	return 0 // random
}

// packingScore is the artifact's GPU-packing score (0..100, higher is
// better).
func (p *policy) packingScore(hs *hostState, t *Task) int64 {
	if t.CPUOnly() {
		return 0
	}
	if hs.full == len(hs.free) {
		return max(33-int64(hs.full), int64(hs.full))
	}
	per, n := t.perGPU()
	// The GPUs it would use: least free first (ties by offset).
	var fullUsed, ratio int64
	if per == topology.MilliPerGPU {
		fullUsed = int64(n)
	} else {
		g := p.bestFitGPU(hs, per)
		if hs.free[g] == topology.MilliPerGPU {
			fullUsed = 1
		} else {
			ratio = int64(hs.free[g]) * 100 / topology.MilliPerGPU
		}
	}
	if fullUsed > 0 {
		return max(50-fullUsed, 33)
	}
	return max(100-ratio/10, 50)
}

func (p *policy) bestFitGPU(hs *hostState, per int) int {
	best, bf := -1, int16(0)
	for i, f := range hs.free {
		if int(f) >= per && hs.allowed(i) && (best < 0 || f < bf) {
			best, bf = i, f
		}
	}
	return best
}

// clusteringScore is the artifact's GPU-clustering score (0..100, higher
// is better).
func (p *policy) clusteringScore(hs *hostState, t *Task) int64 {
	if t.CPUOnly() {
		return 0
	}
	tag := tagOf(t)
	same, kinds := p.tags.lookup(&p.v, hs.h, tag)
	base := 25 * (p.maxGPU - hs.total) / p.maxGPU
	switch {
	case same && kinds == 1:
		return base + 75
	case same:
		return base + 50
	case kinds == 0:
		return base + 25
	}
	return base
}
