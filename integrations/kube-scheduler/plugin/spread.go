package plugin

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// A gang whose members spread over a zone (or rack) label with a
// DoNotSchedule topology spread selecting every member. kube's
// PodTopologySpread accepts a pod in a domain when the pods its selector
// matches there, the pod included, exceed the least loaded domain's by at
// most maxSkew: six members over two empty zones with maxSkew 1 bind 3+3,
// one zone after the other, but never three in one zone first. So such a
// gang (rigid, not of several MIG devices per pod) is planned by quota:
//
//   - jobOf makes each member a task group of its own;
//   - each cycle, spreadQuota counts, as kube does, the domains (the
//     values of the key on the nodes the constraint's node inclusion
//     policies keep: nodeAffinityPolicy Honor and nodeTaintsPolicy Ignore
//     by default, every node, GPU or not) and the pods its selector
//     matches in each (bound or planned, matchLabelKeys included), then
//     fills the domains with the members lowest first, within what their
//     free GPUs hold (all members otherwise, preemption may free them),
//     and pins each member's task group to its domain (a Group host
//     filter): the planner places each member within its domain;
//   - a distribution kube refuses in every order (a domain no member can
//     reach keeping the global minimum at 0, fewer domains than
//     minDomains) is never planned: the job waits, saying why;
//   - the plan's members are let through in waves (spreadWaves): wave k
//     holds, per domain, what kube accepts there whatever the order it
//     binds the wave in, counting the pods bound and the waves before;
//     a member of wave k is held at PreEnqueue until every member of the
//     waves before it has reserved (kube then counts them, assumed in its
//     cache), and the last of them to reserve lets wave k through. So
//     each member passes kube's own filter at its own turn.
//
// Elastic gangs and further spread keys keep the per-domain caps
// (domains.go); a spread on the hostname keeps the per-node cap
// (perHostCap), which kube accepts in any order and leaves the placer
// its choice of nodes, unless the gang has more members than maxSkew ×
// the GPU nodes: then no cap can place it, and it is planned by quota
// the same way, each node a domain (kube binds such a gang only in
// waves too: two members per node with maxSkew 1 once every node it
// counts has one).

// spreadRule is the spread a gang is planned by quota: the constraint c
// of member rep.
type spreadRule struct {
	c   v1.TopologySpreadConstraint
	rep *v1.Pod
}

// spreadRuleOf returns the DoNotSchedule spread of members, on a key
// other than the hostname and selecting every member, with the lowest
// key (then the lowest maxSkew); nil if none.
func spreadRuleOf(members []*v1.Pod) *spreadRule {
	return spreadRuleWhere(members, func(key string) bool { return key != v1.LabelHostname })
}

// hostSpreadRuleOf returns the DoNotSchedule spread of members on the
// hostname selecting every member, with the lowest maxSkew; nil if none.
// Such a spread caps the members per node at maxSkew (perHostCap), which
// kube accepts in any order; a gang of more members than maxSkew × the
// GPU nodes is planned by quota instead (jobOf), the nodes its domains.
func hostSpreadRuleOf(members []*v1.Pod) *spreadRule {
	return spreadRuleWhere(members, func(key string) bool { return key == v1.LabelHostname })
}

// spreadRuleWhere returns the DoNotSchedule spread of members on a key
// keep accepts, selecting every member, with the lowest key (then the
// lowest maxSkew); nil if none.
func spreadRuleWhere(members []*v1.Pod, keep func(key string) bool) *spreadRule {
	var r *spreadRule
	for _, m := range members {
		_, _, spread := podTerms(m)
		for _, c := range spread {
			if c.TopologyKey == "" || !keep(c.TopologyKey) || c.MaxSkew <= 0 ||
				!termSelectsAll(m, c.LabelSelector, nil, nil, c.MatchLabelKeys, members) {
				continue
			}
			if r == nil || c.TopologyKey < r.c.TopologyKey || (c.TopologyKey == r.c.TopologyKey && c.MaxSkew < r.c.MaxSkew) {
				r = &spreadRule{c: c, rep: m}
			}
		}
	}
	return r
}

// without returns p without r's constraint: what kube's other filters
// check for p (the host plans the spread itself).
func (r *spreadRule) without(p *v1.Pod) *v1.Pod {
	q := *p
	q.Spec.TopologySpreadConstraints = slices.DeleteFunc(slices.Clone(p.Spec.TopologySpreadConstraints), func(c v1.TopologySpreadConstraint) bool {
		return c.WhenUnsatisfiable == v1.DoNotSchedule && c.TopologyKey == r.c.TopologyKey && c.MaxSkew == r.c.MaxSkew
	})
	return &q
}

