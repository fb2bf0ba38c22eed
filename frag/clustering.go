package frag

import "github.com/gpusched/gpusched/topology"

// gpu-clustering groups tasks by kind ("affinity" in the artifact): a
// share of one GPU, or n whole GPUs. A host's kinds are those of the tasks
// reported to run on it.

// tagShare is the kind of share tasks; n > 0 is the kind of n-GPU tasks.
const tagShare int16 = 0

func tagOf(t *Task) int16 {
	if t.GPUMilli > 0 {
		return tagShare
	}
	return int16(t.GPUs)
}

type tagCount struct {
	tag int16
	n   int32
}

type clusterTags struct {
	tags     [][]tagCount // per host: kinds with running tasks
	reported []bool       // per host: a reported task runs there
}

func (ct *clusterTags) init(nh int) {
	*ct = clusterTags{tags: make([][]tagCount, nh), reported: make([]bool, nh)}
}

// Allocated records that t runs on the claim's host (gpu-clustering only;
// other policies ignore it).
func (p *policy) Allocated(c topology.Claim, t Task) {
	if p.kind != kindGPUClustering || t.CPUOnly() || p.c == nil || int(c.Host) >= len(p.tags.tags) || c.Host < 0 {
		return
	}
	tag := tagOf(&t)
	h := c.Host
	p.tags.reported[h] = true
	for i := range p.tags.tags[h] {
		if p.tags.tags[h][i].tag == tag {
			p.tags.tags[h][i].n++
			return
		}
	}
	p.tags.tags[h] = append(p.tags.tags[h], tagCount{tag: tag, n: 1})
}

// Released records that t no longer runs on the claim's host.
func (p *policy) Released(c topology.Claim, t Task) {
	if p.kind != kindGPUClustering || t.CPUOnly() || p.c == nil || int(c.Host) >= len(p.tags.tags) || c.Host < 0 {
		return
	}
	tag := tagOf(&t)
	ts := p.tags.tags[c.Host]
	for i := range ts {
		if ts[i].tag == tag {
			ts[i].n--
			if ts[i].n <= 0 {
				p.tags.tags[c.Host] = append(ts[:i], ts[i+1:]...)
				if len(p.tags.tags[c.Host]) == 0 {
					// Nothing reported runs here any more: read the host
					// from the ledger again, as before the first report,
					// so a trial placement taken back leaves no trace.
					p.tags.reported[c.Host] = false
				}
			}
			return
		}
	}
}

// lookup reports whether host h runs tasks of kind tag and how many kinds
// it runs. Hosts where no reported task runs are read from the view of
// the ledger
// (refreshed for h): a shared GPU means a share task, and whole GPUs one
// task of that many GPUs.
func (ct *clusterTags) lookup(v *view, h topology.HostID, tag int16) (same bool, kinds int) {
	if ct.reported[h] {
		for _, tc := range ct.tags[h] {
			if tc.tag == tag {
				same = true
			}
		}
		return same, len(ct.tags[h])
	}
	if v.shared[h] {
		kinds++
		same = same || tag == tagShare
	}
	if w := v.whole[h]; w > 0 {
		kinds++
		same = same || tag == w
	}
	return same, kinds
}
