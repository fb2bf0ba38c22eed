package frag

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// The naive oracle: every policy written out plainly, host by host and
// GPU by GPU, reading the ledger directly, with no caches, summaries or
// sweeps. The fast policies must choose exactly what it chooses.

// naiveFree is the usable free milli of GPU g.
func naiveFree(l *topology.Ledger, g topology.GPUID) int {
	st := l.GPU(g)
	if st.Health != topology.Healthy || l.HostHealth(l.Cluster().GPUHost(g)) != topology.Healthy {
		return 0
	}
	if st.Mode != topology.ModeFree && st.Mode != topology.ModeShared {
		return 0
	}
	return topology.MilliPerGPU - st.UsedMilli
}

// naiveFrag is Measure's formula written per class without sorting, in
// the same fixed-point weights.
func naiveFrag(d Distribution, model topology.ModelID, cpu, mem int64, free []int) int64 {
	var sum float64
	for _, c := range d.Classes {
		sum += c.Weight
	}
	var total int64
	for _, f := range free {
		total += int64(f)
	}
	var out int64
	for _, c := range d.Classes {
		w := int64(math.Round(c.Weight / sum * weightScale))
		if w < 1 {
			w = 1
		}
		t := c.Task
		if t.CPUOnly() {
			out += w * total
			continue
		}
		per, n := t.perGPU()
		k, usable := 0, int64(0)
		for _, f := range free {
			if f >= per {
				k++
				usable += int64(f)
			}
		}
		ok := k >= n && cpu >= t.CPUMilli && mem >= t.MemoryMiB && (t.Models == nil || slices.Contains(t.Models, model))
		if ok {
			out += w * (total - usable)
		} else {
			out += w * total
		}
	}
	return out
}

type naivePolicy struct {
	kind    kind
	scoring Scoring
	tie     TieBreak
	rng     *rand.Rand
	rank    []int
	dist    Distribution
	wsum    int64
	tags    map[topology.HostID][]int16 // reported kinds (nil map: none reported)
}

func newNaive(t interface{ Fatalf(string, ...any) }, name string, opt Options, c *topology.Cluster) *naivePolicy {
	k := slices.Index(policyNames[:], name)
	if k < 0 {
		t.Fatalf("unknown %s", name)
	}
	n := &naivePolicy{kind: kind(k), scoring: opt.Scoring, tie: opt.TieBreak, rng: opt.Rand, dist: opt.Distribution}
	if n.kind == kindRandom {
		n.tie = TieRandom
	}
	if n.tie == TieShuffled {
		n.rank = make([]int, c.NumHosts())
		for i, h := range n.rng.Perm(c.NumHosts()) {
			n.rank[h] = i
		}
	}
	if n.kind == kindFGD {
		var sum float64
		for _, cl := range n.dist.Classes {
			sum += cl.Weight
		}
		for _, cl := range n.dist.Classes {
			n.wsum += max(1, int64(math.Round(cl.Weight/sum*weightScale)))
		}
	}
	return n
}