// selector returns the pods r's constraint counts: its label selector
// with the rep's values of its matchLabelKeys, as kube merges them.
func (r *spreadRule) selector() (labels.Selector, error) {
	s, err := metav1.LabelSelectorAsSelector(r.c.LabelSelector)
	if err != nil {
		return nil, err
	}
	for _, k := range r.c.MatchLabelKeys {
		if v, ok := r.rep.Labels[k]; ok {
			req, err := labels.NewRequirement(k, selection.In, []string{v})
			if err != nil {
				return nil, err
			}
			s = s.Add(*req)
		}
	}
	return s, nil
}

// spreadDomains is r's domains as kube counts them for a cycle.
type spreadDomains struct {
	names []string       // sorted
	of    map[string]int // node name → its domain's index
	count []int          // the pods r's selector matches, per domain
	// zeroMin: fewer domains than minDomains, so kube's global minimum
	// is 0.
	zeroMin bool
	skew    int
}

// domainsOf counts r's domains over nodes (every node kube-scheduler
// knows) and pods (bound or planned on their node, not terminal), but
// those of skip (the gang's members to plan), as kube's
// PodTopologySpread PreFilter does: a node counts when it has every
// DoNotSchedule spread key of the rep, and passes the constraint's node
// inclusion policies; a pod when not being deleted, in the rep's
// namespace, and matched by the selector.
func (r *spreadRule) domainsOf(log klog.Logger, nodes []*v1.Node, pods []*v1.Pod, skip map[types.UID]bool) (spreadDomains, error) {
	d := spreadDomains{of: map[string]int{}, skew: int(r.c.MaxSkew)}
	sel, err := r.selector()
	if err != nil {
		return d, err
	}
	_, _, keys := podTerms(r.rep)
	aff := nodeaffinity.GetRequiredNodeAffinity(r.rep)
	honorAff := r.c.NodeAffinityPolicy == nil || *r.c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor
	honorTaints := r.c.NodeTaintsPolicy != nil && *r.c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor
	domain := map[string]string{}
	for _, n := range nodes {
		if slices.ContainsFunc(keys, func(c v1.TopologySpreadConstraint) bool { _, ok := n.Labels[c.TopologyKey]; return !ok }) {
			continue
		}
		if ok, _ := aff.Match(n); honorAff && !ok {
			continue
		}
		if _, bad := corev1helpers.FindMatchingUntoleratedTaint(log, n.Spec.Taints, r.rep.Spec.Tolerations, func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}, false); honorTaints && bad {
			continue
		}
		domain[n.Name] = n.Labels[r.c.TopologyKey]
		if !slices.Contains(d.names, domain[n.Name]) {
			d.names = append(d.names, domain[n.Name])
		}
	}
	slices.Sort(d.names)
	for node, v := range domain {
		d.of[node], _ = slices.BinarySearch(d.names, v)
	}
	d.count = make([]int, len(d.names))
	for _, p := range pods {
		i, ok := d.of[p.Spec.NodeName]
		if ok && !skip[p.UID] && p.DeletionTimestamp == nil && p.Namespace == r.rep.Namespace && sel.Matches(labels.Set(p.Labels)) {
			d.count[i]++
		}
	}
	d.zeroMin = r.c.MinDomains != nil && len(d.names) < int(*r.c.MinDomains)
	return d, nil
}

// waves returns the wave of each of members placed in domains dom (an
// index of d's, -1 for none: wave 0), so that kube accepts each member
// whatever order it binds each wave in, the pods counted in d and the
// waves before bound: a wave holds, in each domain, at most what the
// global minimum at its start (0 with zeroMin) plus maxSkew leaves room
// for. ok is false when no order binds them all (then kube refuses some
// member whatever the order). O(members × waves).
func (d *spreadDomains) waves(dom []int) (wave []int, ok bool) {
	cnt := slices.Clone(d.count)
	wave = make([]int, len(dom))
	left := 0
	for i, x := range dom {
		if x < 0 {
			continue
		}
		wave[i] = -1
		left++
	}
	for w := 0; left > 0; w++ {
		low := 0
		if !d.zeroMin && len(cnt) > 0 {
			low = slices.Min(cnt)
		}
		room := make([]int, len(cnt))
		for x := range room {
			room[x] = low + d.skew - cnt[x]
		}
		took := 0
		for i, x := range dom {
			if x >= 0 && wave[i] < 0 && room[x] > 0 {
				wave[i] = w
				room[x]--
				cnt[x]++
				took++
			}
		}
		if took == 0 {
			return nil, false
		}
		left -= took
	}
	return wave, true
}

