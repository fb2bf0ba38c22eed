package gang

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// The oracle is the documented rule of best-fit and topology-tiered
// placement written the plain way: domains sorted by (free GPUs, ID) from a
// full scan, and each task on the host that minimises (free GPUs, HostID)
// among all hosts of the domain that fit it, found by scanning them all on a
// cloned ledger where every earlier task of the gang is really allocated.
// No indexes, cursors, overlays, fills or counting prunes.
//
// "Equal" means: the same outcome (placed or not), the same chosen level
// and domain, and the same claims in the same order (same host, same GPUs,
// per task). GPUs inside a host are chosen by the same locality function
// in both (the oracle checks host and domain choice, not that function).
// Ties: domains by lower DomainID, hosts by lower HostID.
//
// The greedy rule can miss a fit for gangs of several groups; placers then
// try other group orders and a bounded search in the same domain before
// moving on (attempt). The oracle does not replay those: a domain where its
// greedy rule fails is undecided, and the placer may take it (its
// placement is then checked for validity, not compared) or pass it by.
// Whether the placer misses a fit that exists is the brute-force oracle's
// business (bruteforce_test.go).

type oracle struct {
	topo bool
}

// oracleStep is one domain the oracle tried, in its order.
type oracleStep struct {
	lv     topology.Level
	dom    topology.DomainID
	claims []topology.Claim
	ok     bool // the greedy rule placed the gang here (the last step)
}

// steps returns the domains the oracle tries, in order, up to the first
// where its greedy rule places the gang.
func (o oracle) steps(l *topology.Ledger, r *Request) []oracleStep {
	c := l.Cluster()
	levelsFor := func(d Demand) []topology.Level {
		top := r.Within()
		var levels []topology.Level
		if o.topo {
			lo := topology.LevelHost
			if d.Milli > topology.MilliPerGPU || r.fabric {
				lo = topology.LevelFabric
			}
			if r.fabric {
				top = topology.LevelFabric
			}
			for x := lo; x <= top; x++ {
				if d.Tasks <= 1 && x != topology.LevelFabric && x != top {
					continue // a single task: only the fabric and top tiers
				}
				levels = append(levels, x)
			}
			return levels
		}
		if !r.fabric {
			for _, p := range r.Preferred {
				if p < top {
					levels = append(levels, p)
				}
			}
		}
		return append(levels, top)
	}
	var out []oracleStep
	elastic := r.minTasks < r.tasks
	for pass := 0; pass < 2; pass++ {
		want := make([]int, len(r.Groups))
		for i := range r.Groups {
			want[i] = r.Groups[i].Count
			if pass == 1 {
				want[i] = r.Groups[i].Min
			}
		}
		d := r.demand(pass == 1)
		for _, lv := range levelsFor(d) {
			doms := slices.Clone(c.DomainsAt(lv))
			// Protection (topology policy): hosts inside wholly free
			// protected domains come last.
			sh := func(topology.DomainID) int { return 0 }
			if o.topo {
				e := &engine{}
				e.bind(l, r, &Placement{})
				e.bindProtect(true, defaultProtectRatio, r)
				sh = func(d topology.DomainID) int {
					var ok bool
					if lv == topology.LevelHost {
						_, _, ok = e.shielded(c.Domain(d).Host, c.LevelCluster())
					} else {
						_, _, ok = e.shieldedIn(e.firstHost(d), lv, c.LevelCluster())
					}
					if ok {
						return 1
					}
					return 0
				}
			}
			slices.SortStableFunc(doms, func(a, b topology.DomainID) int {
				return cmp.Or(cmp.Compare(sh(a), sh(b)), cmp.Compare(l.FreeGPUs(a), l.FreeGPUs(b)), cmp.Compare(a, b))
			})
			for _, dm := range doms {
				if l.FreeGPUs(dm) < d.GPUs || l.FreeMilli(dm) < d.Milli {
					continue
				}
				cl, ok := o.tryDomain(l, r, lv, dm, want, pass == 1)
				out = append(out, oracleStep{lv, dm, cl, ok})
				if ok {
					return out
				}
			}
		}
		if !elastic {
			break
		}
	}
	return out
}

