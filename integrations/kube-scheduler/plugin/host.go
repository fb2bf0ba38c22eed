package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// host is scheduler mode's host of one gpusched.Scheduler: it turns the
// profile's pods into jobs, runs coalesced Schedule cycles off kube's
// per-pod path, hands each binding to the extension points as per-pod
// assignments, and reports back (Started, Requeue, Finished, Checkpointed).
//
// Its state is built from the apiserver (the informers' listers) at start,
// and GPU nodes joining, leaving or changing shape are live changes of the
// running Scheduler (livenodes.go; a rebuild when they cannot be): a restarted scheduler restores
// bound pods' jobs as running, holding the GPUs their indices annotation
// names. mu guards every field below it; cycle holds it while it decides
// and releases it before talking to the apiserver.
type host struct {
	args    *Args
	log     klog.Logger
	profile string
	io      hostIO
	queues  queue.Config
	// queuesErr says why the queue tree could not be read: every pod then
	// waits with it as its reason.
	queuesErr error

	kick chan struct{}
	// lead says when this scheduler leads: no cycle runs before (leader.go).
	lead *leadership
	// check, when set, vets the profile once the scheduler is built
	// (postFilterConflict); its error is kept in refused.
	check func() error

	mu sync.Mutex
	// amu guards assign, byJob, the notes' map and msg, refused, requeue
	// and rejected for the extension points, which use them under amu
	// alone: a slow decision (which holds mu) never stalls PreEnqueue,
	// PreFilter, Filter, PostFilter, Reserve, Permit or Unreserve (issue
	// 26, defect 8). The cycle writes them under mu and amu, and reads
	// assign and byJob under amu too: PostFilter and Unreserve withdraw
	// bindings under amu alone.
	amu sync.Mutex
	// refused says why this host does not schedule (a profile scheduler
	// mode cannot run in): every pod waits with it as its reason.
	refused  error
	s        *gpusched.Scheduler
	topo     *Topology
	shape    string
	buildErr error
	jobs     map[string]*jobRec
	assign   map[types.UID]*assignment
	byJob    map[string][]types.UID // assign's pods per job, in assignment order
	// requeue are the jobs whose binding an extension point withdrew,
	// and rejected the nodes kube rejected for them (PostFilter): the
	// next cycle requeues them and excludes the nodes (constraints.go).
	requeue  []string
	rejected []rejection
	notes    map[types.UID]*podNote
	// live: the nodes the Scheduler's cluster follows (livenodes.go).
	live liveNodes
	// moved maps each queue a live edit removed to the leaf that took its
	// jobs (Args.RemovedQueueTarget): pods still labelled with it are
	// submitted there.
	moved map[string]string
	// parsed keeps last cycle's jobs, to reuse those whose pods did not change.
	parsed jobCache
	// ends books how jobs ended; finals keeps deleted pods' last phases
	// (lifecycle.go).
	ends   endBook
	finals finalPhases
	// away: GPU nodes temporarily unavailable (away.go).
	away awayNodes
	// freed: when bound pods last left each node (constraints.go).
	freed freedNodes
	// lost: GPUs marked failed because their node does not offer them
	// (gpuidentity.go).
	lost lostGPUs
	// page is what the live page shows of the last cycle (live.go).
	page board
	// metrics exports each cycle's figures (metrics.go); nil: none.
	metrics *cycleMetrics
	// dra: GPUs and claims of Dynamic Resource Allocation (dra.go); nil
	// when off.
	dra *drat
	// kf runs kube's own filters for waiting jobs (kubefilters.go); nil
	// until the first cycle unless the plugin set it.
	kf *kubeFilters
	// replans is how many more times this cycle may plan again the jobs
	// whose plans refusePlan took back, and replan says one did
	// (constraints.go).
	replans int
	replan  bool
	// trace measures what cycles wait on (cycletrace.go); nil: not
	// measured. woke says what started the running cycle (run).
	trace *cycleTrace
	woke  wake
	// conds writes waiting pods' conditions off the cycle loop, once run
	// started it (condwriter.go); nil: apply writes them itself.
	conds *condWriter
	// evq evicts cycles' victims off the cycle loop, once run started it
	// (evictqueue.go); nil: apply evicts them itself.
	evq *evictQueue
	// plq writes cycles' gang plans and lets the gangs through off the
	// cycle loop, once run started it (gangplan.go); nil: apply writes
	// them itself.
	plq *planQueue
	// asked are the pods whose eviction was asked, each at most once
	// (evictonce.go).
	asked askedEvictions
}

// wake is what started a cycle: by ("event", "idle", "first") and how
// long after the previous cycle's end.
type wake struct {
	by    string
	after time.Duration
}

// submitAt is the time to submit a job created at created: created, or
// the Scheduler's latest time when that is later (it refuses an event
// earlier than one it has seen, and a pod's creation time is often
// earlier than the last cycle's).
func (h *host) submitAt(created time.Time) time.Time {
	if n := h.s.Now(); created.Before(n) {
		return n
	}
	return created
}

// hostIO is what the host needs of the scheduler and the apiserver; tests
// give fakes. setPending and annotate may be called from several
// goroutines at once.
type hostIO interface {
	synced() bool
	listNodes() ([]*v1.Node, error)
	listPods() ([]*v1.Pod, error)
	activate(pods []*v1.Pod)
	rejectWaiting(uid types.UID, why string)
	event(pod *v1.Pod, typ, reason, msg string)
	// setPending sets the pod's PodScheduled condition False, with
	// reason (a reason token, reasons.go) and msg.
	setPending(ctx context.Context, pod *v1.Pod, reason, msg string) error
	deletePod(ctx context.Context, pod *v1.Pod) error
	// annotate sets annotations on pod (a merge patch).
	annotate(ctx context.Context, pod *v1.Pod, annotations map[string]string) error
	evict(ctx context.Context, pod *v1.Pod, grace time.Duration) error
	now() time.Time
}

// jobRec is a job the Scheduler knows.
type jobRec struct {
	job *podJob
	// evicting: a Preemption or a Recovery asked its pods to go; the
	// job is reported Preempted (or Requeued) once none is bound.
	evicting bool
	recovery bool
	// struck is why a NoExecute taint of a MIG device its pods hold
	// recovers it (draStruck), as last told.
	struck string
	// blocked says why the eviction of a victim planned for this job was
	// refused (a PodDisruptionBudget).
	blocked string
	// partial: restored from a gang only part of which was bound; note
	// is what its unbound pods are told, every cycle.
	partial bool
	note    string
	// checkpoint reported to the Scheduler.
	checkpoint time.Time
	// failed and vanished count its pods that failed, and that were
	// deleted without a terminal phase (lifecycle.go).
	failed, vanished int
	// excluded are the nodes kube rejected for it, rejections how often;
	// filter is the key of its host filter in the Scheduler
	// (constraints.go).
	excluded   map[string]exclusion
	rejections int
	filter     string
	// kubeNote says which nodes kube's own filters refuse for it
	// (kubefilters.go).
	kubeNote string
	// bindFailures counts its pods' failures after Reserve (bindFailed).
	bindFailures int
	// conflicts counts its plans refusePlan took back in a row for the
	// pods planned with them in the same cycle, and conflictNote says why
	// the last was (constraints.go).
	conflicts    int
	conflictNote string
	// lagRetried: the last rejection taken for kube's cache lagging
	// (freedNodes).
	lagRetried time.Time
	// spread is its quota this cycle, for a gang with a spread rule
	// (spread.go); nil otherwise.
	spread *spreadQuota
}

