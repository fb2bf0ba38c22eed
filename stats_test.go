package gpusched

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// TestEveryReasonCodeHasToken: every ReasonCode (each one String names)
// maps to a token of its own, listed by ReasonTokens; an unknown code and
// a nil reason map to TokenUnschedulable.
func TestEveryReasonCodeHasToken(t *testing.T) {
	if len(reasonTokens) != len(reasonNames) {
		t.Fatalf("%d reason codes named, %d with a token: give each new code a token (stats.go)", len(reasonNames)-1, len(reasonTokens)-1)
	}
	all := ReasonTokens()
	seen := map[string]ReasonCode{}
	for c := ReasonCode(1); int(c) < len(reasonNames); c++ {
		tok := c.Token()
		if tok == "" || tok == TokenUnschedulable {
			t.Errorf("code %s has no token", c)
		}
		if o, dup := seen[tok]; dup {
			t.Errorf("codes %s and %s share token %s", o, c, tok)
		}
		seen[tok] = c
		if !slices.Contains(all, tok) {
			t.Errorf("ReasonTokens lacks %s", tok)
		}
		if (&Reason{Code: c}).Token() != tok {
			t.Errorf("Reason.Token differs from its code's for %s", c)
		}
	}
	if got := ReasonCode(len(reasonNames)).Token(); got != TokenUnschedulable {
		t.Errorf("unknown code: %s", got)
	}
	if got := (*Reason)(nil).Token(); got != TokenUnschedulable {
		t.Errorf("nil reason: %s", got)
	}
	if len(all) != len(seen)+1 || all[len(all)-1] != TokenUnschedulable {
		t.Errorf("ReasonTokens = %v", all)
	}
}

// TestCycleStatsScenario: two queues with 16-GPU guarantees on 32 GPUs
// (4 hosts of 8, two ToRs). Queue a runs four 6-GPU jobs (24 GPUs: it
// borrows 8), leaving 2 GPUs free on every host; b's 4-GPU job (within
// its guarantee) cannot be placed (fragmentation) and reclaims from a by
// preemption; a's 8-GPU job waits; a ToR-bound gang of b waits too. Every
// cycle's Decision.Stats matches a naive recomputation from the public
// API, and the scenario produces the figures it is about: borrowing,
// stranded GPUs at the host level, a preemption, several causes.
func TestCycleStatsScenario(t *testing.T) {
	c := testCluster(t, 4, 2)
	gpu := func(n int64) []queue.Quota { return []queue.Quota{{Resource: "gpu", Nominal: n}} }
	p, err := NewPlanPreemptor(preempt.Config{Reclaim: preempt.ReclaimAny}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Preemptor: p, Stats: true, DefaultRuntime: time.Hour,
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a", Quotas: gpu(16)}, {Name: "b", Quotas: gpu(16)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	submit := func(id, q string, tasks, gpus int, within string) {
		t.Helper()
		j := workload.Job{ID: id, Queue: q, Groups: []workload.TaskGroup{{Count: tasks, GPUs: gpus}}}
		if within != "" {
			j.Topology = []workload.Constraint{{Level: within, Required: true}}
		}
		if err := s.Submit(j, now); err != nil {
			t.Fatal(err)
		}
	}
	var seen struct {
		borrowing, preemptions, stranded int
		tokens                           map[string]bool
	}
	seen.tokens = map[string]bool{}
	cycle := func() Decision {
		t.Helper()
		d := s.Schedule(now)
		checkStats(t, s, d)
		for _, b := range d.Bindings {
			if err := s.Started(b.Job, now); err != nil {
				t.Fatal(err)
			}
		}
		seen.borrowing += d.Stats.Borrowing
		seen.preemptions += d.Stats.Preemptions
		for _, x := range d.Stats.Stranded {
			if x.Level == topology.LevelHost {
				seen.stranded += x.GPUs
			}
		}
		for _, pc := range d.Stats.PendingBy {
			seen.tokens[pc.Token] = true
		}
		return d
	}
	for i := range 4 {
		submit(fmt.Sprintf("a%d", i), "a", 1, 6, "")
	}
	cycle()
	now = now.Add(time.Minute)
	submit("b1", "b", 1, 4, "")
	submit("a5", "a", 1, 8, "")
	submit("b2", "b", 2, 8, "tor")
	d := cycle()
	for step := 0; step < 4; step++ {
		now = now.Add(time.Minute)
		for _, p := range d.Preemptions {
			if err := s.Preempted(p.Job, now); err != nil {
				t.Fatal(err)
			}
		}
		d = cycle()
	}
	t.Logf("borrowing bindings %d, preemptions %d, host-level stranded GPU-cycles %d, tokens %v", seen.borrowing, seen.preemptions, seen.stranded, seen.tokens)
	if seen.borrowing == 0 || seen.preemptions == 0 || seen.stranded == 0 || len(seen.tokens) < 2 {
		t.Error("the scenario did not produce the figures it checks")
	}
}