// pick returns the chosen host and claim, or ok false.
func (n *naivePolicy) pick(l *topology.Ledger, t Task, s Scope) (topology.Claim, bool) {
	c := l.Cluster()
	if t.Validate() != nil || s.Within < 0 || int(s.Within) >= c.NumDomains() {
		return topology.Claim{}, false
	}
	inScope := map[topology.GPUID]bool{}
	sub := false
	switch c.DomainKindOf(s.Within) {
	case topology.KindCluster, topology.KindNetwork, topology.KindHost:
	default:
		sub = true
		for _, g := range c.DomainGPUs(s.Within) {
			inScope[g] = true
		}
	}
	lo, hi := c.DomainHosts(s.Within)
	per, cnt := t.perGPU()
	tm := t.milli()
	var maxCPU, maxGPU int64
	for h := range topology.HostID(c.NumHosts()) {
		maxCPU = max(maxCPU, c.CPUMilli(h))
		_, ng := c.HostGPUs(h)
		maxGPU = max(maxGPU, int64(ng)*1000)
	}
	if maxGPU == 0 {
		maxGPU = 1000
	}
	best, bestCost, bestGPU, ties := topology.NoHost, math.Inf(1), -1, 0
	for h := range topology.HostID(c.NumHosts()) {
		first, ng := c.HostGPUs(h)
		if sub {
			any := false
			for i := range ng {
				if inScope[first+topology.GPUID(i)] {
					any = true
				}
			}
			if !any {
				continue
			}
		} else if h < lo || h >= hi {
			continue
		}
		if s.Allow != nil && !s.Allow(h) {
			continue
		}
		if l.HostHealth(h) != topology.Healthy || !t.accepts(c.HostModel(h)) ||
			l.CPUFree(h) < t.CPUMilli || l.MemoryFree(h) < t.MemoryMiB {
			continue
		}
		free := make([]int, ng)
		allowed := make([]bool, ng)
		var total int64
		full := 0
		k := 0
		for i := range ng {
			g := first + topology.GPUID(i)
			free[i] = naiveFree(l, g)
			total += int64(free[i])
			if free[i] == 1000 {
				full++
			}
			allowed[i] = !sub || inScope[g]
			if allowed[i] && free[i] >= per && cnt > 0 {
				k++
			}
		}
		if k < cnt {
			continue
		}
		// The share GPU by the best-fit rule.
		bestFit := -1
		for i := range ng {
			if allowed[i] && cnt > 0 && free[i] >= per && (bestFit < 0 || free[i] < free[bestFit]) {
				bestFit = i
			}
		}
		cost, gpu := 0.0, -1
		switch n.kind {
		case kindFGD:
			f0 := naiveFrag(n.dist, c.HostModel(h), l.CPUFree(h), l.MemoryFree(h), free)
			costOf := func(after []int) float64 {
				d := naiveFrag(n.dist, c.HostModel(h), l.CPUFree(h)-t.CPUMilli, l.MemoryFree(h)-t.MemoryMiB, after) - f0
				if n.scoring == ScoreExact {
					return float64(d)
				}
				x := -float64(d) / float64(n.wsum) / 1000
				return -math.Trunc(100 / (1 + math.Exp(-x)))
			}
			after := slices.Clone(free)
			switch {
			case cnt == 0:
				cost = costOf(after)
			case per == 1000:
				taken := 0
				for i := range ng {
					if taken < cnt && allowed[i] && after[i] == 1000 {
						after[i] = 0
						taken++
					}
				}
				cost = costOf(after)
			default:
				cost = math.Inf(1)
				for i := range ng {
					if !allowed[i] || free[i] < per {
						continue
					}
					a := slices.Clone(free)
					a[i] -= per
					if ci := costOf(a); ci < cost {
						cost, gpu = ci, i
					}
				}
			}
		case kindBestFit, kindWorstFit:
			if n.scoring == ScorePaper {
				left := 0.5*float64(l.CPUFree(h)-t.CPUMilli)/float64(maxCPU) + 0.5*float64(total-tm)/float64(maxGPU)
				if n.kind == kindBestFit {
					cost = -math.Trunc(100 * (1 - left))
				} else {
					cost = -math.Trunc(100 * left)
				}
			} else {
				left := (l.CPUFree(h)-t.CPUMilli)*maxGPU + (total-tm)*maxCPU
				cost = float64(left)
				if n.kind == kindWorstFit {
					cost = -cost
				}
			}
		case kindDotProduct:
			d := 0.5 * (float64(l.CPUFree(h))*float64(t.CPUMilli)/(float64(maxCPU)*float64(maxCPU)) + float64(total)*float64(tm)/(float64(maxGPU)*float64(maxGPU)))
			cost = d
			if n.scoring == ScorePaper {
				cost = -math.Trunc(100 * (1 - d))
			}
		case kindGPUPacking:
			var score int64
			switch {
			case t.CPUOnly():
			case full == ng:
				score = max(33-int64(full), int64(full))
			case per == 1000:
				score = max(50-int64(cnt), 33)
			case free[bestFit] == 1000:
				score = 49
			default:
				score = max(100-int64(free[bestFit]*100/1000)/10, 50)
			}
			cost = -float64(score)
		case kindGPUClustering:
			var score int64
			if !t.CPUOnly() {
				tag := tagOf(&t)
				var kinds []int16
				if rep, ok := n.tags[h]; ok {
					kinds = rep
				} else {
					shared, whole := false, int16(0)
					for i := range ng {
						switch l.GPU(first + topology.GPUID(i)).Mode {
						case topology.ModeShared:
							shared = true
						case topology.ModeWhole:
							whole++
						}
					}
					if shared {
						kinds = append(kinds, tagShare)
					}
					if whole > 0 {
						kinds = append(kinds, whole)
					}
				}
				base := 25 * (maxGPU - total) / maxGPU
				switch {
				case slices.Contains(kinds, tag) && len(kinds) == 1:
					score = base + 75
				case slices.Contains(kinds, tag):
					score = base + 50
				case len(kinds) == 0:
					score = base + 25
				default:
					score = base
				}
			}
			cost = -float64(score)
		}
		switch {
		case cost < bestCost:
			best, bestCost, bestGPU, ties = h, cost, gpu, 1
		case cost > bestCost:
		case n.tie == TieRandom:
			ties++
			if n.rng.IntN(ties) == 0 {
				best, bestGPU = h, gpu
			}
		case n.tie == TieShuffled && n.rank[h] < n.rank[best]:
			best, bestGPU = h, gpu
		}
		if n.kind == kindFirstFit && best != topology.NoHost {
			break
		}
	}
	if best == topology.NoHost {
		return topology.Claim{}, false
	}
	cl := topology.Claim{Host: best, CPUMilli: t.CPUMilli, MemoryMiB: t.MemoryMiB}
	first, ng := c.HostGPUs(best)
	allowed := func(i int) bool { return !sub || inScope[first+topology.GPUID(i)] }
	switch {
	case cnt == 0:
	case per == 1000:
		for i := 0; i < ng && len(cl.GPUs) < cnt; i++ {
			if allowed(i) && naiveFree(l, first+topology.GPUID(i)) == 1000 {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(i), Kind: topology.ClaimWhole})
			}
		}
	default:
		g := bestGPU
		if g < 0 {
			cand := -1
			seen := 0
			for i := range ng {
				f := naiveFree(l, first+topology.GPUID(i))
				if !allowed(i) || f < per {
					continue
				}
				switch n.kind {
				case kindFirstFit:
					if cand < 0 {
						cand = i
					}
				case kindWorstFit:
					if cand < 0 || f > naiveFree(l, first+topology.GPUID(cand)) {
						cand = i
					}
				case kindRandom:
					seen++
					if n.rng.IntN(seen) == 0 {
						cand = i
					}
				default:
					if cand < 0 || f < naiveFree(l, first+topology.GPUID(cand)) {
						cand = i
					}
				}
			}
			g = cand
		}
		cl.GPUs = []topology.GPUClaim{{GPU: first + topology.GPUID(g), Kind: topology.ClaimShare, Milli: int32(per)}}
	}
	return cl, true
}