// assignment is where one pod of a bound job goes.
type assignment struct {
	job      string
	node     string
	gpus     []int
	reserved bool
	// unwritten: a gang member whose gang's plan is not yet written to
	// every member; it is held at PreEnqueue until it is (gangplan.go).
	unwritten bool
	// part is what of gpus[0] a MIG or share task takes (partOfClaim,
	// dra_mig.go): "mig:PROFILE@START", "milli:N"; "" for whole GPUs.
	part string
	// waves: a member of a spread gang let through in waves, wave its
	// own (from 0), pod itself, to activate with its wave (spread.go).
	waves bool
	wave  int
	pod   *v1.Pod
}

// podNote is what was last said about a waiting pod, to rate-limit events
// and status patches.
type podNote struct {
	msg string // the current reason
	// What the last event and status patch said, and when.
	evMsg, patchMsg string
	event, patched  time.Time
}

func newHost(args *Args, profile string, io hostIO, log klog.Logger) *host {
	return &host{args: args, profile: profile, io: io, log: log, kick: make(chan struct{}, 1), lead: newLeadership(),
		jobs: map[string]*jobRec{}, assign: map[types.UID]*assignment{}, byJob: map[string][]types.UID{},
		notes: map[types.UID]*podNote{}, moved: map[string]string{}}
}

// poke asks for a cycle; calls coalesce until the cycle runs.
func (h *host) poke() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// preemptPlansPerCycle bounds the preemption plans one cycle makes
// (gpusched.NewPlanPreemptor's maxPerCycle; its default is 8). Each
// waiting job the cycle cannot place asks for victims of its own, so a
// queue reclaiming its quota with many jobs gets that many plans a cycle;
// each costs a pass over the running jobs (about 20 ms at 1,000 nodes on
// a loaded 2-core machine), so a cycle of 32 plans stays under a second.
const preemptPlansPerCycle = 32

// idleCycle is how often a cycle runs without events: reservations and
// backfill windows move with time.
const idleCycle = 5 * time.Second

// run runs cycles until ctx ends: one after each burst of events, at most
// one per CycleInterval, and one every idleCycle. The first runs once the
// informers synced and this scheduler leads (leader.go): before, the host
// writes nothing.
func (h *host) run(ctx context.Context) {
	for !h.io.synced() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	select {
	case <-ctx.Done():
		return
	case <-h.lead.leading:
	}
	h.log.Info("Leading: gpusched cycles start")
	if h.check != nil {
		if err := h.check(); err != nil {
			h.log.Error(err, "Scheduler mode refuses this profile: it schedules nothing until the configuration is fixed")
			h.mu.Lock()
			h.amu.Lock()
			h.refused = err
			h.amu.Unlock()
			h.mu.Unlock()
		}
	}
	h.evq = newEvictQueue(h.evict)
	h.plq = newCycleQueue(h.writePlans)
	h.conds = newCondWriter(h.setPending, func(uid types.UID) bool { _, ok := h.assignmentOf(uid); return ok })
	h.conds.yield = func() bool { return h.evq.busy() || h.plq.busy() }
	h.conds.run(ctx, apiWriters)
	defer h.conds.wait() // nothing is written once run returned
	defer h.evq.start(ctx)()
	defer h.plq.start(ctx)()
	idle := time.NewTimer(idleCycle)
	defer idle.Stop()
	h.woke = wake{by: "first"}
	for {
		h.cycle(ctx)
		end := time.Now()
		select {
		case <-ctx.Done():
			return
		case <-time.After(h.args.CycleInterval()):
		}
		select {
		case <-ctx.Done():
			return
		case <-h.kick:
			h.woke = wake{by: "event", after: time.Since(end)}
		case <-idle.C:
			h.woke = wake{by: "idle", after: time.Since(end)}
		}
		idle.Reset(idleCycle)
	}
}

// effects is what a cycle asks of the apiserver, done after mu is released.
type effects struct {
	activate []*v1.Pod
	// plans are gang bindings: every member's plan is written before
	// any member is activated (gangplan.go).
	plans   []planWrite
	reject  []types.UID
	events  []podEvent
	pending []podEvent
	evict   []eviction
	del     []*v1.Pod
	// eventCauses are the reason tokens of events (by index in events):
	// their action (reasons.go).
	eventCauses map[int]string
}

type podEvent struct {
	pod            *v1.Pod
	typ, why, what string
}

type eviction struct {
	job   string // the victim
	forJ  string // the job the room is for
	pod   *v1.Pod
	grace time.Duration
}

// cycle reconciles the Scheduler with the pods, runs Schedule and carries
// out the Decision.
func (h *host) cycle(ctx context.Context) {
	start := time.Now()
	defer func() { h.metrics.cycle(time.Since(start)) }()
	nodes, err := h.io.listNodes()
	if err != nil {
		h.log.Error(err, "Listing nodes")
		return
	}
	all, err := h.io.listPods()
	if err != nil {
		h.log.Error(err, "Listing pods")
		return
	}
	now := h.io.now()
	nodes, all = h.dra.view(nodes, all, func(uid types.UID) bool { _, ok := h.assignmentOf(uid); return ok })
	view := viewPods(all, h.profile, h.args)
	var fx effects
	h.mu.Lock()
	h.kubeFilters().see(nodes, all) // (kubefilters.go)
	h.decide(nodes, &view, now, &fx)
	for _, w := range h.dra.left() {
		h.note(&fx, []*v1.Pod{w.pod}, w.what, now)
	}
	h.mu.Unlock()
	decided := time.Now()
	took := h.apply(ctx, &fx)
	if log := h.log.V(4); log.Enabled() {
		kv := []any{"woke", h.woke.by, "after", h.woke.after.Round(time.Millisecond), "pods", len(all),
			"decide", decided.Sub(start).Round(time.Millisecond), "apply", time.Since(decided).Round(time.Millisecond)}
		kv = append(kv, took...)
		kv = append(kv, "activate", len(fx.activate), "plans", len(fx.plans), "evict", len(fx.evict), "pending", len(fx.pending), "events", len(fx.events))
		log.Info("gpusched cycle", append(kv, h.trace.take()...)...)
	}
}

