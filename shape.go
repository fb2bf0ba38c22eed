package gpusched

import (
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// shapeKey is the class of a job: everything placement and quota depend
// on, nothing they do not (ID, priority, runtime, submission time).
func shapeKey(r *gang.Request) string {
	var b strings.Builder
	for i := range r.Groups {
		g := &r.Groups[i]
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(strconv.Itoa(g.Count))
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(g.Min))
		b.WriteByte('x')
		switch g.Kind {
		case gang.TaskWhole:
			b.WriteString(strconv.Itoa(g.GPUs) + "g")
		case gang.TaskShare:
			b.WriteString(strconv.Itoa(g.Milli) + "m")
		case gang.TaskMIG:
			b.WriteString(g.MIGProfile)
		default:
			b.WriteString("cpu")
		}
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(g.CPUMilli, 10))
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(g.MemoryMiB, 10))
		if g.Models != nil {
			b.WriteByte('@')
			for k, m := range g.Models {
				if k > 0 {
					b.WriteByte('+')
				}
				b.WriteString(strconv.Itoa(int(m)))
			}
		}
	}
	for _, l := range r.Required {
		b.WriteString(";r" + strconv.Itoa(int(l)))
	}
	for _, l := range r.Preferred {
		b.WriteString(";p" + strconv.Itoa(int(l)))
	}
	return b.String()
}

// demandVector is the quota estimate of a request before placement: the
// Min tasks of every group, MIG instances at their smallest size; model
// dimensions stay zero (the placement decides the model).
func (s *Scheduler) demandVector(r *gang.Request) queue.Vector {
	d := r.MinDemand()
	v := make(queue.Vector, s.tree.Dimensions().Len())
	v[fairshare.DimGPU] = d.Milli
	v[fairshare.DimCPU] = d.CPUMilli
	v[fairshare.DimMemory] = d.MemoryMiB
	return v
}

// chargeVector is what a placement takes, per dimension of the tree.
func (s *Scheduler) chargeVector(p *gang.Placement) queue.Vector {
	dims := s.tree.Dimensions()
	v := make(queue.Vector, dims.Len())
	for _, cl := range p.Claims {
		v[fairshare.DimCPU] += cl.CPUMilli
		v[fairshare.DimMemory] += cl.MemoryMiB
		for _, g := range cl.GPUs {
			var milli int64
			info := s.c.GPU(g.GPU)
			switch g.Kind {
			case topology.ClaimWhole:
				milli = topology.MilliPerGPU
			case topology.ClaimShare:
				milli = int64(g.Milli)
			case topology.ClaimMIG:
				milli = int64(s.c.Model(info.Model).MIGProfiles[g.Profile].Milli)
			}
			v[fairshare.DimGPU] += milli
			if k := s.modelDim(info.Model); k >= 0 {
				v[k] += milli
			}
		}
	}
	return v
}

// modelDim returns the tree dimension of model m, or −1 if no quota
// names it.
func (s *Scheduler) modelDim(m topology.ModelID) int {
	if m == topology.NoModel {
		return -1
	}
	name := s.c.Model(m).Model
	for i, x := range s.tree.Dimensions().Models {
		if x == name {
			return fairshare.DimModel + i
		}
	}
	return -1
}

// failure is a cached placement failure of one shape.
type failure struct {
	gen    uint64 // ledger generation it was true at (or fast-forwarded to)
	reason *Reason
	req    *gang.Request
}

// gain is a capacity increase on a host: a release or a return to health.
type gain struct {
	gen  uint64 // ledger generation after the change
	host topology.HostID
}

const maxGains = 1 << 14

func (s *Scheduler) logGain(h topology.HostID) {
	if len(s.gains) >= maxGains {
		half := len(s.gains) / 2
		s.gainBase = s.gains[half-1].gen
		s.gains = append(s.gains[:0], s.gains[half:]...)
	}
	s.gains = append(s.gains, gain{gen: s.ledger.Generation(), host: h})
}

// stillFails reports whether a cached failure still holds: nothing was
// freed since it was recorded on a host that could take a task of the
// request. Placement is monotone in free capacity for the placers we
// know, so losses alone never make a failed shape fit; a gain can only
// matter on a host where a task now fits. When it still holds the record
// is fast-forwarded to the current generation. O(gains since).
func (s *Scheduler) stillFails(f *failure, allow func(topology.HostID) bool) bool {
	gen := s.ledger.Generation()
	if f.gen == gen {
		return true
	}
	if f.gen < s.gainBase {
		return false
	}
	for i := len(s.gains) - 1; i >= 0 && s.gains[i].gen > f.gen; i-- {
		if s.hostCouldTake(s.gains[i].host, f.req, allow) {
			return false
		}
	}
	f.gen = gen
	return true
}

// hostCouldTake reports whether host h could take at least one task of
// some group of r now (an optimistic test: shares and MIG instances count
// as fitting when the host has any free GPU capacity).
func (s *Scheduler) hostCouldTake(h topology.HostID, r *gang.Request, allow func(topology.HostID) bool) bool {
	l := s.ledger
	if l.HostHealth(h) != topology.Healthy {
		return false
	}
	if allow != nil && !allow(h) {
		return false
	}
	m := s.c.HostModel(h)
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Kind != gang.TaskCPU && !g.Accepts(m) {
			continue
		}
		if l.CPUFree(h) < g.CPUMilli || l.MemoryFree(h) < g.MemoryMiB {
			continue
		}
		switch g.Kind {
		case gang.TaskCPU:
			return true
		case gang.TaskWhole:
			if l.HostFreeGPUs(h) >= g.GPUs {
				return true
			}
		default:
			first, n := s.c.HostGPUs(h)
			for k := 0; k < n; k++ {
				if l.GPUFreeMilli(first+topology.GPUID(k)) > 0 {
					return true
				}
			}
		}
	}
	return false
}