// randomCluster builds a small cluster: one or two ToRs, 1..10 hosts of
// 0..8 GPUs over up to three models (one of them MIG-capable), varied CPU
// and memory.
func randomCluster(t *rapid.T) *topology.Cluster {
	spec := topology.Spec{Version: topology.SpecVersion, Name: "r", Levels: []topology.LevelSpec{{Name: "tor"}}}
	spec.Accelerators = []topology.AcceleratorSpec{
		{Model: "A"},
		{Model: "B"},
		{Model: "M", MIG: &topology.MIGSpec{Slots: 2, Profiles: []topology.MIGProfileSpec{{Name: "1g", Size: 1, Starts: []int{0, 1}}}}},
	}
	spec.Switches = []topology.SwitchGroup{{Name: "tor[0-1]", Level: "tor"}}
	nh := rapid.IntRange(1, 10).Draw(t, "hosts")
	for i := range nh {
		gpus := rapid.IntRange(0, 8).Draw(t, fmt.Sprintf("gpus%d", i))
		tmpl := topology.HostTemplate{
			Name:      fmt.Sprintf("t%d", i),
			CPUMilli:  int64(rapid.IntRange(1, 8).Draw(t, fmt.Sprintf("cpu%d", i))) * 8000,
			MemoryMiB: int64(rapid.IntRange(1, 4).Draw(t, fmt.Sprintf("mem%d", i))) * 65536,
			GPUs:      gpus,
		}
		if gpus > 0 {
			tmpl.Accelerator = rapid.SampledFrom([]string{"A", "B", "M"}).Draw(t, fmt.Sprintf("model%d", i))
		}
		spec.Templates = append(spec.Templates, tmpl)
		spec.Hosts = append(spec.Hosts, topology.HostGroup{Name: fmt.Sprintf("h%d", i), Template: tmpl.Name, Parent: fmt.Sprintf("tor%d", i%2)})
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func randomTask(t *rapid.T, c *topology.Cluster, label string) Task {
	var tk Task
	switch rapid.IntRange(0, 3).Draw(t, label+"kind") {
	case 0:
	case 1:
		tk.GPUMilli = rapid.SampledFrom([]int{100, 250, 500, 510, 800, 999}).Draw(t, label+"milli")
	default:
		tk.GPUs = rapid.IntRange(1, 4).Draw(t, label+"gpus")
	}
	tk.CPUMilli = int64(rapid.IntRange(0, 6).Draw(t, label+"cpu")) * 4000
	tk.MemoryMiB = int64(rapid.IntRange(0, 4).Draw(t, label+"mem")) * 32768
	if rapid.Bool().Draw(t, label+"constrained") {
		for m := range topology.ModelID(len(c.Models())) {
			if rapid.Bool().Draw(t, fmt.Sprintf("%sm%d", label, m)) {
				tk.Models = append(tk.Models, m)
			}
		}
	}
	return tk
}

// mutate changes the ledger at random: allocations of whole GPUs, shares
// and MIG slices, releases, and health changes.
func mutate(t *rapid.T, l *topology.Ledger, held *[]topology.Claim, label string) {
	c := l.Cluster()
	if c.NumGPUs() == 0 {
		return
	}
	switch rapid.IntRange(0, 6).Draw(t, label+"op") {
	case 0, 1, 2:
		g := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, label+"gpu"))
		gc := topology.GPUClaim{GPU: g, Kind: topology.ClaimShare, Milli: int32(rapid.SampledFrom([]int{100, 200, 490, 1000}).Draw(t, label+"share"))}
		switch rapid.IntRange(0, 3).Draw(t, label+"claim") {
		case 0:
			gc = topology.GPUClaim{GPU: g, Kind: topology.ClaimWhole}
		case 1:
			gc = topology.GPUClaim{GPU: g, Kind: topology.ClaimMIG, Profile: 0, Start: int8(rapid.IntRange(0, 1).Draw(t, label+"slot"))}
		}
		cl := topology.Claim{Host: c.GPUHost(g), CPUMilli: int64(rapid.IntRange(0, 3).Draw(t, label+"ccpu")) * 4000, MemoryMiB: int64(rapid.IntRange(0, 2).Draw(t, label+"cmem")) * 16384, GPUs: []topology.GPUClaim{gc}}
		if l.Allocate(cl) == nil {
			*held = append(*held, cl)
		}
	case 3, 4:
		if len(*held) > 0 {
			i := rapid.IntRange(0, len(*held)-1).Draw(t, label+"release")
			if err := l.Release((*held)[i]); err != nil {
				t.Fatal(err)
			}
			*held = slices.Delete(*held, i, i+1)
		}
	case 5:
		g := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, label+"sick"))
		_ = l.SetGPUHealth(g, topology.Health(rapid.IntRange(0, 2).Draw(t, label+"gh")))
	case 6:
		h := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, label+"sickhost"))
		_ = l.SetHostHealth(h, topology.Health(rapid.IntRange(0, 2).Draw(t, label+"hh")))
	}
}