// decide is the part of a cycle under mu.
func (h *host) decide(nodes []*v1.Node, view *podView, now time.Time, fx *effects) {
	defer h.finals.endCycle()
	if h.refused != nil {
		for _, j := range h.parsed.jobsOf(view.live, h.args, h.gpuHosts()) {
			h.noteWhy(fx, j.all(), TokenSchedulerConfig, "gpusched: "+h.refused.Error(), ReasonPending, now)
		}
		return
	}
	slices.SortFunc(nodes, func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) })
	nodes, away := h.away.view(nodes, h.args, now)
	if k := h.shapeOf(nodes); h.s == nil || k != h.shape {
		if h.applyLive(nodes, now) { // nodes joined, left or changed (livenodes.go)
			h.shape = k
		} else {
			h.rebuild(nodes, k, fx)
		}
	}
	h.cordonAway(away)
	jobs := h.parsed.jobsOf(view.live, h.args, h.gpuHosts())
	if h.s == nil {
		why, cause := "gpusched: no GPU topology", TokenNoGPUNodes
		switch {
		case h.queuesErr != nil:
			why, cause = "gpusched: "+h.queuesErr.Error(), TokenSchedulerConfig
		case h.buildErr != nil:
			why, cause = "gpusched: "+h.buildErr.Error(), TokenSchedulerConfig
		}
		for _, j := range jobs {
			h.noteWhy(fx, j.all(), cause, why, ReasonPending, now)
		}
		return
	}
	h.followCluster()
	h.health(nodes, view.live)
	h.reconcile(jobs, view.ended, now, fx)
	for _, p := range view.held {
		h.noteWhy(fx, []*v1.Pod{p}, TokenWaitingForGangMembers, fmt.Sprintf("gpusched: job %s: waiting for its members being deleted to go", jobID(p, h.args)), ReasonPending, now)
	}
	h.draHealth()   // device taints (dra.go), once jobs are restored
	h.draStruck(fx) // NoExecute taints of MIG devices (dra_taint.go)
	// GPUs the device plugin does not offer are marked failed, after the
	// rebuild's restores, so that jobs on them are recovered
	// (gpuidentity.go).
	h.markLost(fx)
	// Plans taken back for the pods planned before them (refusePlan) are
	// made again at once, the kept plans counted, a few times.
	h.replans, h.replan = maxReplans, true
	for h.replan {
		h.replan = false
		h.applyRejections()      // (constraints.go)
		h.filterJobs(nodes, now) // node constraints (constraints.go)
		start := time.Now()
		d := h.s.Schedule(now)
		h.metrics.record(&d, time.Since(start))
		h.page.record(&d)
		h.followCluster() // a cycle may have taken out or reshaped drained hosts
		h.carryOut(&d, now, fx)
		h.replans--
	}
	if h.replans < maxReplans-1 {
		// A pod a later decision planned is not pending any more.
		fx.pending = slices.DeleteFunc(fx.pending, func(e podEvent) bool { _, ok := h.assignmentOf(e.pod.UID); return ok })
	}
}

// maxReplans bounds the decisions one cycle makes again after plans were
// taken back (refusePlan); a job still refused then waits for the next
// cycle.
const maxReplans = 3

// shapeOf is the part of the nodes that makes the cluster: a change
// rebuilds the Scheduler.
func (h *host) shapeOf(nodes []*v1.Node) string {
	var b strings.Builder
	sk := &state{args: h.args}
	for _, n := range nodes {
		if k := sk.shapeKey(n); k != "" {
			b.WriteString(n.Name)
			b.WriteByte('=')
			b.WriteString(k)
			b.WriteByte(';')
		}
	}
	return b.String()
}

// rebuild makes a fresh Scheduler for nodes and forgets every job: the
// reconcile that follows restores bound jobs and submits waiting ones, so
// a rebuild decides as a scheduler started now would.
func (h *host) rebuild(nodes []*v1.Node, shape string, fx *effects) {
	h.s, h.topo, h.shape, h.buildErr, h.live = nil, nil, shape, nil, liveNodes{}
	h.amu.Lock()
	fx.reject = append(fx.reject, sortedKeys(h.assign)...)
	h.jobs, h.assign, h.byJob = map[string]*jobRec{}, map[types.UID]*assignment{}, map[string][]types.UID{}
	h.amu.Unlock()
	if h.queuesErr != nil {
		return
	}
	topo, err := BuildTopology(nodes, h.args)
	if err != nil {
		h.buildErr = err
		return
	}
	opts := gang.Options{Explain: gang.DetailBrief}
	if h.args.Policy == "fgd" {
		opts.Frag.Distribution = h.args.Distribution()
	}
	placer, err := gang.New(h.args.Policy, opts)
	if err != nil {
		h.buildErr = err
		return
	}
	pre, err := gpusched.NewPlanPreemptor(preempt.Config{Placer: placer}, preemptPlansPerCycle)
	if err != nil {
		h.buildErr = err
		return
	}
	s, err := gpusched.New(gpusched.Config{Cluster: topo.Cluster, Queues: h.queues, Placer: placer, Preemptor: pre,
		EvictionRetry: h.args.EvictionRetry(), AdmitTimeout: h.args.AdmitTimeout(), Stats: true})
	if err != nil {
		h.buildErr = err
		return
	}
	// GPUs the device plugin no longer offers are marked failed after the
	// jobs are restored (see decide), so that jobs on them are recovered.
	h.s, h.topo, h.lost = s, topo, lostGPUs{}
	h.live.record(nodes, h.args, topo.Cluster)
	h.log.V(2).Info("Built gpusched scheduler", "hosts", topo.Cluster.NumHosts(), "gpus", topo.Cluster.NumGPUs())
}

// reconfigure puts cfg, a new queue tree, in force: live through
// Scheduler.Reconfigure when a Scheduler runs, else (none built yet, or
// the tree in force did not parse) at the next cycle's build. The jobs of
// removed queues go to Args.RemovedQueueTarget; without one, their pending
// jobs are dropped (their pods then wait as of an unknown queue). An error
// (a *queue.ConfigError naming the field) changes nothing.
func (h *host) reconfigure(cfg queue.Config, now time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s == nil {
		h.queues, h.queuesErr, h.moved = cfg, nil, map[string]string{}
		return nil
	}
	keep := leafNames(cfg)
	var moves []queue.Move
	for _, q := range leafNames(h.queues) {
		if !slices.Contains(keep, q) {
			moves = append(moves, queue.Move{From: q, To: h.args.RemovedQueueTarget})
		}
	}
	rejected, err := h.s.Reconfigure(cfg, moves, now)
	if err != nil {
		return err
	}
	h.queues = cfg
	for _, m := range moves {
		if m.To != "" {
			h.moved[m.From] = m.To
		}
	}
	for _, from := range sortedKeys(h.moved) {
		switch to := h.moved[from]; {
		case slices.Contains(keep, from): // the queue is back
			delete(h.moved, from)
		case !slices.Contains(keep, to):
			h.moved[from] = h.args.RemovedQueueTarget
		}
	}
	for _, id := range rejected { // pending: they hold no assignment
		delete(h.jobs, id)
	}
	if len(moves) > 0 || len(rejected) > 0 {
		h.log.Info("Queue tree reconfigured", "removed", len(moves), "pendingJobsDropped", len(rejected))
	}
	return nil
}

// leafNames returns the names of cfg's leaf queues, in tree order.
func leafNames(cfg queue.Config) []string {
	var out []string
	var walk func(n *queue.Node)
	walk = func(n *queue.Node) {
		if len(n.Children) == 0 {
			out = append(out, n.Name)
			return
		}
		for i := range n.Children {
			walk(&n.Children[i])
		}
	}
	for i := range cfg.Root.Children {
		walk(&cfg.Root.Children[i])
	}
	return out
}

// health reports hosts that are not ready, carry a failing NoExecute
// taint (failingNoExecute; live are the profile's live pods) or are
// cordoned (draining) to the Scheduler.
func (h *host) health(nodes []*v1.Node, live []*v1.Pod) {
	c := h.topo.Cluster
	var on map[string][]*v1.Pod // bound pods by node, made when needed
	for _, n := range nodes {
		hid, ok := c.HostByName(n.Name)
		if !ok || h.s.Ledger().HostCordoned(hid) {
			continue // (cordoned: leaving or changing shape, livenodes.go)
		}
		want := topology.Healthy
		switch {
		case !nodeReady(n):
			want = topology.Failed
		case hasNoExecute(n):
			if on == nil {
				on = map[string][]*v1.Pod{}
				for _, p := range live {
					if p.Spec.NodeName != "" {
						on[p.Spec.NodeName] = append(on[p.Spec.NodeName], p)
					}
				}
			}
			if h.failingNoExecute(n, on[n.Name]) {
				want = topology.Failed
			}
		case n.Spec.Unschedulable:
			want = topology.Draining
		}
		if h.s.Ledger().HostHealth(hid) != want {
			if _, err := h.s.SetHostHealth(n.Name, want); err != nil {
				h.log.Error(err, "Setting host health", "node", n.Name)
			}
		}
	}
}

