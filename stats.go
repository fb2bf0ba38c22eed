package gpusched

import (
	"math"
	"slices"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// Reason tokens: why a job waits, as one machine-readable word, named
// after what users already alert on in Kueue and kube-scheduler (a pod
// condition's reason, a metric's label). ReasonCode.Token maps every code
// to one; TokenUnschedulable stands for a reason the Scheduler does not
// classify (nil, or a code this version does not know).
const (
	// TokenWaitingForQuota: a quota of the job's queue or an ancestor binds
	// (WaitQuota).
	TokenWaitingForQuota = "WaitingForQuota"
	// TokenQuotaReserved: the quota it needs is held for an earlier job of
	// a backfilling queue (WaitQuotaHeld).
	TokenQuotaReserved = "QuotaReserved"
	// TokenInsufficientCapacity: not enough free GPUs of an acceptable
	// model, or the cluster is full (WaitCapacity).
	TokenInsufficientCapacity = "InsufficientCapacity"
	// TokenTopologyPlacementFailed: enough free GPUs, but no domain at the
	// required level holds the gang (WaitTopology).
	TokenTopologyPlacementFailed = "TopologyPlacementFailed"
	// TokenFragmentation: enough free GPUs, spread so that the tasks do
	// not fit on the hosts (WaitFragmentation).
	TokenFragmentation = "Fragmentation"
	// TokenTooLargeForTopology: larger than any domain at its required
	// level even when idle (WaitTooLarge).
	TokenTooLargeForTopology = "TooLargeForTopology"
	// TokenWaitingForBackfillWindow: it would delay a job holding a
	// reservation (WaitBackfill).
	TokenWaitingForBackfillWindow = "WaitingForBackfillWindow"
	// TokenBlockedByQueueHead: a strict FIFO queue's head cannot start
	// (WaitBehindHead).
	TokenBlockedByQueueHead = "BlockedByQueueHead"
	// TokenWaitingForPreemptedWorkloads: victims are being stopped for it
	// (WaitPreemption).
	TokenWaitingForPreemptedWorkloads = "WaitingForPreemptedWorkloads"
	// TokenUnschedulable: no classified reason (kube-scheduler's generic
	// word).
	TokenUnschedulable = "Unschedulable"
)

// reasonTokens is each ReasonCode's token, by code (TestEveryReasonCodeHasToken).
var reasonTokens = [...]string{"", TokenWaitingForQuota, TokenQuotaReserved, TokenInsufficientCapacity,
	TokenTopologyPlacementFailed, TokenFragmentation, TokenTooLargeForTopology,
	TokenWaitingForBackfillWindow, TokenBlockedByQueueHead, TokenWaitingForPreemptedWorkloads}

// Token returns c's reason token (TokenWaitingForQuota, …), or
// TokenUnschedulable for a code it does not know.
func (c ReasonCode) Token() string {
	if c > 0 && int(c) < len(reasonTokens) {
		return reasonTokens[c]
	}
	return TokenUnschedulable
}

// Token returns the reason's token: its Code's (ReasonCode.Token), and
// TokenUnschedulable for a nil Reason. A kube host sets it as the
// reason of a waiting pod's PodScheduled condition, so an operator can
// alert on quota against topology against preemption.
func (r *Reason) Token() string {
	if r == nil {
		return TokenUnschedulable
	}
	return r.Code.Token()
}

// ReasonTokens returns every token Token can return, in code order with
// TokenUnschedulable last: what an exporter pre-registers, so that a
// cause with no waiting job reads 0 rather than missing. A new slice.
func ReasonTokens() []string {
	out := append([]string(nil), reasonTokens[1:]...)
	return append(out, TokenUnschedulable)
}

// CycleStats are one cycle's figures, the same for every host that
// exports them (a kube plugin's /metrics, an embedder, the simulator).
// Counts of this cycle's actions are the lengths of the Decision's
// lists, repeated here so that one value carries them all.
type CycleStats struct {
	// Admitted counts Decision.Bindings; Borrowing and Backfilled those of
	// them that borrowed quota and that backfilled.
	Admitted, Borrowing, Backfilled int
	// Preemptions, Shrinks, Migrations, Recoveries, Grows count the
	// Decision's lists of those names: the stops and moves issued.
	Preemptions, Shrinks, Migrations, Recoveries, Grows int
	// Expired counts the plans withdrawn because the host never reported
	// them started (Decision.Expired, Config.AdmitTimeout).
	Expired int
	// Refusals counts the stops the host reported refused
	// (EvictionRefused) since the cycle before.
	Refusals int
	// Pending counts every waiting job.
	Pending int
	// PendingBy counts the waiting jobs per leaf queue and reason token,
	// for the pairs with at least one: queue by queue as in
	// Decision.Pending, tokens in ReasonTokens order. Empty with
	// Config.OmitPending (no reasons are listed then).
	PendingBy []PendingCount
	// Queues are every queue's GPUs, root first (the order of
	// Scheduler.Queues).
	Queues []QueueGPUs
	// FreeGPUs counts the cluster's free allocatable GPUs.
	FreeGPUs int
	// Stranded are, per topology level, the free GPUs no waiting shape can
	// use (see StrandedGPUs), innermost level first; levels without
	// domains are left out.
	Stranded []StrandedGPUs
}

// PendingCount is the number of jobs of one leaf queue waiting for one
// cause.
type PendingCount struct {
	Queue string // the leaf queue
	Token string // the reason token (Reason.Token)
	Jobs  int    // ≥ 1
}

// QueueGPUs are one queue's GPUs, in GPUs (fractions for shares), its
// subtree's jobs included: the "gpu" resource of its queue.View.
type QueueGPUs struct {
	Queue string
	Leaf  bool
	// Governed is false when no quota limits GPUs; Nominal and Borrowed
	// are 0 then.
	Governed bool
	// Nominal is the guarantee; Used is held by running jobs, Reserved by
	// admitted ones not started; Borrowed is Used+Reserved beyond Nominal.
	Nominal, Used, Reserved, Borrowed float64
}

// StrandedGPUs is the fragmentation at one topology level: the free GPUs
// of domains at that level that hold fewer free GPUs than every waiting
// shape needs in one domain of that level. A shape needs, in one domain,
// its whole gang's GPUs (at its minimum size) at the levels where it
// requires one domain and above, and at the cluster level; elsewhere one
// task's (its smallest task with whole GPUs; a share or MIG task counts
// as one GPU). At the host level a host counts against the shapes that
// accept its model; at the other levels models are not told apart.
// Quotas, host filters, CPU and memory do not enter: this is what the
// GPUs' spread alone forbids. With no job waiting nothing is stranded.
type StrandedGPUs struct {
	Level topology.Level
	Name  string // the level's name (topology.Cluster.LevelName)
	// GPUs counts the stranded free GPUs, Domains the domains holding them.
	GPUs, Domains int
	// Need is the fewest free GPUs a domain of this level must hold for
	// some waiting shape to use them: a domain with free GPUs but fewer
	// holds stranded ones (a live page marks it). At the host level it is
	// the least of ModelNeed. 0 when no job waits; math.MaxInt when no
	// waiting shape can use a domain of this level.
	Need int
	// ModelNeed, at the host level only, is Need for the hosts of each GPU
	// model, by topology.ModelID; nil at the other levels.
	ModelNeed []int
}

// statsBook is the concern of the cycle statistics (Decision.Stats): it
// remembers what the figures since the last cycle are counted from. Its
// methods are the only writers of its fields.
type statsBook struct {
	refusals uint64 // refusals.count at the last cycle
	// leaves are each leaf's shape needs, by node ID, as of the leaf's
	// version then: a leaf whose jobs did not change is not walked again.
	leaves []leafNeeds
}

// leafNeeds are the needs of one leaf's waiting classes at its version.
type leafNeeds struct {
	leaf    *queue.Leaf
	version uint64
	n       shapeNeeds
}

// collect returns cycle d's statistics. Cost: O(len(d.Pending)) over
// rows already built, O(queues), O(waiting classes × groups), and per
// level O(stranded domains × log domains) through the ledger's ordered
// indexes (a domain with enough free GPUs for some shape stops the walk).
func (sb *statsBook) collect(s *Scheduler, d *Decision) *CycleStats {
	st := &CycleStats{Admitted: len(d.Bindings), Preemptions: len(d.Preemptions), Shrinks: len(d.Shrinks),
		Migrations: len(d.Migrations), Recoveries: len(d.Recoveries), Grows: len(d.Grows), Expired: len(d.Expired)}
	for i := range d.Bindings {
		if d.Bindings[i].Borrowing {
			st.Borrowing++
		}
		if d.Bindings[i].Backfill {
			st.Backfilled++
		}
	}
	st.Refusals = int(s.refused.count - sb.refusals)
	sb.refusals = s.refused.count
	for _, id := range s.tree.Leaves() {
		st.Pending += s.tree.LeafOf(id).Len()
	}
	st.PendingBy = pendingBy(d.Pending)
	st.Queues = queueGPUs(s.tree)
	root := s.c.DomainsAt(s.c.LevelCluster())
	if len(root) > 0 {
		st.FreeGPUs = s.ledger.FreeGPUs(root[0])
	}
	st.Stranded = stranded(s, sb.needs(s))
	return st
}

// pendingBy counts rows per queue and token; rows come queue by queue.
func pendingBy(rows []Pending) []PendingCount {
	var out []PendingCount
	var counts [len(reasonTokens) + 1]int // by code; the last: unclassified
	flush := func(q string) {
		for k, n := range counts {
			if n > 0 {
				tok := TokenUnschedulable
				if k < len(reasonTokens) {
					tok = ReasonCode(k).Token()
				}
				out = append(out, PendingCount{Queue: q, Token: tok, Jobs: n})
				counts[k] = 0
			}
		}
	}
	for i := range rows {
		if i > 0 && rows[i].Queue != rows[i-1].Queue {
			flush(rows[i-1].Queue)
		}
		k := len(reasonTokens)
		if r := rows[i].Reason; r != nil && r.Code > 0 && int(r.Code) < len(reasonTokens) {
			k = int(r.Code)
		}
		counts[k]++
	}
	if len(rows) > 0 {
		flush(rows[len(rows)-1].Queue)
	}
	return out
}

// queueGPUs reads every node's GPU dimension (dimension 0, in milli-GPUs).
func queueGPUs(t *queue.Tree) []QueueGPUs {
	out := make([]QueueGPUs, t.NumNodes())
	gov := t.Governed(0)
	for i := range out {
		id := queue.NodeID(i)
		used, reserved := t.Usage(id)
		q := QueueGPUs{Queue: t.Name(id), Leaf: t.LeafOf(id) != nil, Governed: gov,
			Used: float64(used[0]) / 1000, Reserved: float64(reserved[0]) / 1000}
		if gov {
			nom := t.Nominal(id)[0]
			q.Nominal = float64(nom) / 1000
			q.Borrowed = float64(max(0, used[0]+reserved[0]-nom)) / 1000
		}
		out[i] = q
	}
	return out
}

// shapeNeeds is, per level, the fewest free GPUs some waiting shape needs
// in one domain of that level (math.MaxInt: none waits), and per GPU
// model the fewest on one host.
type shapeNeeds struct {
	level []int // by Level
	model []int // by ModelID, for the host level
	any   bool  // some shape needs GPUs
}

// reset makes n need nothing, sized for cluster c.
func (n *shapeNeeds) reset(c *topology.Cluster) {
	levels, models := int(c.LevelCluster())+1, len(c.Models())
	if len(n.level) != levels || len(n.model) != models {
		n.level, n.model = make([]int, levels), make([]int, models)
	}
	for i := range n.level {
		n.level[i] = math.MaxInt
	}
	for i := range n.model {
		n.model[i] = math.MaxInt
	}
	n.any = false
}

// merge lowers n by o.
func (n *shapeNeeds) merge(o *shapeNeeds) {
	for i, v := range o.level {
		n.level[i] = min(n.level[i], v)
	}
	for i, v := range o.model {
		n.model[i] = min(n.model[i], v)
	}
	n.any = n.any || o.any
}

// needs gathers the needs of every waiting class of s's queues, walking
// the classes of the leaves whose jobs changed since the last call:
// O(leaves + classes of changed leaves).
func (sb *statsBook) needs(s *Scheduler) shapeNeeds {
	c := s.c
	if len(sb.leaves) != s.tree.NumNodes() {
		sb.leaves = make([]leafNeeds, s.tree.NumNodes())
	}
	var all shapeNeeds
	all.reset(c)
	for _, id := range s.tree.Leaves() {
		ln, l := &sb.leaves[id], s.tree.LeafOf(id)
		if ln.leaf != l || ln.version != l.Version() || len(ln.n.level) != len(all.level) || len(ln.n.model) != len(all.model) {
			ln.leaf, ln.version = l, l.Version()
			ln.n.reset(c)
			l.Classes(func(cl *queue.Class) bool {
				if e, ok := cl.First(); ok {
					ln.n.add(c, e.Ref.(*job))
				}
				return true
			})
		}
		all.merge(&ln.n)
	}
	return all
}

// add lowers n by job j's shape.
func (n *shapeNeeds) add(c *topology.Cluster, j *job) {
	task, total := math.MaxInt, 0
	for i := range j.req.Groups {
		g := &j.req.Groups[i]
		if g.Kind == gang.TaskCPU || g.Min == 0 {
			continue // no GPUs
		}
		t := 1 // a share or a MIG slot: one GPU
		if g.Kind == gang.TaskWhole {
			t = g.GPUs
		}
		task = min(task, t)
		if g.Kind == gang.TaskWhole {
			total += g.Min * t
		} else {
			total++
		}
	}
	if task == math.MaxInt {
		return // needs no GPU
	}
	n.any = true
	whole := func(l topology.Level) bool {
		if l == c.LevelCluster() {
			return true
		}
		for _, r := range j.req.Required {
			if r == l || (r >= topology.LevelHost && l > r) {
				return true
			}
		}
		return false
	}
	for l := range n.level {
		need := task
		if whole(topology.Level(l)) {
			need = total
		}
		n.level[l] = min(n.level[l], need)
	}
	host := task
	if whole(topology.LevelHost) {
		host = total
	}
	for m := range n.model {
		for i := range j.req.Groups {
			g := &j.req.Groups[i]
			if g.Kind != gang.TaskCPU && g.Accepts(topology.ModelID(m)) {
				n.model[m] = min(n.model[m], host)
				break
			}
		}
	}
}

// stranded counts the free GPUs no waiting shape can use, per level.
func stranded(s *Scheduler, n shapeNeeds) []StrandedGPUs {
	c, l := s.c, s.ledger
	var out []StrandedGPUs
	for lv := topology.LevelFabric; lv <= c.LevelCluster(); lv++ {
		if len(c.DomainsAt(lv)) == 0 {
			continue
		}
		st := StrandedGPUs{Level: lv, Name: c.LevelName(lv)}
		if n.any {
			if lv == topology.LevelHost {
				st.ModelNeed = slices.Clone(n.model)
				st.Need = slices.Min(n.model)
			} else {
				st.Need = n.level[lv]
			}
			count := func(need int) func(int) bool {
				return func(free int) bool {
					if free >= need {
						return false
					}
					st.GPUs += free
					st.Domains++
					return true
				}
			}
			if lv == topology.LevelHost {
				root := c.DomainsAt(c.LevelCluster())[0]
				for m := range n.model {
					f := count(n.model[m])
					l.AscendHosts(root, topology.ModelID(m), 1, func(_ topology.HostID, free int) bool { return f(free) })
				}
			} else {
				f := count(n.level[lv])
				l.AscendDomains(lv, 1, func(_ topology.DomainID, free int) bool { return f(free) })
			}
		}
		out = append(out, st)
	}
	return out
}
