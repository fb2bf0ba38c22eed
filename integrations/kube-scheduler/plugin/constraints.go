package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// Node constraints in scheduler mode (issue 26, defect 4). A job is
// planned only on nodes its pods' node selector, required node affinity
// and tolerations accept (each member's where they differ:
// nodeConstraints), through a host filter on the job
// (gpusched.Scheduler.SetHostFilter), and that kube's own
// InterPodAffinity, PodTopologySpread, VolumeBinding and
// VolumeRestrictions filters accept for each member (kubefilters.go); a
// gang whose members constrain each other on a topology key has a
// per-node cap (workload.Job.MaxTasksPerHost, perHostCap) and, on a key
// other than the hostname, per-domain caps (domains.go), and each plan
// is checked next to the others of its cycle before any pod is
// activated (refusePlan). A node kube-scheduler's
// own filters reject for a planned pod (PostFilter: resources kube counts
// that gpusched does not, the constraints between one job's pods, ...) is
// excluded for that job, with the reason in its pending message, for a
// backoff that doubles with each rejection (exclusionBase up to
// exclusionMax): the job is planned elsewhere meanwhile, and is never
// re-activated on that node more than once per backoff. So is a node
// where the job's pods failed after Reserve a second time (bindFailed).

const (
	exclusionBase = 30 * time.Second
	exclusionMax  = 10 * time.Minute
)

// exclusion is a node kube rejected for a job.
type exclusion struct {
	why   string
	until time.Time
}

// constraintKey names what of p's spec constrains its nodes: its node
// selector, required node affinity and tolerations.
func constraintKey(p *v1.Pod) string {
	var req *v1.NodeSelector
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		req = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	b, err := json.Marshal(struct {
		S map[string]string `json:"s,omitempty"`
		A *v1.NodeSelector  `json:"a,omitempty"`
		T []v1.Toleration   `json:"t,omitempty"`
	}{p.Spec.NodeSelector, req, p.Spec.Tolerations})
	if err != nil {
		return fmt.Sprintf("%p", p) // cannot happen; a key of its own
	}
	return string(b)
}

// nodeConstraints returns the constraint keys (constraintKey) of members,
// each once in order of first appearance, joined, and a member of each:
// a job is planned on the nodes every one of them accepts (issue 26,
// defect 4: members that differ are each checked, not the first alone).
func nodeConstraints(members []*v1.Pod) (string, []*v1.Pod) {
	var keys []string
	var reps []*v1.Pod
	for _, m := range members {
		if k := constraintKey(m); !slices.Contains(keys, k) {
			keys, reps = append(keys, k), append(reps, m)
		}
	}
	return strings.Join(keys, "\x01"), reps
}

// nodeFits reports whether p's node selector, required node affinity and
// tolerations accept n, and if not, why.
func (h *host) nodeFits(p *v1.Pod, aff nodeaffinity.RequiredNodeAffinity, n *v1.Node) (bool, string) {
	if t, bad := corev1helpers.FindMatchingUntoleratedTaint(h.log, n.Spec.Taints, p.Spec.Tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, false); bad {
		return false, fmt.Sprintf("untolerated taint %s=%s:%s", t.Key, t.Value, t.Effect)
	}
	if ok, err := aff.Match(n); err != nil || !ok {
		return false, "node selector or affinity does not match"
	}
	return true, ""
}

// eligible is one constraint key's verdict on the cluster's hosts.
type eligible struct {
	ok  []bool
	key string // the host filter's key: which hosts pass
	all bool
	// accept counts the nodes the node constraints accept (kube's
	// filters aside).
	accept int
	// kube says which nodes kube's own filters refuse, and why
	// (kubefilters.go); "" if none.
	kube string
}

