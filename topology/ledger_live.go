package topology

import "fmt"

// Follow moves l from its cluster to next, the version Apply made from it
// (one Apply at a time: follow each version in turn). The hosts the change
// removed must hold nothing in l — release or recover their work first —
// and their GPUs leave every counter and index; hosts, GPUs and domains
// the change added join free and healthy. Everything else, occupancy,
// health and the indexes, carries over: nothing is rebuilt. On error l is
// unchanged. Cost: O((GPUs added or removed) × tree depth × log n); the
// per-GPU and per-domain arrays grow by appending.
//
// Clones of l keep the old version; CopyFrom between l and them panics
// after Follow, so planners must take new clones.
func (l *Ledger) Follow(next *Cluster) error {
	old := l.c
	if next.arena != old.arena || next.prevVer != old.ver || next.ver == old.ver {
		return fmt.Errorf("topology: cluster %s version %d is not made by Apply from the ledger's version %d", next.name, next.ver, old.ver)
	}
	ch := &next.spec.Live[len(next.spec.Live)-1]
	gone := make([]HostID, 0, len(ch.Remove))
	for _, name := range ch.Remove {
		h, ok := old.lookupHost(name)
		if !ok {
			return fmt.Errorf("topology: removed host %q unknown to the ledger's cluster", name)
		}
		x := &old.hosts[h]
		if l.cpuFree[h] != x.cpuMilli || l.memFree[h] != x.memMiB {
			return fmt.Errorf("topology: removed host %s still holds CPU or memory; release its work first", name)
		}
		for g := x.gpuLo; g < x.gpuLo+GPUID(x.nGPU); g++ {
			if l.gpu[g].mode != ModeFree {
				return fmt.Errorf("topology: removed host %s still holds GPU %s; release its work first", name, old.GPUName(g))
			}
		}
		gone = append(gone, h)
	}
	l.settleTrackers() // they keep the old version's occupancy
	nh, ng, nd := len(old.hosts), len(old.gpus), len(old.domains)
	l.c = next
	// Grow the arrays; the new entries start free, healthy and unindexed.
	l.gpu = append(l.gpu, make([]gpuState, len(next.gpus)-ng)...)
	l.hostHealth = append(l.hostHealth, make([]Health, len(next.hosts)-nh)...)
	l.cordoned = append(l.cordoned, make([]bool, len(next.hosts)-nh)...)
	l.hostGen = append(l.hostGen, make([]uint64, len(next.hosts)-nh)...)
	for h := nh; h < len(next.hosts); h++ {
		l.cpuFree = append(l.cpuFree, next.hosts[h].cpuMilli)
		l.memFree = append(l.memFree, next.hosts[h].memMiB)
	}
	l.freeWhole = append(l.freeWhole, make([]int32, len(next.domains)-nd)...)
	l.freeMilli = append(l.freeMilli, make([]int64, len(next.domains)-nd)...)
	l.ownHealthy() // before appending into a backing array a clone may share
	l.healthy = append(l.healthy, make([]int32, len(next.domains)-nd)...)
	l.markInside(DomainID(nd))
	x := &l.idx
	for range len(next.hosts) - nh {
		x.hostFree = append(x.hostFree, -1)
		x.hostDirty = append(x.hostDirty, false)
		x.leafFree = append(x.leafFree, -1)
		x.leafDirty = append(x.leafDirty, false)
		x.leafNext = append(x.leafNext, NoHost)
	}
	for range len(next.domains) - nd {
		x.domFree = append(x.domFree, -1)
		x.domDirty = append(x.domDirty, false)
		x.leafHead = append(x.leafHead, NoHost)
		x.leafListed = append(x.leafListed, false)
	}
	for range len(next.gpus) - ng {
		x.gpuMilli = append(x.gpuMilli, -1)
		x.gpuDirty = append(x.gpuDirty, false)
	}
	// Removed hosts leave the counters and indexes.
	for _, h := range gone {
		hx := &next.hosts[h]
		for g := hx.gpuLo; g < hx.gpuLo+GPUID(hx.nGPU); g++ {
			f, m, o := l.contrib(g)
			l.adjust(g, -f, -m, -o)
			x.touchShared(g)
		}
		l.hostHealth[h], l.cordoned[h] = Failed, false
		x.touchHost(h, hx.parent)
		l.bumpHost(h)
		for g := hx.gpuLo; g < hx.gpuLo+GPUID(hx.nGPU); g++ {
			// Its host fabric domains leave the fabric level.
			if d := next.gpus[g].fabric; d != NoDomain && next.domains[d].host == h && x.domFree[d] >= 0 {
				x.byLevel[LevelFabric].Delete(levelKey(x.domFree[d], d))
				x.domFree[d] = -1
				x.domDirty[d] = false
			}
		}
	}
	// New GPUs join their domains' counters; new hosts and domains join
	// the indexes.
	for g := GPUID(ng); g < GPUID(len(next.gpus)); g++ {
		f, m, o := l.contrib(g)
		l.adjust(g, f, m, o)
	}
	for h := nh; h < len(next.hosts); h++ {
		x.touchHost(HostID(h), next.hosts[h].parent)
		l.bumpHost(HostID(h))
	}
	for d := DomainID(nd); d < DomainID(len(next.domains)); d++ {
		dx := &next.domains[d]
		if dx.level >= 0 && dx.level != LevelHost && dx.level < next.LevelCluster() && (dx.kind == KindNetwork || dx.kind == KindFabric) {
			x.domFree[d] = l.freeWhole[d]
			x.byLevel[dx.level].ReplaceOrInsert(levelKey(l.freeWhole[d], d))
		}
	}
	l.gen++
	return nil
}