// quota fills d's domains with n members, lowest count first (ties by
// name), domain x holding at most room[x] of them (-1: no bound); it
// returns each domain's share and whether kube accepts the result in
// some order (waves).
func (d *spreadDomains) quota(n int, room []int) ([]int, bool) {
	q := make([]int, len(d.names))
	for range n {
		best := -1
		for x := range q {
			if room[x] >= 0 && q[x] >= room[x] {
				continue
			}
			if best < 0 || d.count[x]+q[x] < d.count[best]+q[best] {
				best = x
			}
		}
		if best < 0 {
			return q, false
		}
		q[best]++
	}
	var dom []int
	for x, k := range q {
		for range k {
			dom = append(dom, x)
		}
	}
	_, ok := d.waves(dom)
	return q, ok
}

// spreadQuota is a spread gang's quota for one cycle (filterJobs): its
// domains and the domain each member's task group is planned in.
type spreadQuota struct {
	rule *spreadRule
	d    spreadDomains
	// group: per task group, its domain (-1: none, the job waits).
	group []int
	// note says how the members are spread, or why they cannot be.
	note string
}

// spreadQuotaOf returns the quota of rec's job (a spread rule) this
// cycle: allow is its host filter (nil: every host), nodes and pods
// kube's view (kubefilters.go).
func (h *host) spreadQuotaOf(rec *jobRec, allow func(topology.HostID) bool, nodes []*v1.Node, pods []*v1.Pod) *spreadQuota {
	j := rec.job
	r := j.spread
	sq := &spreadQuota{rule: r, group: make([]int, len(j.pods))}
	for g := range sq.group {
		sq.group[g] = -1
	}
	what := fmt.Sprintf("DoNotSchedule topology spread on %s, maxSkew %d", r.c.TopologyKey, r.c.MaxSkew)
	// Its members to plan are not counted; those bound (a gang restored
	// in part) are, and keep their domain.
	unbound := map[types.UID]bool{}
	for _, gp := range j.pods {
		if gp[0].Spec.NodeName == "" {
			unbound[gp[0].UID] = true
		}
	}
	d, err := r.domainsOf(h.log, nodes, pods, unbound)
	if err != nil {
		sq.note = fmt.Sprintf("its %s: %v", what, err)
		return sq
	}
	sq.d = d
	for g, gp := range j.pods {
		if x, ok := d.of[gp[0].Spec.NodeName]; ok && !unbound[gp[0].UID] {
			sq.group[g] = x
		}
	}
	// What each domain's free GPUs hold of the members (whole GPUs; a
	// member of shares or MIG devices: no bound).
	need := 0
	for _, g := range j.spec.Groups {
		need = max(need, g.GPUs)
	}
	room := make([]int, len(d.names))
	bounded := need > 0
	c, l := h.topo.Cluster, h.s.Ledger()
	reach := make([]bool, len(d.names))
	for hid := range topology.HostID(c.NumHosts()) {
		x, ok := d.of[c.HostName(hid)]
		if !ok || (allow != nil && !allow(hid)) {
			continue
		}
		reach[x] = true
		if bounded {
			k := l.HostFreeGPUs(hid) / need
			if j.spec.MaxTasksPerHost > 0 {
				k = min(k, j.spec.MaxTasksPerHost)
			}
			room[x] += k
		}
	}
	n := len(unbound)
	q, ok := d.quota(n, room)
	if !bounded || !ok {
		// Not enough free, or not in a shape kube accepts: the members'
		// share of each domain they can reach, free or not.
		for x := range room {
			room[x] = 0
			if reach[x] {
				room[x] = -1
			}
		}
		q, ok = d.quota(n, room)
	}
	if !ok {
		var parts []string
		for x, name := range d.names {
			parts = append(parts, fmt.Sprintf("%s=%s: %d", r.c.TopologyKey, name, d.count[x]))
		}
		var unreached []string
		for x, name := range d.names {
			if !reach[x] {
				unreached = append(unreached, name)
			}
		}
		why := "kube's global minimum stays at the least loaded domain"
		if len(unreached) > 0 {
			why = fmt.Sprintf("no node of %s=%s takes its pods, and kube counts that domain, keeping its global minimum at its count", r.c.TopologyKey, strings.Join(unreached, ","))
		}
		if d.zeroMin {
			why = fmt.Sprintf("fewer domains than minDomains %d, so kube's global minimum is 0", *r.c.MinDomains)
		}
		sq.note = fmt.Sprintf("its %s: kube accepts its %d pods in no order (%s; matching pods per domain: %s)", what, n, why, strings.Join(parts, ", "))
		return sq
	}
	g := 0
	var parts []string
	for x, k := range q {
		for range k {
			for !unbound[j.pods[g][0].UID] {
				g++
			}
			sq.group[g] = x
			g++
		}
		if k > 0 {
			parts = append(parts, fmt.Sprintf("%d in %s", k, d.names[x]))
		}
	}
	sq.note = fmt.Sprintf("its %s: its pods to place go %s", what, strings.Join(parts, ", "))
	return sq
}