// filterJobs sets each waiting job's host filter from its constraints and
// exclusions (the Scheduler's cluster and nodes of this cycle): one for
// the whole job, or, when its members' node constraints differ (each
// task group then has members of one constraint: jobOf), one per task
// group (gpusched.HostFilter.Group), so that members with no node in
// common are each planned on nodes of their own.
func (h *host) filterJobs(nodes []*v1.Node, now time.Time) {
	c := h.topo.Cluster
	kf := h.kubeFilters()
	kf.startCycle(h.plannedNodes(), func(p *v1.Pod) string { return jobID(p, h.args) })
	byName := make(map[string]*v1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	verdicts := map[string]*eligible{}
	for _, id := range sortedKeys(h.jobs) {
		rec := h.jobs[id]
		st, ok := h.s.Job(id)
		if !ok || st.State.Holding() {
			continue
		}
		pods := rec.job.all()
		if len(pods) == 0 {
			continue
		}
		// kube's filters check a spread gang's members without the spread
		// the host plans by quota (spread.go).
		checked := func(ps []*v1.Pod) []*v1.Pod { return ps }
		if r := rec.job.spread; r != nil {
			checked = func(ps []*v1.Pod) []*v1.Pod {
				out := make([]*v1.Pod, len(ps))
				for i, p := range ps {
					out[i] = r.without(p)
				}
				return out
			}
		}
		var es []*eligible // the job's, or each task group's
		if len(rec.job.nodeReps) > 1 && len(rec.job.pods) > 1 {
			for _, gp := range rec.job.pods {
				es = append(es, h.eligibleOf(kf, verdicts, byName, checked(gp), constraintKey(gp[0]), gp[:1]))
			}
			rec.kubeNote = groupsNote(rec.job.pods, es)
		} else {
			ck, nreps := rec.job.ckey, rec.job.nodeReps
			if len(nreps) == 0 {
				ck, nreps = nodeConstraints(pods)
			}
			es = []*eligible{h.eligibleOf(kf, verdicts, byName, checked(pods), ck, nreps)}
			rec.kubeNote = es[0].kube
		}
		for node, x := range rec.excluded {
			if !now.Before(x.until) {
				delete(rec.excluded, node)
			}
		}
		want := filterOf(c, id, es, rec.excluded)
		rec.spread = nil
		if rec.job.spread != nil {
			allow := func(hid topology.HostID) bool {
				return (want.Allow == nil || want.Allow(hid)) && (want.Group == nil || want.Group(0, hid))
			}
			rec.spread = h.spreadQuotaOf(rec, allow, kf.nodes, kf.pods) // (spread.go)
			want = rec.spread.filter(c, want, es[0].key)
		}
		if want.Key == rec.filter {
			continue
		}
		if err := h.s.SetHostFilter(id, want); err != nil {
			h.log.Error(err, "Setting a job's node constraints", "job", id)
			continue
		}
		rec.filter = want.Key
	}
}

// eligibleOf returns the verdict on the cluster's hosts for pods (a job's,
// or one task group's): the nodes the node constraints of nreps (a pod of
// each distinct one, ck their key) and kube's filters for each of pods
// accept. Verdicts are cached by key for the cycle.
func (h *host) eligibleOf(kf *kubeFilters, verdicts map[string]*eligible, byName map[string]*v1.Node, pods []*v1.Pod, ck string, nreps []*v1.Pod) *eligible {
	c := h.topo.Cluster
	// kube's filters, for each member whose key differs (their claims:
	// each member's volumes may reach other nodes).
	var kks []string
	var reps []*v1.Pod
	for _, p := range pods {
		if kk := kf.key(p); kk != "" && !slices.Contains(kks, kk) {
			kks, reps = append(kks, kk), append(reps, p)
		}
	}
	for _, kk := range kks {
		ck += "\x00" + kk
	}
	if e := verdicts[ck]; e != nil {
		return e
	}
	e := &eligible{ok: make([]bool, c.NumHosts()), all: true}
	affs := make([]nodeaffinity.RequiredNodeAffinity, len(nreps))
	for k, p := range nreps {
		affs[k] = nodeaffinity.GetRequiredNodeAffinity(p)
	}
	refused := h.membersVerdict(kf, reps)
	e.kube = refusedNote(refused)
	var kb strings.Builder
	for i := range e.ok {
		n := byName[c.HostName(topology.HostID(i))]
		e.ok[i] = n == nil // (a host without its node: health decides)
		if n != nil {
			e.ok[i] = true
			for k, p := range nreps {
				if ok, _ := h.nodeFits(p, affs[k], n); !ok {
					e.ok[i] = false
					break
				}
			}
			if e.ok[i] {
				e.accept++
			}
			if _, no := refused[n.Name]; no {
				e.ok[i] = false
			}
		}
		if e.ok[i] {
			kb.WriteByte('1')
		} else {
			kb.WriteByte('0')
			e.all = false
		}
	}
	e.key = kb.String()
	if len(nreps) > 1 {
		// (Not a job split into task groups: one node filter for all.)
		note := fmt.Sprintf("its pods' node selectors, affinity or tolerations differ: planned only on the %d GPU node(s) all of them accept", e.accept)
		if e.kube != "" {
			note += "; " + e.kube
		}
		e.kube = note
	}
	verdicts[ck] = e
	return e
}

// groupsNote says, for a job whose task groups (pods, by group) have node
// filters of their own (es), how many GPU nodes each group's node
// constraints accept, and what kube's filters refuse.
func groupsNote(pods [][]*v1.Pod, es []*eligible) string {
	parts := make([]string, 0, len(es))
	var kube []string
	for gi, e := range es {
		n := "none"
		if e.accept > 0 {
			n = fmt.Sprintf("%d", e.accept)
		}
		parts = append(parts, fmt.Sprintf("pod %s: %s", pods[gi][0].Name, n))
		if e.kube != "" && !slices.Contains(kube, e.kube) {
			kube = append(kube, e.kube)
		}
	}
	note := "its pods' node selectors, affinity or tolerations differ: each is planned on the GPU nodes its own accept (" + strings.Join(parts, ", ") + ")"
	if len(kube) > 0 {
		note += "; " + strings.Join(kube, "; ")
	}
	return note
}

// filterOf returns the host filter of job id: es is its verdict (one) or
// its task groups' (several: a Group filter), excluded the nodes kube
// rejected for it; the zero filter when nothing restricts it.
func filterOf(c *topology.Cluster, id string, es []*eligible, excluded map[string]exclusion) gpusched.HostFilter {
	var want gpusched.HostFilter
	keys := make([]string, len(es))
	restricted := false
	for i, e := range es {
		keys[i] = e.key
		restricted = restricted || !e.all
	}
	key := strings.Join(keys, "|")
	if restricted {
		want.Key = key
		if len(es) == 1 {
			ok := es[0].ok
			want.Allow = func(hid topology.HostID) bool { return ok[hid] }
		} else {
			oks := make([][]bool, len(es))
			for i, e := range es {
				oks[i] = e.ok
			}
			want.Group = func(g int, hid topology.HostID) bool { return oks[g][hid] }
		}
	}
	if len(excluded) > 0 {
		ok := make([]bool, c.NumHosts())
		for i := range ok {
			ok[i] = true
		}
		for _, node := range sortedKeys(excluded) {
			if hid, found := c.HostByName(node); found {
				ok[hid] = false
			}
		}
		inner := want.Allow
		want.Allow = func(hid topology.HostID) bool { return ok[hid] && (inner == nil || inner(hid)) }
		want.Key = key + "/" + id + "/" + strings.Join(sortedKeys(excluded), ",")
	}
	return want
}

// rejection is a node kube-scheduler rejected for a job's pod, at.
type rejection struct {
	job, node, why string
	at             time.Time
	// bind: the pod failed after Reserve (Unreserve: Permit, PreBind or
	// Bind), not kube's filters.
	bind bool
	// also are more nodes excluded with node, for the same reason and
	// backoff (a crowded domain, domains.go): one rejection.
	also []string
}

// exclude records that kube-scheduler rejected node for the job of pod
// uid, saying why: the next cycle excludes it for the job until its
// backoff ends (applyRejections). It holds amu alone (PostFilter runs in
// kube-scheduler's scheduling cycle: a slow decision must not stall it).
func (h *host) exclude(uid types.UID, node, why string, now time.Time) {
	h.amu.Lock()
	defer h.amu.Unlock()
	if a, ok := h.assign[uid]; ok {
		h.rejected = append(h.rejected, rejection{job: a.job, node: node, why: why, at: now})
	}
}

// bindFailed records that the pod uid failed after Reserve (Unreserve):
// a job whose pods fail so a second time has the node excluded as if kube
// had rejected it (the first is retried at once: a transient error), so
// that a binding that always fails (a PreBind error, a volume that cannot
// bind there) does not re-activate the pod every cycle (issue 26, defect
// 4). Under amu alone, as exclude.
func (h *host) bindFailed(uid types.UID, now time.Time) {
	h.amu.Lock()
	defer h.amu.Unlock()
	if a, ok := h.assign[uid]; ok {
		h.rejected = append(h.rejected, rejection{job: a.job, node: a.node, why: "its pod's binding failed after Reserve (Permit, PreBind or Bind)", at: now, bind: true})
	}
}

// applyRejections excludes the nodes kube rejected since the last cycle
// for their jobs, each for its backoff: doubling with the job's
// rejections, or cacheLagRetry for one that may be kube's cache lagging
// (see freedNodes). Under mu.
func (h *host) applyRejections() {
	h.amu.Lock()
	rs := h.rejected
	h.rejected = nil
	h.amu.Unlock()
	for _, r := range rs {
		rec := h.jobs[r.job]
		if rec == nil {
			continue
		}
		if r.bind {
			if rec.bindFailures++; rec.bindFailures == 1 {
				continue
			}
		}
		var back time.Duration
		if h.freed.lagging(r.node, r.at, rec.lagRetried) {
			// kube-scheduler's cache may still count a pod that just left
			// node (see freedNodes): retry soon, once, not as a rejection.
			rec.lagRetried = r.at
			back = cacheLagRetry
		} else {
			rec.rejections++
			back = min(exclusionBase<<min(rec.rejections-1, 10), exclusionMax)
		}
		if rec.excluded == nil {
			rec.excluded = map[string]exclusion{}
		}
		rec.excluded[r.node] = exclusion{why: r.why, until: r.at.Add(back)}
		for _, n := range r.also {
			rec.excluded[n] = exclusion{why: r.why, until: r.at.Add(back)}
		}
	}
}

// exclusionNote says which nodes are excluded for rec, and why (the
// first few: a crowded domain excludes many, domains.go).
func (rec *jobRec) exclusionNote() string {
	const shown = 4
	var parts []string
	nodes := sortedKeys(rec.excluded)
	for _, node := range nodes[:min(len(nodes), shown)] {
		x := rec.excluded[node]
		parts = append(parts, fmt.Sprintf("node %s rejected by kube-scheduler (%s), not planned there before %s", node, x.why, x.until.UTC().Format(time.RFC3339)))
	}
	if len(nodes) > shown {
		parts = append(parts, fmt.Sprintf("%d more node(s) excluded", len(nodes)-shown))
	}
	return strings.Join(parts, "; ")
}

// cacheLagWindow is how long after a bound pod of the profile left the
// informer kube-scheduler's own cache may still count it on its node, and
// cacheLagRetry how soon a job rejected there meanwhile is planned again.
const (
	cacheLagWindow = 5 * time.Second
	cacheLagRetry  = time.Second
)

// freedNodes records when bound pods of the profile last left each node
// (the pod informer's delete events; a pod that ends leaves it too, since
// kube-scheduler's informer lists no terminal pods). kube-scheduler's
// cache and gpusched follow that informer through different handlers, so
// a cycle that gives the freed GPUs to a waiting pod may activate it
// before kube's cache dropped the pod that held them: NodeResourcesFit
// then rejects the node once. Such a rejection, within cacheLagWindow of
// a pod leaving the node and the first since, is retried after
// cacheLagRetry instead of excluding the node for exclusionBase.
type freedNodes struct {
	at map[string]time.Time
}

// record notes that a bound pod left node at t.
func (f *freedNodes) record(node string, t time.Time) {
	if f.at == nil {
		f.at = map[string]time.Time{}
	}
	for n, u := range f.at {
		if t.Sub(u) >= cacheLagWindow {
			delete(f.at, n)
		}
	}
	f.at[node] = t
}

// lagging reports whether a rejection of node at now may be kube's cache
// lagging: a pod left node within cacheLagWindow, after retried (the
// job's last such retry).
func (f *freedNodes) lagging(node string, now, retried time.Time) bool {
	t, ok := f.at[node]
	return ok && now.Sub(t) < cacheLagWindow && retried.Before(t)
}

// refusePlan checks a binding's plan with kube's own filters next to the
// plans carried out before it in the cycle and its own pods (kubefilters.go,
// admit): constraints between the members of a gang or between jobs
// planned together, which the job's node filter, made before the cycle,
// could not see. A refused plan is taken back before any of its pods is
// activated: the job is requeued and planned again in the same cycle
// (decide, up to maxReplans decisions; then a cycle is asked for), the
// node filter counting the plans kept, with the reason in its pending
// message while it waits. When
// the plan's own pods are the cause (or its plans were refused for the
// others' in the cycle before too), the node is also excluded for the job
// as if kube had rejected it (applyRejections: a backoff), so that the
// job is never planned there again and again. It reports whether
// the plan was refused. Under mu.
func (h *host) refusePlan(id string, rec *jobRec, planned []plannedPod, now time.Time, fx *effects) bool {
	kf := h.kubeFilters()
	r := domainRefusal(rec.job.domains, kf.nodes, planned) // (domains.go)
	if r == nil {
		r = kf.admit(context.Background(), h.log, planned)
	}
	if r == nil {
		rec.conflicts, rec.conflictNote = 0, ""
		return false
	}
	rec.conflicts++
	if err := h.s.Requeue(id, now); err != nil {
		h.log.Error(err, "Requeue", "job", id)
	}
	h.metrics.withdrew(WithdrawnPlanConflict)
	cause := "the pods planned in the same cycle"
	if r.own {
		cause = "the job's own pods"
	}
	if r.own || rec.conflicts > 1 {
		// (A second refusal in a row for other plans: the next cycle's
		// node filter did not see them; exclude the node all the same.)
		h.amu.Lock()
		h.rejected = append(h.rejected, rejection{job: id, node: r.node, also: r.also, why: r.why + " (next to " + cause + ")", at: now})
		h.amu.Unlock()
	}
	rec.conflictNote = fmt.Sprintf("its last plan put pod %s on node %s, where kube's filters refuse it next to %s (%s)", r.pod.Name, r.node, cause, r.why)
	if h.replans > 1 {
		h.replan = true // planned again in this cycle (decide)
		return true
	}
	h.noteWhy(fx, rec.job.all(), gpusched.TokenTopologyPlacementFailed, fmt.Sprintf("gpusched: job %s: %s; planned again", id, rec.conflictNote), ReasonPending, now)
	h.poke()
	return true
}

// perHostCap returns how many members of a gang kube's own filters let
// share one node when the members constrain each other on a topology key
// (the job's MaxTasksPerHost): 1 when a member's required pod
// anti-affinity selects every member, on kubernetes.io/hostname (one pod
// per node, the usual shape of distributed training) or on another key
// such as a zone (domains.go; conservative on nodes without the key's
// label, where kube would let members share a node), a member's
// DoNotSchedule topology spread's maxSkew on the hostname when it selects
// every member (so that each member passes whatever the order kube binds
// them in), on the hostname or another key but skip (domains.go; skip's
// spread is planned by quota, spread.go); 0 (no cap) otherwise.
// Constraints selecting only some members are left to the plan's check
// (refusePlan).
func perHostCap(members []*v1.Pod, skip string) int {
	limit := 0
	lower := func(n int) {
		if n > 0 && (limit == 0 || n < limit) {
			limit = n
		}
	}
	for _, m := range members {
		_, anti, spread := podTerms(m)
		for _, t := range anti {
			// (On any key: a node is in one domain of every key, so
			// members in distinct domains are on distinct nodes; see
			// domains.go.)
			if t.TopologyKey != "" && termSelectsAll(m, t.LabelSelector, t.Namespaces, t.NamespaceSelector, nil, members) {
				lower(1)
			}
		}
		for _, c := range spread {
			// (On another key, the cap on its domains caps each node
			// too: domains.go; but the key skip is planned by quota,
			// spread.go.)
			if c.TopologyKey != skip && termSelectsAll(m, c.LabelSelector, nil, nil, c.MatchLabelKeys, members) {
				lower(int(c.MaxSkew))
			}
		}
	}
	return limit
}

// termSelectsAll reports whether a pod term of m (its label selector, the
// namespaces it names or selects, the label keys whose values m's own
// must match) selects every one of members (one namespace: the gang's).
// A namespace selector other than the empty one (all namespaces) is not
// read: false.
func termSelectsAll(m *v1.Pod, sel *metav1.LabelSelector, namespaces []string, nsSel *metav1.LabelSelector, keys []string, members []*v1.Pod) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	switch {
	case nsSel != nil:
		if len(nsSel.MatchLabels) > 0 || len(nsSel.MatchExpressions) > 0 {
			return false
		}
	case len(namespaces) > 0 && !slices.Contains(namespaces, m.Namespace):
		return false
	}
	for _, o := range members {
		if o.Namespace != m.Namespace || !s.Matches(labels.Set(o.Labels)) {
			return false
		}
		for _, k := range keys {
			if v, ok := m.Labels[k]; ok && o.Labels[k] != v {
				return false
			}
		}
	}
	return true
}