func (o oracle) tryDomain(l *topology.Ledger, r *Request, lv topology.Level, dm topology.DomainID, want []int, grow bool) ([]topology.Claim, bool) {
	c := l.Cluster()
	lc := l.Clone()
	e := &engine{}
	var p Placement
	e.bind(lc, r, &p)
	s, ok := e.makeScope(lv, dm)
	if !ok {
		return nil, false
	}
	var hosts []topology.HostID
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		if s.contains(h) {
			hosts = append(hosts, h)
		}
	}
	s.hosts = slices.Clone(s.hosts)
	var claims []topology.Claim
	shielded := func(topology.HostID) bool { return false }
	if o.topo {
		shielded = o.shielded(l, r, lv)
	}
	used := map[topology.HostID]bool{}
	one := func(gi int) bool {
		g := &r.Groups[gi]
		best := topology.NoHost
		// Protection: hosts in wholly free protected domains (of the
		// ledger before the gang, unless the gang already used them)
		// only when no other host fits.
		for tier := 0; tier < 2 && best == topology.NoHost; tier++ {
			for _, h := range hosts {
				if tier == 0 && !used[h] && shielded(h) {
					continue
				}
				e.s = s
				e.newEpoch()
				if lc.HostFreeGPUs(h) < g.GPUs || e.hostReason(h, g) != reasonNone || e.wholeAvail(h).count() < g.GPUs {
					continue
				}
				if best == topology.NoHost || lc.HostFreeGPUs(h) < lc.HostFreeGPUs(best) {
					best = h
				}
			}
		}
		used[best] = true
		if best == topology.NoHost {
			return false
		}
		e.s = s
		e.newEpoch()
		set := e.chooseWhole(best, g.GPUs, e.wholeAvail(best))
		first, _ := c.HostGPUs(best)
		cl := topology.Claim{Host: best, CPUMilli: g.CPUMilli, MemoryMiB: g.MemoryMiB}
		for i := 0; i < topology.MaxGPUsPerHost; i++ {
			if set.has(i) {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(i)})
			}
		}
		if err := lc.Allocate(cl); err != nil {
			panic(err)
		}
		claims = append(claims, cl)
		return true
	}
	for _, gi := range r.order {
		for n := 0; n < want[gi]; n++ {
			if !one(gi) {
				return nil, false
			}
		}
	}
	if grow {
		for _, gi := range r.order {
			for n := want[gi]; n < r.Groups[gi].Count && one(gi); n++ {
			}
		}
	}
	return claims, true
}

// shielded returns whether a host lies in a protected domain below scope
// level slv on l for request r, under the default protection.
func (o oracle) shielded(l *topology.Ledger, r *Request, slv topology.Level) func(topology.HostID) bool {
	e := &engine{}
	e.bind(l, r, &Placement{})
	e.bindProtect(true, defaultProtectRatio, r)
	return func(h topology.HostID) bool {
		_, _, ok := e.shielded(h, slv)
		return ok
	}
}

// oracleJob draws a request of whole-GPU groups (one or two, possibly
// elastic, with CPU, memory and model pins) and random constraints.
func oracleJob(t *rapid.T, c *topology.Cluster) *workload.Job {
	return randomJob(t, c, "oracle", []TaskKind{TaskWhole})
}