// nodeReady reports whether n is not known to be unready: a node without
// a Ready condition (just created) counts as ready.
func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return true
}

// failingNoExecute reports whether a NoExecute taint of n marks its host
// failed: one of kube's own (node.kubernetes.io/...: not-ready,
// unreachable, out-of-service), or one that a pod bound there (pods) does
// not tolerate for good (a toleration without tolerationSeconds; kube's
// taint manager evicts it). A NoExecute taint that every pod there
// tolerates (a dedicated GPU pool) constrains only which pods may go
// there (nodeFits), as a NoSchedule taint does: the host is healthy, its
// pods run on, and pods that tolerate it are planned there (issue 26,
// defect 4).
func (h *host) failingNoExecute(n *v1.Node, pods []*v1.Pod) bool {
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			return true
		}
		for _, p := range pods {
			if !slices.ContainsFunc(p.Spec.Tolerations, func(tol v1.Toleration) bool {
				return tol.TolerationSeconds == nil && tol.ToleratesTaint(h.log, t, false)
			}) {
				return true
			}
		}
	}
	return false
}

func hasNoExecute(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect == v1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// reconcile brings the Scheduler's jobs in line with the pods.
func (h *host) reconcile(jobs []*podJob, ended map[types.UID]v1.PodPhase, now time.Time, fx *effects) {
	current := make(map[string]*podJob, len(jobs))
	for _, j := range jobs {
		current[j.spec.ID] = j
		if j.err != nil && !h.survives(j) {
			current[j.spec.ID] = nil
		}
	}
	// Jobs whose pods are gone: they finished, were deleted or preempted.
	for _, id := range sortedKeys(h.jobs) {
		if current[id] != nil {
			continue
		}
		rec := h.jobs[id]
		st, ok := h.s.Job(id)
		switch {
		case !ok:
		case rec.evicting && st.State.Holding():
			_ = h.s.Preempted(id, now)
			_ = h.s.Cancel(id, now) // its pods are gone; a controller recreates them as a new job
			h.ends.record(id, queue.Preempted)
		case st.State.Holding():
			h.podsGone(rec, nil, ended)
			h.endHolding(id, rec, now)
		default:
			_ = h.s.Cancel(id, now)
		}
		h.dropAssignments(id, fx)
		delete(h.jobs, id)
	}
	// Requeues asked by Unreserve (a binding failed) and PostFilter.
	h.amu.Lock()
	requeue := h.requeue
	h.requeue = nil
	h.amu.Unlock()
	for _, id := range requeue {
		if st, ok := h.s.Job(id); ok && st.State == queue.Admitted {
			if err := h.s.Requeue(id, now); err != nil {
				h.log.Error(err, "Requeue", "job", id)
			}
		}
		h.dropAssignments(id, fx)
	}
	for _, j := range jobs {
		id := j.spec.ID
		if j.err != nil && current[id] == j && !errors.As(j.err, new(errIncomplete)) {
			h.keepInvalid(fx, j, now)
			continue
		}
		if j.err != nil && current[id] != j {
			var inc errIncomplete
			if errors.As(j.err, &inc) {
				if _, known := h.jobs[id]; !known && slices.ContainsFunc(j.all(), func(p *v1.Pod) bool { return p.Spec.NodeName != "" }) {
					// A gang that lost members while no one led (or before a
					// rebuild): its bound pods are restored and keep their GPUs.
					h.add(j, now, fx)
					continue
				}
				if !forming(j, now) {
					h.noteWhy(fx, j.all(), TokenWaitingForGangMembers, "gpusched: "+j.err.Error(), ReasonPending, now)
				}
			} else {
				h.bad(fx, j, j.err.Error(), now)
			}
			continue
		}
		rec, known := h.jobs[id]
		if !known {
			h.add(j, now, fx)
			continue
		}
		h.podsGone(rec, j.all(), ended)
		rec.job = j
		st, ok := h.s.Job(id)
		if !ok {
			delete(h.jobs, id)
			continue
		}
		if st.State != queue.Running && h.boundAstray(j) {
			// Pods of a job the Scheduler does not count as running were
			// bound where no binding of it puts them (a gang member bound
			// before another's Bind failed and withdrew the binding): the
			// job is restored from its pods, so their GPUs are held and
			// its unbound members go to their plan (restore).
			h.log.Info("Pods of a job not running were bound outside its binding; restoring it from its pods", "job", id, "state", st.State.String())
			_ = h.s.Cancel(id, now)
			h.dropAssignments(id, fx)
			delete(h.jobs, id)
			h.add(j, now, fx)
			continue
		}
		bound, held := 0, 0
		for _, p := range j.all() {
			_, assigned := h.assignmentOf(p.UID)
			if p.Spec.NodeName != "" {
				bound++
				if assigned && st.State == queue.Running {
					h.unassign(p.UID) // a completed gang's member, bound
					assigned = false
				}
			}
			if p.Spec.NodeName != "" || assigned {
				held++
			}
		}
		if st.State == queue.Running && held > h.placedPods(st.Placement, j) && !rec.evicting {
			// Pods of a running job were bound outside this scheduler's
			// bindings (a binding that landed after a restart, a pod bound
			// by hand): the Scheduler's view is wrong; rebuild it from the
			// pods next cycle. (Fewer: members ended or were deleted; the
			// job keeps its GPUs until all are gone.)
			h.log.Info("Bound pods of a job changed outside gpusched's bindings; rebuilding", "job", id, "pods", held, "held", h.placedPods(st.Placement, j))
			h.shape, h.live = "", liveNodes{}
		}
		switch {
		case st.State == queue.Admitted && bound > 0 && bound >= h.placedPods(st.Placement, j):
			if err := h.s.Started(id, now); err != nil {
				h.log.Error(err, "Started", "job", id)
			}
			h.dropAssignments(id, fx)
		case st.State.Holding() && rec.evicting && bound == 0:
			if rec.recovery {
				_ = h.s.Requeue(id, now)
			} else {
				_ = h.s.Preempted(id, now)
			}
			rec.evicting, rec.recovery, rec.blocked = false, false, ""
		}
		if j.err != nil && st.State.Holding() {
			// A gang that lost members runs on: its other pods wait.
			h.noteWhy(fx, h.unplaced(j), TokenWaitingForGangMembers, fmt.Sprintf("gpusched: gang %s runs on with %d of its pods (the others ended or were deleted) and keeps its GPUs; this pod waits until the gang's pods are all gone", id, bound), ReasonPending, now)
		} else if rec.note != "" && st.State.Holding() {
			h.noteWhy(fx, h.unplaced(j), TokenGangPartlyBound, rec.note, ReasonPending, now) // (said again: kube's own condition may land after it)
		}
		if st.State == queue.Running && j.checkpoint.After(rec.checkpoint) {
			rec.checkpoint = j.checkpoint
			if err := h.s.Checkpointed(id, j.checkpoint, now); err != nil {
				h.bad(fx, j, fmt.Sprintf("%s=%q: %v", podField(j.all()[0], "annotation "+h.args.CheckpointKey), j.checkpoint.Format(time.RFC3339), err), now)
			}
		}
	}
}

// boundAstray reports whether a pod of j is bound but not where an
// assignment of its job puts it (none, or another node).
func (h *host) boundAstray(j *podJob) bool {
	for _, p := range j.all() {
		if p.Spec.NodeName == "" {
			continue
		}
		if a, ok := h.assignmentOf(p.UID); !ok || a.node != p.Spec.NodeName || a.job != j.spec.ID {
			return true
		}
	}
	return false
}

// unplaced are j's pods neither bound nor assigned.
func (h *host) unplaced(j *podJob) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range j.all() {
		if _, assigned := h.assignmentOf(p.UID); p.Spec.NodeName == "" && !assigned {
			out = append(out, p)
		}
	}
	return out
}

