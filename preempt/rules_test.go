package preempt

import (
	"testing"

	"pgregory.net/rapid"
)

// rulesNaive is rulesOK as first written (quadratic per call), the oracle
// of the one-pass check: for each node a victim of the set was chosen
// from, in order of its first unit, the job under it with the largest GPU
// charge summed over the set (the first of equals) is added back, and the
// node must still borrow; a fair-share node's share must stay at least
// the pending side's.
func rulesNaive(r *run) bool {
	for i, ui := range r.set {
		u := &r.units[ui]
		if u.node < 0 {
			continue
		}
		first := true
		for _, vi := range r.set[:i] {
			if r.units[vi].node == u.node {
				first = false
				break
			}
		}
		if !first {
			continue
		}
		var big int32 = -1
		var bigCharge int64
		for _, vi := range r.set[i:] {
			v := &r.units[vi]
			if v.node != u.node {
				continue
			}
			var ch int64
			for _, wi := range r.set {
				if r.units[wi].ji == v.ji {
					ch += r.charge(&r.units[wi])[0]
				}
			}
			if big < 0 || ch > bigCharge {
				big, bigCharge = v.ji, ch
			}
		}
		if !r.borrowsWith(u.node, big) {
			return false
		}
		if u.ground == GroundFairShare && r.w.Share(u.node, nil) < r.leaves[u.leaf].shareA {
			return false
		}
	}
	return true
}

// rulesChecked counts the rulesOK verdicts checked against rulesNaive
// (every Search the tests build with newSearch checks each of its own).
var rulesChecked int

// agreeWithNaiveRules makes every rulesOK of s checked against
// rulesNaive (counted in rulesChecked); it returns 0.
func agreeWithNaiveRules(t tb, s *Search) int {
	s.testRules = func(r *run, ok bool) {
		rulesChecked++
		if want := rulesNaive(r); ok != want {
			t.Fatalf("rulesOK = %v for a set of %d units, the naive rule says %v", ok, len(r.set), want)
		}
	}
	return 0
}

// TestRulesAgreeWithNaive: on random instances with queue trees (those
// of TestPropertyGreedy, greedy search and its reprieve), the one-pass
// rulesOK gives the naive rule's verdict every time.
func TestRulesAgreeWithNaive(t *testing.T) {
	before := rulesChecked
	rapid.Check(t, func(rt *rapid.T) {
		in := genInstance(rt, 12)
		in.cfg.MaxExact = rapid.IntRange(1, 16).Draw(rt, "maxExact")
		s := newSearch(rt, in.cfg)
		s.Plan(in.f.st, in.pend, in.now)
	})
	if rulesChecked == before {
		t.Error("no rulesOK verdict was checked: the property was not exercised")
	}
	t.Logf("%d verdicts checked", rulesChecked-before)
}