func TestBestFitAndTopologyMatchOracle(t *testing.T) {
	for _, name := range []string{"best-fit", "topology", "best-fit/cursors", "topology/cursors"} {
		t.Run(name, func(t *testing.T) {
			name, mode, _ := strings.Cut(name, "/")
			if mode == "cursors" {
				defer func(old int) { gatherMax = old }(gatherMax)
				gatherMax = 0 // merge index cursors even in small scopes
			}
			rapid.Check(t, func(t *rapid.T) {
				c := randomCluster(t)
				l := topology.NewLedger(c)
				randomFill(t, l)
				pl := newPolicy(t, name, c)
				o := oracle{topo: name == "topology"}
				for i := 0; i < 4; i++ {
					r, err := NewRequest(c, oracleJob(t, c))
					if err != nil {
						t.Fatal(err)
					}
					if rapid.IntRange(0, 3).Draw(t, "filter") == 0 {
						banned := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "banned"))
						r.AllowHost = func(h topology.HostID) bool { return h != banned }
					}
					var p Placement
					x := pl.Place(l, r, &p)
					if x == nil {
						checkPlacement(t, l, r, &p)
					}
					steps := o.steps(l, r)
					matched := false
					for _, st := range steps {
						if x == nil && p.Level == st.lv && p.Domain == st.dom {
							if st.ok {
								if got, want := fmt.Sprint(p.Claims), fmt.Sprint(st.claims); got != want {
									t.Fatalf("claims differ:\nplacer %s\noracle %s", got, want)
								}
							}
							matched = true
							break
						}
						if st.ok {
							if x != nil {
								t.Fatalf("placer does not fit, oracle places in %s %s (%v)", c.LevelName(st.lv), c.DomainName(st.dom), x)
							}
							t.Fatalf("placer chose %s %s, oracle %s %s", c.LevelName(p.Level), c.DomainName(p.Domain), c.LevelName(st.lv), c.DomainName(st.dom))
						}
					}
					if x == nil && !matched {
						t.Fatalf("placer chose %s %s, which the oracle never tries", c.LevelName(p.Level), c.DomainName(p.Domain))
					}
					if x != nil {
						continue
					}
					if rapid.Bool().Draw(t, "commit") {
						if _, err := Commit(l, &p); err != nil {
							t.Fatal(err)
						}
					}
				}
			})
		})
	}
}

// TestBestFitDomainIsExhaustiveOptimum checks best-fit's choice of domain
// against exhaustive search for rigid gangs of identical whole-GPU tasks:
// the chosen domain is, among the domains at the required level where the
// tasks can be packed at all (by exhaustive count of task slots per host:
// ⌊usable free GPUs / GPUs per task⌋ bounded by CPU and memory, which is
// exact for identical tasks), the one with the fewest free GPUs, ties to the
// lowest ID; and no domain is feasible when best-fit finds none.
func TestBestFitDomainIsExhaustiveOptimum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := randomCluster(t)
		l := topology.NewLedger(c)
		randomFill(t, l)
		lv := topology.Level(rapid.IntRange(1, int(c.LevelCluster())).Draw(t, "level"))
		g := workload.TaskGroup{GPUs: rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "gpus"), CPUMilli: rapid.SampledFrom([]int64{0, 2000}).Draw(t, "cpu")}
		j := job("x", rapid.IntRange(1, 6).Draw(t, "tasks"), g, req(c.LevelName(lv)))
		r := mustRequest(t, c, j)
		var p Placement
		x := newPolicy(t, "best-fit", c).Place(l, r, &p)

		e := &engine{}
		e.bind(l, r, &Placement{})
		best := topology.NoDomain
		for _, d := range c.DomainsAt(lv) {
			s, _ := e.makeScope(lv, d)
			e.s = s
			e.newEpoch()
			slots := 0
			for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
				if !s.contains(h) || e.hostReason(h, &r.Groups[0]) != reasonNone {
					continue
				}
				n := e.wholeAvail(h).count() / g.GPUs
				if g.CPUMilli > 0 {
					n = min(n, int(l.CPUFree(h)/g.CPUMilli))
				}
				slots += n
			}
			if slots < r.Groups[0].Count {
				continue
			}
			if best == topology.NoDomain || l.FreeGPUs(d) < l.FreeGPUs(best) || l.FreeGPUs(d) == l.FreeGPUs(best) && d < best {
				best = d
			}
		}
		if (best != topology.NoDomain) != (x == nil) {
			t.Fatalf("exhaustive feasible=%v, best-fit placed=%v (%v)", best != topology.NoDomain, x == nil, x)
		}
		if x == nil && p.Domain != best {
			t.Fatalf("best-fit chose %s (%d free), optimum %s (%d free)", c.DomainName(p.Domain), l.FreeGPUs(p.Domain), c.DomainName(best), l.FreeGPUs(best))
		}
	})
}