// survives reports whether j, a job whose pods do not make a valid job (a
// gang with fewer live pods than its size, or members that stopped
// agreeing), is a holding job some of whose pods are still bound: it
// keeps running, and its GPUs, until all its pods are gone (a member that
// failed or was deleted does not end it; the library's recovery may).
func (h *host) survives(j *podJob) bool {
	if _, known := h.jobs[j.spec.ID]; !known {
		return false
	}
	if st, ok := h.s.Job(j.spec.ID); !ok || !st.State.Holding() {
		return false
	}
	return slices.ContainsFunc(j.all(), func(p *v1.Pod) bool { return p.Spec.NodeName != "" })
}

// keepInvalid leaves a holding job whose pods stopped agreeing (a gang
// member's labels edited while it runs) as it is: its bound pods run on
// the GPUs it holds, so it keeps them until its pods end (then reconcile
// books it by how they ended). Its unbound pods wait, marked invalid; the
// bound ones get a Warning event only (they are not pending).
func (h *host) keepInvalid(fx *effects, j *podJob, now time.Time) {
	msg := "gpusched: " + j.err.Error() + "; the job keeps its GPUs until its pods end"
	h.noteAs(fx, j.all(), msg, ReasonInvalid, now) // (a bound pod: the Warning alone)
}

// placedPods is the number of pods of j a placement holds: its tasks,
// or the one pod of several MIG devices (dra_migs.go).
func (h *host) placedPods(p *gang.Placement, j *podJob) int {
	switch {
	case p == nil || len(p.Claims) == 0:
		return 0
	case j.several:
		return len(j.all())
	}
	return len(p.Claims)
}

// add submits a new job, or restores it when pods of it are bound already
// (bound before a restart or a rebuild).
func (h *host) add(j *podJob, now time.Time, fx *effects) {
	id := j.spec.ID
	// The pods in the API server are the record: a job seen again under an
	// ID that ended (a gang recreated under its name, a job cancelled when
	// it turned bad and fixed since) is new, not a redelivery, so the
	// library's tombstone for it goes.
	if _, err := h.s.ForgetEnded(id); err != nil {
		h.bad(fx, j, err.Error(), now)
		return
	}
	var bound int
	for _, p := range j.all() {
		if p.Spec.NodeName != "" {
			bound++
		}
	}
	if q, ok := h.moved[j.spec.Queue]; ok {
		j.spec.Queue = q
	}
	if bound == 0 {
		if err := h.s.Submit(j.spec, h.submitAt(j.created)); err != nil {
			h.bad(fx, j, h.submitError(j, err), now)
			return
		}
		h.jobs[id] = &jobRec{job: j}
		return
	}
	// Bound pods hold the GPUs their annotation names. A gang only part of
	// whose pods are bound (the scheduler stopped while binding it) is
	// completed when its unbound members carry the GPU indices annotation
	// and a nominated node (PreBind ran for them: the gang had passed
	// Permit whole): they are restored on those GPUs and let through.
	// Otherwise it is restored with its bound members only, and the others
	// wait (README, Restart).
	if h.restore(j, true, now, fx) || h.restore(j, false, now, fx) {
		h.resumeEvictions(j, fx) // (takeover.go)
		return
	}
}

// restore restores a job from its bound pods (and, with complete, its
// unbound pods that PreBind had annotated); it reports whether it did.
func (h *host) restore(j *podJob, complete bool, now time.Time, fx *effects) bool {
	id := j.spec.ID
	spec := j.spec.Clone()
	c := h.topo.Cluster
	var rs = spec.Clone()
	rs.Groups = rs.Groups[:0]
	var tasks [][]topology.Claim
	var finish []*v1.Pod
	var finishAt []assignment
	migTaken := map[*v1.Pod][]bool{} // (j.several: each pod's MIG devices restored so far)
	finishTasks := 0                 // (j.several: tasks of the pods of finish beyond their first)
	bound, total := 0, 0
	for gi, pods := range j.pods {
		g := spec.Groups[gi]
		var claims []topology.Claim
		for _, p := range pods {
			total++
			node := p.Spec.NodeName
			if node != "" {
				bound++
			} else if complete {
				node = plannedNode(p)
			}
			if node == "" {
				continue
			}
			hid, ok := c.HostByName(node)
			if !ok {
				if p.Spec.NodeName == "" {
					continue
				}
				h.bad(fx, j, fmt.Sprintf("%s=%q: not a GPU node gpusched knows", podField(p, "spec.nodeName"), node), now)
				return true
			}
			if j.several {
				// A pod of several MIG devices or shares: its claims name
				// them all, or it is placed afresh (dra_migs.go,
				// dra_shares.go).
				held := severalHeld(p)
				if p.Spec.NodeName == "" && held == nil {
					continue // (its claims not written: placed afresh)
				}
				if held == nil {
					h.bad(fx, j, fmt.Sprintf("%s: its ResourceClaims name none or not all of its MIG devices or shares on node %s", podField(p, "resourceClaims"), node), now)
					return true
				}
				if migTaken[p] == nil {
					migTaken[p] = make([]bool, len(held))
				}
				cl, ok := heldSeveralClaim(c, hid, g, held, migTaken[p])
				if !ok && p.Spec.NodeName == "" {
					continue
				}
				if !ok {
					h.bad(fx, j, fmt.Sprintf("%s: its ResourceClaims name no %s of node %s", podField(p, "resourceClaims"), partName(g), node), now)
					return true
				}
				claims = append(claims, cl)
				if p.Spec.NodeName == "" {
					// A planned gang member whose claims were written: let
					// through on them, all its tasks in one assignment.
					x := claimAssignment(c, cl)
					x.job = id
					if k := slices.Index(finish, p); k >= 0 {
						mergeAssignment(&finishAt[k], &x)
						finishTasks++
					} else {
						finish, finishAt = append(finish, p), append(finishAt, x)
					}
				}
				continue
			}
			first, count := c.HostGPUs(hid)
			idx := parseIndices(p.Annotations[h.args.GPUIndicesAnnotation], count)
			if len(idx) != gpusHeld(g) {
				if p.Spec.NodeName == "" {
					continue
				}
				h.bad(fx, j, fmt.Sprintf("%s=%q: want %d distinct GPU indices below %d", podField(p, "annotation "+h.args.GPUIndicesAnnotation), p.Annotations[h.args.GPUIndicesAnnotation], g.GPUs, count), now)
				return true
			}
			cl := topology.Claim{Host: hid, CPUMilli: g.CPUMilli, MemoryMiB: g.MemoryMiB}
			for _, i := range idx {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(i), Kind: topology.ClaimWhole})
			}
			if err := heldPart(c, &cl, g, p); err != nil { // (dra_mig.go)
				if p.Spec.NodeName == "" {
					continue
				}
				h.bad(fx, j, err.Error(), now)
				return true
			}
			claims = append(claims, cl)
			if p.Spec.NodeName == "" {
				finish = append(finish, p)
				finishAt = append(finishAt, assignment{job: id, node: node, gpus: idx, part: partOfClaim(c, cl)})
			}
		}
		if len(claims) > 0 {
			g.Count, g.MinCount = len(claims), 0
			rs.Groups = append(rs.Groups, g)
			tasks = append(tasks, claims)
		}
	}
	if complete && len(finish) == 0 {
		return false // nothing to complete: the plain restore follows
	}
	if err := h.away.restoreOn(h.s, tasks, func() error { return h.s.Restore(rs, tasks, queue.Running, j.created, now) }); err != nil {
		if complete {
			return false
		}
		h.bad(fx, j, fmt.Sprintf("restoring its bound pods: %v", err), now)
		return true
	}
	rec := &jobRec{job: j, partial: bound+len(finish)+finishTasks < total}
	h.jobs[id] = rec
	for k, p := range finish {
		a := finishAt[k]
		h.setAssign(p.UID, &a)
		fx.activate = append(fx.activate, p)
	}
	if rec.partial {
		var waiting []*v1.Pod
		for _, p := range j.all() {
			if p.Spec.NodeName == "" && !slices.Contains(finish, p) {
				waiting = append(waiting, p)
			}
		}
		rec.note = fmt.Sprintf("gpusched: gang %s was partly bound (%d of %d pods) when the scheduler restarted; its bound pods keep their GPUs and this pod is not placed: delete the gang's pods to place it again", id, bound+len(finish), total)
		h.noteWhy(fx, waiting, TokenGangPartlyBound, rec.note, ReasonPending, now)
	}
	return true
}