// checkStats recomputes d.Stats naively from the public API: the
// Decision's lists, Queues, the ledger reader and each waiting job's
// spec, every domain against every waiting shape.
func checkStats(t *testing.T, s *Scheduler, d Decision) {
	t.Helper()
	st := d.Stats
	if st == nil {
		t.Fatal("Config.Stats set, Decision.Stats nil")
	}
	borrowing, backfilled := 0, 0
	for _, b := range d.Bindings {
		if b.Borrowing {
			borrowing++
		}
		if b.Backfill {
			backfilled++
		}
	}
	want := []int{len(d.Bindings), borrowing, backfilled, len(d.Preemptions), len(d.Shrinks), len(d.Migrations), len(d.Recoveries), len(d.Grows), len(d.Expired), len(d.Pending)}
	got := []int{st.Admitted, st.Borrowing, st.Backfilled, st.Preemptions, st.Shrinks, st.Migrations, st.Recoveries, st.Grows, st.Expired, st.Pending}
	if !slices.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	// Pending by queue and token: queues in listed order, tokens in
	// ReasonTokens order.
	var queues []string
	byQueue := map[string]map[string]int{}
	for _, p := range d.Pending {
		if byQueue[p.Queue] == nil {
			queues = append(queues, p.Queue)
			byQueue[p.Queue] = map[string]int{}
		}
		byQueue[p.Queue][p.Reason.Token()]++
	}
	var pb []PendingCount
	for _, q := range queues {
		for _, tok := range ReasonTokens() {
			if n := byQueue[q][tok]; n > 0 {
				pb = append(pb, PendingCount{Queue: q, Token: tok, Jobs: n})
			}
		}
	}
	if !slices.Equal(pb, st.PendingBy) {
		t.Errorf("PendingBy %v, want %v", st.PendingBy, pb)
	}
	// Queues.
	views := s.Queues()
	if len(views) != len(st.Queues) {
		t.Fatalf("%d queues, want %d", len(st.Queues), len(views))
	}
	for i, v := range views {
		r := v.Resources[slices.IndexFunc(v.Resources, func(r queue.ResourceView) bool { return r.Resource == "gpu" })]
		w := QueueGPUs{Queue: v.Queue, Leaf: v.Leaf, Governed: r.Governed, Nominal: r.Nominal, Used: r.Used, Reserved: r.Reserved, Borrowed: r.Borrowed}
		if st.Queues[i] != w {
			t.Errorf("queue %d: %+v, want %+v", i, st.Queues[i], w)
		}
	}
	// Free and stranded GPUs.
	c, l := s.Cluster(), s.Ledger()
	free := 0
	for h := range topology.HostID(c.NumHosts()) {
		free += l.HostFreeGPUs(h)
	}
	if st.FreeGPUs != free {
		t.Errorf("FreeGPUs %d, want %d", st.FreeGPUs, free)
	}
	var reqs []*gang.Request
	for _, p := range d.Pending {
		js, _ := s.Job(p.Job)
		r, err := gang.NewRequest(c, &js.Spec)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	var wantS []StrandedGPUs
	for lv := topology.LevelFabric; lv <= c.LevelCluster(); lv++ {
		ds := c.DomainsAt(lv)
		if len(ds) == 0 {
			continue
		}
		x := StrandedGPUs{Level: lv, Name: c.LevelName(lv)}
		for _, dom := range ds {
			f := l.FreeGPUs(dom)
			if f == 0 || len(reqs) == 0 {
				continue
			}
			model := topology.NoModel
			if lv == topology.LevelHost {
				first, _ := c.DomainHosts(dom)
				model = c.HostModel(first)
			}
			if !slices.ContainsFunc(reqs, func(r *gang.Request) bool { return oracleUses(c, r, lv, model, f) }) {
				x.GPUs += f
				x.Domains++
			}
		}
		wantS = append(wantS, x)
	}
	counts := func(xs []StrandedGPUs) []StrandedGPUs {
		out := make([]StrandedGPUs, len(xs))
		for i, x := range xs {
			out[i] = StrandedGPUs{Level: x.Level, Name: x.Name, GPUs: x.GPUs, Domains: x.Domains}
		}
		return out
	}
	if !reflect.DeepEqual(counts(st.Stranded), wantS) {
		t.Errorf("Stranded %+v, want %+v", st.Stranded, wantS)
	}
	// Need (ModelNeed at the host level) marks the same domains.
	for _, x := range st.Stranded {
		gpus := 0
		for _, dom := range c.DomainsAt(x.Level) {
			need := x.Need
			if x.Level == topology.LevelHost && x.ModelNeed != nil {
				first, _ := c.DomainHosts(dom)
				need = x.ModelNeed[c.HostModel(first)]
				if x.Need > need {
					t.Errorf("host level: Need %d above a model's %d", x.Need, need)
				}
			}
			if f := l.FreeGPUs(dom); f > 0 && f < need {
				gpus += f
			}
		}
		if gpus != x.GPUs {
			t.Errorf("level %s: the domains with fewer free GPUs than Need %d (%v) hold %d, Stranded counts %d", x.Name, x.Need, x.ModelNeed, gpus, x.GPUs)
		}
	}
}

// oracleUses says whether shape r could use a domain of level lv with
// free GPUs free (of model model at the host level, NoModel elsewhere):
// it needs its whole minimum gang there where it requires one domain at
// lv or below it in the network, or lv is the cluster's; one task
// otherwise.
func oracleUses(c *topology.Cluster, r *gang.Request, lv topology.Level, model topology.ModelID, free int) bool {
	whole := lv == c.LevelCluster()
	for _, q := range r.Required {
		whole = whole || q == lv || (q >= topology.LevelHost && lv > q)
	}
	task, total, usable := math.MaxInt, 0, false
	for _, g := range r.Groups {
		if g.Kind == gang.TaskCPU {
			continue
		}
		n := 1
		if g.Kind == gang.TaskWhole {
			n = g.GPUs
			total += g.Min * n
		} else {
			total++
		}
		task = min(task, n)
		usable = usable || model == topology.NoModel || g.Accepts(model)
	}
	if !usable || task == math.MaxInt {
		return false
	}
	if whole {
		return free >= total
	}
	return free >= task
}

// TestCycleStatsOff: without Config.Stats no figures are made.
func TestCycleStatsOff(t *testing.T) {
	s, err := New(Config{Cluster: testCluster(t, 1, 1), Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(t0); d.Stats != nil {
		t.Errorf("Stats %+v without Config.Stats", d.Stats)
	}
}

// TestCycleStatsRefusals: a stop the host refuses (EvictionRefused) is
// counted once, in the next cycle's Refusals.
func TestCycleStatsRefusals(t *testing.T) {
	c := testCluster(t, 1, 1)
	p, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.AnyQueue}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Preemptor: p, Stats: true, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, prio int32) workload.Job {
		return workload.Job{ID: id, Queue: "a", Priority: prio, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}
	}
	now := t0
	if err := s.Submit(job("low", 0), now); err != nil {
		t.Fatal(err)
	}
	s.Schedule(now)
	if err := s.Started("low", now); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if err := s.Submit(job("high", 10), now); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(now)
	checkStats(t, s, d)
	if len(d.Preemptions) != 1 || d.Stats.Preemptions != 1 || d.Stats.Refusals != 0 {
		t.Fatalf("preemptions %v, stats %+v", d.Preemptions, d.Stats)
	}
	if err := s.EvictionRefused("low", now, "a PodDisruptionBudget"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	d = s.Schedule(now)
	checkStats(t, s, d)
	if d.Stats.Refusals != 1 {
		t.Errorf("Refusals %d after one refusal", d.Stats.Refusals)
	}
	if d = s.Schedule(now); d.Stats.Refusals != 0 {
		t.Errorf("Refusals %d in the cycle after", d.Stats.Refusals)
	}
}

// TestPropertyCycleStats: random streams on a cluster of one model with
// ToRs or on one of two models (H100 hosts, GB200 trays), two queues with
// random guarantees, jobs of random shapes (whole GPUs, shares, CPU-only
// tasks), some restricted to a model, some required in one host or ToR,
// finishing at random: every cycle's Decision.Stats matches checkStats'
// naive recomputation.
func TestPropertyCycleStats(t *testing.T) {
	var strandedSeen int
	rapid.Check(t, func(rt *rapid.T) {
		var c *topology.Cluster
		hetero := rapid.Bool().Draw(rt, "hetero")
		if hetero {
			var err error
			if c, err = topology.Load([]byte(heteroCluster), "mixed.yaml", topology.FormatYAML); err != nil {
				rt.Fatal(err)
			}
		} else {
			c = testCluster(t, rapid.IntRange(2, 6).Draw(rt, "hosts"), 2)
		}
		total := int64(c.NumGPUs())
		na := rapid.Int64Range(0, total).Draw(rt, "nominalA")
		nb := rapid.Int64Range(0, total-na).Draw(rt, "nominalB")
		gpu := func(n int64) []queue.Quota { return []queue.Quota{{Resource: "gpu", Nominal: n}} }
		s, err := New(Config{Cluster: c, Stats: true, DefaultRuntime: time.Hour,
			Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a", Quotas: gpu(na)}, {Name: "b", Quotas: gpu(nb)}}}}})
		if err != nil {
			rt.Fatal(err)
		}
		now := t0
		var running []string
		for step := range 20 {
			now = now.Add(time.Minute)
			for range rapid.IntRange(0, 3).Draw(rt, "submits") {
				g := shapes[rapid.IntRange(0, len(shapes)-1).Draw(rt, "shape")]
				if rapid.IntRange(0, 5).Draw(rt, "cpuOnly") == 0 {
					g = workload.TaskGroup{Count: 1, CPUMilli: 1000}
				}
				if hetero && rapid.Bool().Draw(rt, "model") {
					g.Models = []string{rapid.SampledFrom([]string{"H100", "GB200"}).Draw(rt, "which")}
				}
				j := workload.Job{ID: fmt.Sprintf("j%d-%d", step, len(running)+rapid.IntRange(0, 1<<20).Draw(rt, "id")),
					Queue: rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "queue"), Groups: []workload.TaskGroup{g}}
				if lv := rapid.SampledFrom([]string{"", "", "host", "tor"}).Draw(rt, "within"); lv != "" && (lv == "host" || !hetero) {
					j.Topology = []workload.Constraint{{Level: lv, Required: true}}
				}
				if err := s.Submit(j, now); err != nil && !errors.Is(err, ErrNeverFits) && !errors.Is(err, ErrDuplicateJob) {
					rt.Fatal(err)
				}
			}
			d := s.Schedule(now)
			checkStats(t, s, d)
			for _, x := range d.Stats.Stranded {
				strandedSeen += x.GPUs
			}
			for _, b := range d.Bindings {
				if err := s.Started(b.Job, now); err != nil {
					rt.Fatal(err)
				}
				running = append(running, b.Job)
			}
			if len(running) > 0 && rapid.Bool().Draw(rt, "finish") {
				k := rapid.IntRange(0, len(running)-1).Draw(rt, "which")
				if err := s.Finished(running[k], now); err != nil {
					rt.Fatal(err)
				}
				running = slices.Delete(running, k, k+1)
			}
		}
	})
	if strandedSeen == 0 {
		t.Error("no stranded GPUs in any stream")
	}
}
