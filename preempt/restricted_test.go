package preempt

import (
	"slices"
	"testing"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// restrictedState is a State whose jobs named in reqs move with those
// requests (Restricted).
type restrictedState struct {
	*State
	reqs map[string]*gang.Request
}

func (x restrictedState) MoveRequest(j *Job) *gang.Request { return x.reqs[j.Spec.ID] }

// restrict returns f's state with job id moving only onto the named
// hosts.
func restrict(t *testing.T, f *fixture, id string, hosts ...string) restrictedState {
	t.Helper()
	var j *Job
	f.st.Jobs(func(x *Job) bool {
		if x.Spec.ID == id {
			j = x
		}
		return j == nil
	})
	req, err := gang.NewRequest(f.c, j.Spec)
	if err != nil {
		t.Fatal(err)
	}
	req.AllowHost = func(h topology.HostID) bool { return slices.Contains(hosts, f.c.HostName(h)) }
	return restrictedState{f.st, map[string]*gang.Request{id: req}}
}

// TestDefragRestricted: defragSetup's cheapest plan moves b1 and b2 into
// tor1 (TestDefragWorked). With b1 restricted to tor2's hosts, the plan
// moves a1 and a2 into tor2 instead; with a1 kept on its host as well,
// there is none.
func TestDefragRestricted(t *testing.T) {
	f, pend := defragSetup(t)
	s := newSearch(t, Config{})
	snap := restrict(t, f, "b1", "dgx-h100-3", "dgx-h100-4")
	dp, np := s.Defragment(snap, pend, now)
	if np != nil {
		t.Fatal(np)
	}
	var ids []string
	for _, m := range dp.Migrations {
		ids = append(ids, m.Job)
		for _, cl := range m.To.Claims {
			if h := f.c.HostName(cl.Host); h != "dgx-h100-3" && h != "dgx-h100-4" {
				t.Fatalf("%s moves to %s, not into tor2", m.Job, h)
			}
		}
	}
	if !slices.Equal(ids, []string{"a1", "a2"}) || f.c.DomainName(dp.Domain) != "tor1" {
		t.Fatalf("migrations %v into %s, want a1 a2 out of tor1", ids, f.c.DomainName(dp.Domain))
	}
	checkDefrag(t, f, dp, pend)
	a1 := restrict(t, f, "a1", "dgx-h100-1")
	snap.reqs["a1"] = a1.reqs["a1"]
	if dp, _ := s.Defragment(snap, pend, now); dp != nil {
		t.Fatalf("plan %+v with b1 and a1 kept", dp)
	}
	if err := f.st.Ledger().Check(); err != nil {
		t.Fatal(err)
	}
}

// TestConsolidateRestricted: at the NVLink level (one DGX host each)
// consolidation empties host 3 (b1) elsewhere (TestConsolidate). With b1
// restricted to host 3, it empties host 4 (b2) instead; with every job
// kept on its host, nothing.
func TestConsolidateRestricted(t *testing.T) {
	f, _ := defragSetup(t)
	s := newSearch(t, Config{})
	snap := restrict(t, f, "b1", "dgx-h100-3")
	p := s.Consolidate(snap, ConsolidateOptions{Level: topology.LevelFabric}, now)
	if p == nil || len(p.Migrations) != 1 || p.Migrations[0].Job != "b2" {
		t.Fatalf("plan %+v, want b2 moved", p)
	}
	if h := f.c.HostName(p.Migrations[0].To.Claims[0].Host); h == "dgx-h100-4" {
		t.Fatalf("b2 stays on %s", h)
	}
	// Every job kept on its host: nothing can move.
	for id, h := range map[string]string{"a1": "dgx-h100-1", "a2": "dgx-h100-2", "b2": "dgx-h100-4"} {
		snap.reqs[id] = restrict(t, f, id, h).reqs[id]
	}
	if p := s.Consolidate(snap, ConsolidateOptions{Level: topology.LevelFabric}, now); p != nil {
		t.Fatalf("plan %+v with every job kept", p)
	}
}