// submitError words a Submit error for an event, naming the field.
func (h *host) submitError(j *podJob, err error) string {
	p := j.all()[0]
	switch {
	case errors.Is(err, gpusched.ErrUnknownQueue):
		src := "label " + h.args.QueueLabel
		if p.Labels[h.args.QueueLabel] == "" {
			src = "default queue of namespace " + p.Namespace
		}
		return fmt.Sprintf("%s=%q: %v", podField(p, src), j.spec.Queue, err)
	case errors.Is(err, gpusched.ErrNeverFits):
		msg := fmt.Sprintf("%s: %v", podField(p, "resources"), err)
		if note := perHostNote(j); note != "" {
			msg += "; " + note
		}
		if j.several && len(j.all()) > 1 {
			msg += "; a gang of pods with several MIG devices or shares goes whole on one node (the library keeps a pod's MIG devices or shares together only by keeping its job on one host)"
		}
		if j.sharesClaim {
			msg += "; its pods share a GPU ResourceClaim, whose devices are one node's, so the gang goes whole on one node"
		}
		return msg
	}
	return fmt.Sprintf("%s: %v", podField(p, "spec"), err)
}

// bad reports a job that cannot be scheduled for its input: a Warning event
// on each pod (rate-limited like pending reasons), and its pods wait.
func (h *host) bad(fx *effects, j *podJob, msg string, now time.Time) {
	if _, known := h.jobs[j.spec.ID]; known {
		_ = h.s.Cancel(j.spec.ID, now)
		h.dropAssignments(j.spec.ID, fx)
		delete(h.jobs, j.spec.ID)
	}
	h.noteAs(fx, j.all(), "gpusched: "+msg, ReasonInvalid, now)
}

// dropAssignments forgets the assignments of a job and rejects its pods
// waiting at Permit.
func (h *host) dropAssignments(id string, fx *effects) {
	h.amu.Lock()
	defer h.amu.Unlock()
	fx.reject = append(fx.reject, h.dropLocked(id)...)
}

// dropLocked forgets the assignments of job id, under amu, and returns
// its pods.
func (h *host) dropLocked(id string) []types.UID {
	uids := h.byJob[id]
	for _, uid := range uids {
		delete(h.assign, uid)
	}
	delete(h.byJob, id)
	return uids
}

// setAssign records a pod's assignment.
func (h *host) setAssign(uid types.UID, a *assignment) {
	h.amu.Lock()
	defer h.amu.Unlock()
	if old, ok := h.assign[uid]; ok {
		if old.job == a.job {
			h.assign[uid] = a
			return
		}
		h.unassignLocked(uid)
	}
	h.assign[uid] = a
	h.byJob[a.job] = append(h.byJob[a.job], uid)
}

// unassign forgets one pod's assignment.
func (h *host) unassign(uid types.UID) {
	h.amu.Lock()
	defer h.amu.Unlock()
	h.unassignLocked(uid)
}

// unassignLocked is unassign under amu.
func (h *host) unassignLocked(uid types.UID) {
	a, ok := h.assign[uid]
	if !ok {
		return
	}
	delete(h.assign, uid)
	l := h.byJob[a.job]
	if k := slices.Index(l, uid); k >= 0 {
		l = slices.Delete(l, k, k+1)
	}
	if len(l) == 0 {
		delete(h.byJob, a.job)
	} else {
		h.byJob[a.job] = l
	}
}

// carryOut turns a Decision into assignments, evictions and notes.
func (h *host) carryOut(d *gpusched.Decision, now time.Time, fx *effects) {
	c := h.topo.Cluster
	h.expire(d, now, fx) // (before the bindings: an expired job may be bound again)
	for _, b := range d.Bindings {
		rec := h.jobs[b.Job]
		if rec == nil {
			continue
		}
		if rec.job.several {
			h.assignSeveral(b.Job, rec, b.Placement, now, fx) // (dra_migs.go)
			continue
		}
		placed := make([]int, len(rec.job.pods))
		var planned []plannedPod
		claimOf := make([]int, 0, len(b.Placement.Tasks))
		for i, t := range b.Placement.Tasks {
			g := int(t.Group)
			if g >= len(rec.job.pods) || placed[g] >= len(rec.job.pods[g]) {
				continue
			}
			planned = append(planned, plannedPod{pod: rec.job.pods[g][placed[g]], node: c.HostName(b.Placement.Claims[i].Host)})
			claimOf = append(claimOf, i)
			placed[g]++
		}
		var waves []int
		if rec.job.spread != nil {
			waves = rec.spread.planWaves(planned, claimOf) // (spread.go)
		}
		if h.refusePlan(b.Job, rec, planned, now, fx) {
			continue
		}
		var plan *planWrite
		if len(b.Placement.Claims) > 1 {
			fx.plans = append(fx.plans, planWrite{job: b.Job})
			plan = &fx.plans[len(fx.plans)-1]
		}
		for k, pp := range planned {
			p := pp.pod
			cl := b.Placement.Claims[claimOf[k]]
			first, _ := c.HostGPUs(cl.Host)
			a := &assignment{job: b.Job, node: pp.node, unwritten: plan != nil}
			for _, x := range cl.GPUs {
				a.gpus = append(a.gpus, int(x.GPU-first))
			}
			a.part = partOfClaim(c, cl)
			if waves != nil {
				a.waves, a.wave, a.pod = true, waves[k], p
			}
			h.setAssign(p.UID, a)
			if plan != nil {
				plan.add(p, a)
			} else {
				fx.activate = append(fx.activate, p)
			}
			h.amu.Lock()
			delete(h.notes, p.UID)
			h.amu.Unlock()
		}
		for g, pods := range rec.job.pods {
			for _, p := range pods[placed[g]:] {
				h.noteWhy(fx, []*v1.Pod{p}, TokenAboveMinimum, fmt.Sprintf("gpusched: job %s runs with %d pods, above its minimum; this one is not placed", b.Job, len(b.Placement.Claims)), ReasonPending, now)
			}
		}
	}
	for _, p := range d.Preemptions {
		rec := h.jobs[p.Job]
		if rec == nil || rec.evicting {
			continue
		}
		rec.evicting = true
		for _, pod := range rec.job.all() {
			if h.asked.claim(pod) { // (bound, not being deleted, not asked yet)
				fx.evict = append(fx.evict, eviction{job: p.Job, forJ: p.For, pod: pod, grace: p.Grace})
				fx.events = append(fx.events, podEvent{pod, v1.EventTypeNormal, ReasonPreempted, fmt.Sprintf("gpusched: preempted for %s: %s", p.For, p.Reason)})
			}
		}
	}
	for _, r := range d.Recoveries {
		rec := h.jobs[r.Job]
		if rec == nil || rec.evicting {
			continue
		}
		if r.Action == preempt.ActionKeep {
			continue
		}
		h.recoverJob(fx, rec, r.Reason)
	}
	for _, p := range d.Pending {
		rec := h.jobs[p.Job]
		if rec == nil {
			continue
		}
		msg := "gpusched: " + p.Reason.String()
		if len(rec.excluded) > 0 {
			msg += "; " + rec.exclusionNote()
		}
		if rec.kubeNote != "" {
			msg += "; " + rec.kubeNote
		}
		if rec.conflictNote != "" {
			msg += "; " + rec.conflictNote
		}
		if note := perHostNote(rec.job); note != "" {
			msg += "; " + note
		}
		if rec.spread != nil && rec.spread.note != "" {
			msg += "; " + rec.spread.note
		}
		if rec.blocked != "" {
			// The eviction of a victim planned for it was refused (a
			// PodDisruptionBudget) and is not retried: say so.
			msg += "; " + rec.blocked
		}
		h.noteWhy(fx, rec.job.all(), p.Reason.Token(), msg, ReasonPending, now)
	}
}