// membersVerdict returns the nodes kube's filters refuse for some pod of
// reps (a job's members whose keys differ), and why: a job is planned on
// the nodes every member may use (the job's node filter is one for all
// its pods).
func (h *host) membersVerdict(kf *kubeFilters, reps []*v1.Pod) map[string]string {
	var refused map[string]string
	for _, p := range reps {
		for node, why := range kf.verdict(context.Background(), h.log, p) {
			if refused == nil {
				refused = map[string]string{}
			}
			if _, ok := refused[node]; !ok {
				if len(reps) > 1 {
					why = "pod " + p.Name + ": " + why
				}
				refused[node] = why
			}
		}
	}
	return refused
}

// perHostNote says that a job is capped per node (perHostCap) and per
// domain of a topology key (domains.go), "" if neither.
func perHostNote(j *podJob) string {
	var parts []string
	if j.spec.MaxTasksPerHost > 0 {
		parts = append(parts, fmt.Sprintf("at most %d of its pods per node (their required pod anti-affinity or DoNotSchedule topology spread)", j.spec.MaxTasksPerHost))
	}
	for _, c := range j.domains {
		parts = append(parts, fmt.Sprintf("at most %d of its pods per %s (their %s)", c.limit, c.key, c.what))
	}
	return strings.Join(parts, "; ")
}