// filter narrows want (the job's host filter) to each member's domain
// (a Group filter), keyed by the quota.
func (sq *spreadQuota) filter(c *topology.Cluster, want gpusched.HostFilter, base string) gpusched.HostFilter {
	dom := make([]int, c.NumHosts())
	hash := fnv.New64a()
	for hid := range dom {
		dom[hid] = -1
		if x, ok := sq.d.of[c.HostName(topology.HostID(hid))]; ok {
			dom[hid] = x
		}
		fmt.Fprintf(hash, "%d,", dom[hid])
	}
	group, inner := sq.group, want.Group
	want.Group = func(g int, hid topology.HostID) bool {
		return g < len(group) && group[g] >= 0 && dom[hid] == group[g] && (inner == nil || inner(g, hid))
	}
	key := want.Key
	if key == "" {
		key = base
	}
	want.Key = fmt.Sprintf("spread:%v:%x/%s", group, hash.Sum64(), key)
	return want
}

// planWaves orders a spread gang's plan (pods, with claimOf their
// claims) by wave (spreadDomains.waves), and returns each pod's wave; nil
// when the job has no quota or no order binds the plan.
func (sq *spreadQuota) planWaves(planned []plannedPod, claimOf []int) []int {
	if sq == nil || len(sq.d.names) == 0 {
		return nil
	}
	dom := make([]int, len(planned))
	for i, pp := range planned {
		dom[i] = -1
		if x, ok := sq.d.of[pp.node]; ok {
			dom[i] = x
		}
	}
	wave, ok := sq.d.waves(dom)
	if !ok {
		return nil
	}
	idx := make([]int, len(planned))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return wave[a] - wave[b] })
	p, c, w := slices.Clone(planned), slices.Clone(claimOf), slices.Clone(wave)
	for k, i := range idx {
		planned[k], claimOf[k], wave[k] = p[i], c[i], w[i]
	}
	return wave
}

// waveHeld says why the pod uid waits at PreEnqueue for its wave: a
// member of its job's waves before it has not reserved yet; "" when it
// may go.
func (h *host) waveHeld(uid types.UID) string {
	h.amu.Lock()
	defer h.amu.Unlock()
	a := h.assign[uid]
	if a == nil || a.wave == 0 {
		return ""
	}
	for _, u := range h.byJob[a.job] {
		if b := h.assign[u]; b != nil && b.wave < a.wave && !b.reserved {
			return fmt.Sprintf("gpusched: job %s binds in waves for its topology spread (kube checks each pod next to those bound before it); this pod is in wave %d, waiting for the pods of the waves before it to be reserved", a.job, a.wave+1)
		}
	}
	return ""
}

// releaseWave returns the pods to activate now that the pod uid has
// reserved: the next wave of its job, once every member of its wave and
// those before has reserved; nil otherwise.
func (h *host) releaseWave(uid types.UID) []*v1.Pod {
	h.amu.Lock()
	defer h.amu.Unlock()
	a := h.assign[uid]
	if a == nil || !a.reserved || !a.waves {
		return nil
	}
	var next []*v1.Pod
	for _, u := range h.byJob[a.job] {
		b := h.assign[u]
		switch {
		case b == nil:
		case b.wave <= a.wave && !b.reserved:
			return nil
		case b.wave == a.wave+1 && b.pod != nil:
			next = append(next, b.pod)
		}
	}
	return next
}

// gpuHosts is the number of GPU nodes in gpusched's cluster (0 before it
// has one): jobOf plans a gang spread on the hostname by quota when the
// per-node cap cannot hold it on them.
func (h *host) gpuHosts() int {
	if h.topo == nil || h.topo.Cluster == nil {
		return 0
	}
	return h.topo.Cluster.NumHosts()
}