// recoverJob tells the pods of rec's job why it is recovered and, with
// deleteOnRecovery, deletes its bound pods; the job is requeued once none
// is bound (reconcile).
func (h *host) recoverJob(fx *effects, rec *jobRec, reason string) {
	for _, pod := range rec.job.all() {
		fx.events = append(fx.events, podEvent{pod, v1.EventTypeWarning, ReasonRecovery, "gpusched: " + reason})
	}
	if !h.args.DeleteOnRecovery {
		return // left running: its controller or an operator decides
	}
	rec.evicting, rec.recovery = true, true
	for _, pod := range rec.job.all() {
		if pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil {
			fx.del = append(fx.del, pod)
		}
	}
}

// note records a pending reason for pods: an event and a PodScheduled
// condition when the message is new, then at most one of each per
// EventInterval.
func (h *host) note(fx *effects, pods []*v1.Pod, msg string, now time.Time) {
	h.noteAs(fx, pods, msg, ReasonPending, now)
}

// noteAs is note with the event reason reason (ReasonPending,
// ReasonInvalid); the cause token is TokenInvalidJob for ReasonInvalid,
// else gpusched.TokenUnschedulable.
func (h *host) noteAs(fx *effects, pods []*v1.Pod, msg, reason string, now time.Time) {
	cause := gpusched.TokenUnschedulable
	if reason == ReasonInvalid {
		cause = TokenInvalidJob
	}
	h.noteWhy(fx, pods, cause, msg, reason, now)
}

// noteOf returns uid's note, made on first use (under amu).
func (h *host) noteOf(uid types.UID) *podNote {
	h.amu.Lock()
	defer h.amu.Unlock()
	n := h.notes[uid]
	if n == nil {
		n = &podNote{}
		h.notes[uid] = n
	}
	return n
}

// eventOnce records an event of p with msg unless n says one went out
// lately: a new message after a second, the same one after the event
// interval.
func (h *host) eventOnce(fx *effects, n *podNote, p *v1.Pod, cause, typ, reason, msg string, now time.Time) {
	if (n.evMsg != msg && now.Sub(n.event) >= time.Second) || now.Sub(n.event) >= h.args.EventInterval() {
		n.event, n.evMsg = now, msg
		fx.causeOf(len(fx.events), cause)
		fx.events = append(fx.events, podEvent{p, typ, reason, msg})
	}
}

// noteWhy is noteAs with the cause's reason token (reasons.go): the
// reason of the pods' PodScheduled condition and the action of their
// events. A bound pod is never marked pending: it gets nothing, or the
// Warning event alone for reason ReasonInvalid.
func (h *host) noteWhy(fx *effects, pods []*v1.Pod, cause, msg, reason string, now time.Time) {
	iv := h.args.EventInterval()
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			// A bound pod is not pending: never marked unschedulable;
			// one of an invalid job gets the Warning alone.
			if reason == ReasonInvalid {
				h.eventOnce(fx, h.noteOf(p.UID), p, cause, v1.EventTypeWarning, reason, msg, now)
			}
			continue
		}
		n := h.noteOf(p.UID)
		h.amu.Lock()
		n.msg = msg
		h.amu.Unlock()
		typ := v1.EventTypeNormal
		if reason == ReasonInvalid {
			typ = v1.EventTypeWarning
		}
		h.eventOnce(fx, n, p, cause, typ, reason, msg, now)
		// The condition follows a new reason at once the first time, then
		// at most once per interval (a reason that changes every cycle
		// does not patch every cycle). A waiting pod that still carries a
		// nominated node (kube-scheduler's, from before a restart) is
		// patched again even with the same reason: the patch clears it
		// (patchPending). So is one whose condition says something else
		// (kube-scheduler's own, from a scheduling cycle of the pod such
		// as the leader probe's, can land after gpusched's), or nothing
		// yet (a patch that failed).
		stale := p.Status.NominatedNodeName != "" || scheduledMessage(p) != msg
		key := cause + ": " + msg
		if (n.patchMsg != key || stale) && (n.patched.IsZero() || now.Sub(n.patched) >= min(iv, 5*time.Second)) {
			n.patched, n.patchMsg = now, key
			fx.pending = append(fx.pending, podEvent{pod: p, why: cause, what: msg})
		}
	}
}

