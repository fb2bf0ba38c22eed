package gpusched

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// scribble overwrites every claim a reused placement buffer holds, up to
// its capacity, as the next Place into it would.
func scribble(p *gang.Placement) {
	cl := p.Claims[:cap(p.Claims)]
	for i := range cl {
		cl[i].Host, cl[i].CPUMilli, cl[i].MemoryMiB = -7, -7, -7
		g := cl[i].GPUs[:cap(cl[i].GPUs)]
		for k := range g {
			g[k] = topology.GPUClaim{GPU: -7, Milli: -7}
		}
	}
	t := p.Tasks[:cap(p.Tasks)]
	for i := range t {
		t[i] = gang.TaskRef{Group: -7, Index: -7}
	}
}

// placementText is p's exported content (Clone does not copy the
// ledger bookkeeping).
func placementText(p *gang.Placement) string {
	return fmt.Sprintf("%s %v %v %v %v %v %v", p.Job, p.Claims, p.Tasks, p.Placed, p.Level, p.Domain, p.Relaxed)
}

// TestPlacedBuffersNotKept: verdict.placed points into a buffer valid
// only until the next placement into it (the cycle's buffer, the
// BackfillAround placer's, a due reservation's); admit copies it before
// anything else. So nothing a cycle keeps — a Binding's placement, a
// job's held placement — may share memory with those buffers: after
// every cycle of random streams (backfill, BackfillAround, reservations
// in depth, whole hosts) the buffers are scribbled over, as the next
// cycle's placements would, and every binding and held placement must be
// unchanged and agree with the ledger.
func TestPlacedBuffersNotKept(t *testing.T) {
	admitted := 0
	defer func() {
		if admitted == 0 {
			t.Error("no job was admitted: the property was never exercised")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		s, jobs, _ := backfillStream(t, rt)
		runStream(t, s, jobs, t0.Add(100*time.Hour), func(now time.Time, d Decision) {
			bound := map[string]*gang.Placement{}
			for _, b := range d.Bindings {
				bound[b.Job] = b.Placement.Clone()
				admitted++
			}
			held := map[string]*gang.Placement{}
			s.jobs.ascendEnds(func(j *job) bool { held[j.spec.ID] = j.placement.Clone(); return true })
			scribble(&s.cyc.buf)
			scribble(&s.around.buf)
			for _, b := range d.Bindings {
				if placementText(b.Placement) != placementText(bound[b.Job]) {
					t.Fatalf("%v: binding of %s changed when the placement buffers were reused", now, b.Job)
				}
			}
			s.jobs.ascendEnds(func(j *job) bool {
				if placementText(j.placement) != placementText(held[j.spec.ID]) {
					t.Fatalf("%v: held placement of %s changed when the placement buffers were reused", now, j.spec.ID)
				}
				return true
			})
			if err := s.ledger.Check(); err != nil {
				t.Fatalf("%v: %v", now, err)
			}
		})
	})
}