// TestPickMatchesOracle runs every policy, in both scorings and with each
// tie-break, through random sequences of ledger changes and picks, and
// checks that each pick is the oracle's, that the claim fits the ledger
// and that Pick leaves the ledger as it was. Ten rounds of rapid's checks
// (1,000 by default): picks are cheap and the space is large.
func TestPickMatchesOracle(t *testing.T) {
	for range 10 {
		rapid.Check(t, checkPickMatchesOracle)
	}
}

func checkPickMatchesOracle(rt *rapid.T) {
	c := randomCluster(rt)
	name := rapid.SampledFrom(PolicyNames()).Draw(rt, "policy")
	scoring := Scoring(rapid.IntRange(0, 1).Draw(rt, "scoring"))
	tie := TieBreak(rapid.IntRange(0, 2).Draw(rt, "tie"))
	seed := rapid.Uint64().Draw(rt, "seed")
	var dist Distribution
	for i := range rapid.IntRange(1, 6).Draw(rt, "classes") {
		dist.Classes = append(dist.Classes, Class{Task: randomTask(rt, c, fmt.Sprintf("class%d", i)), Weight: float64(rapid.IntRange(1, 50).Draw(rt, fmt.Sprintf("w%d", i)))})
	}
	for i := range dist.Classes {
		dist.Classes[i].Task.Models = canonModels(dist.Classes[i].Task.Models)
	}
	opt := Options{Distribution: dist, Rand: rand.New(rand.NewPCG(seed, 1)), TieBreak: tie, Scoring: scoring}
	p, err := NewPolicy(name, opt)
	if err != nil {
		rt.Fatal(err)
	}
	// Few FGD slots, so that shapes evict each other.
	p.(*policy).slotCap = rapid.IntRange(0, 3).Draw(rt, "slots")
	nopt := opt
	nopt.Rand = rand.New(rand.NewPCG(seed, 1))
	oracle := newNaive(rt, name, nopt, c)
	tr, _ := p.(Tracker)
	l := topology.NewLedger(c)
	var held []topology.Claim
	snap, snapHeld := l.Clone(), []topology.Claim(nil)
	for step := range rapid.IntRange(1, 30).Draw(rt, "steps") {
		label := fmt.Sprintf("s%d", step)
		switch rapid.IntRange(0, 9).Draw(rt, label+"ledger") {
		case 0: // a new ledger with the same state
			l = l.Clone()
		case 1: // back to an earlier state, in place
			l.CopyFrom(snap)
			held = slices.Clone(snapHeld)
		case 2:
			snap, snapHeld = l.Clone(), slices.Clone(held)
		}
		if rapid.Bool().Draw(rt, label+"mutate") {
			mutate(rt, l, &held, label)
		}
		task := randomTask(rt, c, label)
		var s Scope
		if rapid.IntRange(0, 3).Draw(rt, label+"scoped") == 0 {
			s.Within = topology.DomainID(rapid.IntRange(0, c.NumDomains()-1).Draw(rt, label+"within"))
		}
		if rapid.IntRange(0, 3).Draw(rt, label+"allowed") == 0 {
			mask := rapid.Uint64().Draw(rt, label+"mask")
			s.Allow = func(h topology.HostID) bool { return mask>>(uint(h)%64)&1 == 1 }
		}
		gen := l.Generation()
		got, ok := p.Pick(l, task, s)
		want, wok := oracle.pick(l, task, s)
		if l.Generation() != gen || l.Check() != nil {
			rt.Fatalf("Pick changed the ledger")
		}
		if ok != wok || fmt.Sprint(got) != fmt.Sprint(want) {
			rt.Fatalf("step %d: %s task %+v scope %v: got %v %v, oracle %v %v", step, name, task, s.Within, got, ok, want, wok)
		}
		if ok && rapid.Bool().Draw(rt, label+"apply") {
			if err := l.Allocate(got); err != nil {
				rt.Fatalf("claim %v refused: %v", got, err)
			}
			held = append(held, got)
			if tr != nil {
				tr.Allocated(got, task)
				if oracle.tags == nil {
					oracle.tags = map[topology.HostID][]int16{}
				}
				if !task.CPUOnly() {
					tag := tagOf(&task)
					if !slices.Contains(oracle.tags[got.Host], tag) {
						oracle.tags[got.Host] = append(oracle.tags[got.Host], tag)
					}
				}
			}
		}
	}

}