// scheduledMessage is the message of p's PodScheduled condition.
func scheduledMessage(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

// apply does what a cycle decided, outside mu. It returns how long its
// steps took, as log values.
func (h *host) apply(ctx context.Context, fx *effects) []any {
	var took []any
	at := time.Now()
	step := func(name string) {
		now := time.Now()
		took = append(took, name, now.Sub(at).Round(time.Millisecond))
		at = now
	}
	for _, uid := range fx.reject {
		h.io.rejectWaiting(uid, "gpusched: the job's binding was withdrawn")
	}
	h.allocateClaims(ctx, fx) // (dra.go; it lets some through itself)
	h.letThrough(fx.activate)
	step("tookActivate")
	if h.plq != nil {
		h.plq.put(fx.plans) // written, and the gangs let through, off the cycle loop
	} else {
		h.writePlans(ctx, fx.plans)
	}
	step("tookPlans")
	if h.evq != nil {
		h.evq.put(fx.evict) // evicted off the cycle loop
	} else {
		h.evict(ctx, fx.evict)
	}
	step("tookEvict")
	for _, p := range fx.del {
		if err := h.io.deletePod(ctx, p); err != nil {
			h.log.Error(err, "Deleting a pod to requeue its job", "pod", klog.KObj(p))
		}
	}
	for i, e := range fx.events {
		h.event(e, fx.eventCauses[i])
	}
	step("tookEvents")
	if h.conds != nil {
		h.conds.put(fx.pending) // written off the cycle loop
	} else {
		// Each waiting pod's condition is its own patch: apiWriters at a time.
		workqueue.ParallelizeUntil(ctx, apiWriters, len(fx.pending), func(i int) {
			h.setPending(ctx, fx.pending[i])
		})
	}
	step("tookPending")
	return took
}

// letThrough lets pods through PreEnqueue (Handle.Activate), once no
// condition of theirs is queued or being written: none may land after
// its pod's binding.
func (h *host) letThrough(pods []*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	h.conds.settle(pods)
	h.io.activate(pods)
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	h.trace.activate(uids, time.Now())
}

// setPending writes e's PodScheduled condition to its pod.
func (h *host) setPending(ctx context.Context, e podEvent) {
	if err := h.io.setPending(ctx, e.pod, e.why, e.what); err != nil {
		h.log.V(3).Info("Setting the PodScheduled condition", "pod", klog.KObj(e.pod), "err", err)
	}
}

// apiWriters bounds the API writes a cycle makes at once (a gang's plan
// annotations, waiting pods' conditions): the client's rate limiter
// still paces them.
const apiWriters = 16

// evict marks the victim gangs' pods (takeover.go), then evicts the
// victims' pods.
func (h *host) evict(ctx context.Context, evs []eviction) {
	h.markVictims(ctx, evs)
	h.evictAll(ctx, evs)
}

// evictAll evicts the victims' pods, apiWriters at a time: first each
// victim's first pod, then the other pods of every victim whose first pod
// went, all together (a cycle that reclaims for many jobs stops many
// victims, most of them gangs; evicted one pod after the other, a 32-pod
// gang took 32 round trips, seconds of the cycle on a loaded apiserver,
// while the jobs whose victims were gone waited for the next cycle). A
// victim the Eviction API refuses (a PodDisruptionBudget's 429, or any
// other error but the pod being gone already) before any of its pods went
// is reported to the Scheduler (EvictionRefused): it keeps running, the
// plan that counted on it is dropped, the job it was for is planned again
// without it, and it is not chosen again for Args.EvictionRetry; its other
// pods are not evicted. A victim refused after some of its pods went (a
// gang whose budget allows fewer disruptions than it has pods) stays
// marked as being preempted and is not evicted again: the job it was for
// waits with the refusal in its reason until the victim's pods are gone.
func (h *host) evictAll(ctx context.Context, evs []eviction) {
	byVictim := victimEvictions(evs)
	first := make([]bool, len(byVictim)) // the victim's first pod went
	workqueue.ParallelizeUntil(ctx, apiWriters, len(byVictim), func(i int) {
		first[i] = h.evictOne(ctx, evs, byVictim[i][0], false)
	})
	var rest []eviction
	for i, pods := range byVictim {
		if first[i] {
			rest = append(rest, pods[1:]...)
			continue
		}
		for _, e := range pods[1:] {
			h.asked.release(e.pod.UID) // not sent: it runs on
		}
	}
	var mu sync.Mutex
	told := map[string]bool{} // victims whose refusal was handled
	workqueue.ParallelizeUntil(ctx, apiWriters, len(rest), func(i int) {
		e := rest[i]
		mu.Lock()
		skip := told[e.job]
		mu.Unlock()
		if skip {
			h.asked.release(e.pod.UID) // not sent
			return
		}
		if !h.evictOne(ctx, evs, e, true) {
			mu.Lock()
			told[e.job] = true
			mu.Unlock()
		}
	})
}

// victimEvictions groups evs by victim, in the order of each victim's
// first pod, each victim's pods in order.
func victimEvictions(evs []eviction) [][]eviction {
	var out [][]eviction
	at := map[string]int{}
	for _, e := range evs {
		i, ok := at[e.job]
		if !ok {
			i = len(out)
			at[e.job] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], e)
	}
	return out
}

// evictOne evicts one pod of a victim (evictAll) and reports whether it
// went (or was gone); gone says whether a pod of the victim went before.
// evs are all of the cycle's evictions (unmarkVictim).
func (h *host) evictOne(ctx context.Context, evs []eviction, e eviction, gone bool) bool {
	err := h.io.evict(ctx, e.pod, e.grace)
	if err == nil || apierrors.IsNotFound(err) {
		h.trace.evict(e.pod.UID, time.Now())
		return true
	}
	h.asked.release(e.pod.UID) // refused: the pod runs on
	if !gone {
		h.unmarkVictim(ctx, evs, e.job) // it runs on (takeover.go)
	}
	h.log.Info("Eviction refused", "pod", klog.KObj(e.pod), "victim", e.job, "for", e.forJ, "err", err)
	why := fmt.Sprintf("pod %s/%s: %v", e.pod.Namespace, e.pod.Name, err)
	h.mu.Lock()
	switch rec := h.jobs[e.job]; {
	case rec == nil:
	case !gone && h.s != nil && h.s.EvictionRefused(e.job, h.submitAt(h.io.now()), why) == nil:
		rec.evicting = false
		h.poke() // plan again now: another victim, or wait saying why
	default:
		if f := h.jobs[e.forJ]; f != nil {
			f.blocked = "eviction of " + why + " (not retried)"
		}
	}
	h.mu.Unlock()
	h.io.event(e.pod, v1.EventTypeWarning, ReasonPreempted, fmt.Sprintf("gpusched: eviction refused: %v", err))
	return false
}

// assignment returns a copy of pod's assignment, if it has one.
func (h *host) assignmentOf(uid types.UID) (assignment, bool) {
	h.amu.Lock()
	defer h.amu.Unlock()
	a, ok := h.assign[uid]
	if !ok {
		return assignment{}, false
	}
	return *a, true
}

// reserve marks pod's assignment reserved and reports whether every pod of
// its job has reserved, with their UIDs.
func (h *host) reserve(uid types.UID, node string) (all bool, members []types.UID, err error) {
	h.amu.Lock()
	defer h.amu.Unlock()
	a, ok := h.assign[uid]
	if !ok {
		return false, nil, fmt.Errorf("gpusched: the pod's binding was withdrawn")
	}
	if a.node != node {
		return false, nil, fmt.Errorf("gpusched: the pod is bound to %s, not %s", a.node, node)
	}
	a.reserved = true
	all = true
	for _, u := range h.byJob[a.job] {
		members = append(members, u)
		all = all && h.assign[u].reserved
	}
	return all, members, nil
}

// unreserve withdraws the binding of pod's job (a member could not be bound)
// and asks the next cycle to requeue the job. It holds amu alone: a slow
// decision does not stall it.
func (h *host) unreserve(uid types.UID) []types.UID {
	h.amu.Lock()
	defer h.amu.Unlock()
	a, ok := h.assign[uid]
	if !ok {
		return nil
	}
	h.requeue = append(h.requeue, a.job)
	return h.dropLocked(a.job)
}

// waitingReason is the last reason noted for a pod.
func (h *host) waitingReason(uid types.UID) string {
	h.amu.Lock()
	defer h.amu.Unlock()
	if n := h.notes[uid]; n != nil {
		return n.msg
	}
	if h.refused != nil {
		return "gpusched: " + h.refused.Error()
	}
	return defaultWaiting
}

// defaultWaiting is the reason of a pod no cycle has noted yet.
const defaultWaiting = "gpusched: waiting for a gpusched cycle to bind its job"

// forget drops what the host noted about a deleted pod, and keeps its
// phase if it was terminal (a finish a cycle may not have seen).
func (h *host) forget(p *v1.Pod) {
	h.mu.Lock()
	h.amu.Lock()
	delete(h.notes, p.UID)
	h.amu.Unlock()
	if isTerminal(p) && !disrupted(p) {
		h.finals.record(p.UID, p.Status.Phase)
	}
	if p.Spec.NodeName != "" {
		h.freed.record(p.Spec.NodeName, h.io.now())
	}
	h.mu.Unlock()
	h.asked.release(p.UID) // (evictonce.go)
}
