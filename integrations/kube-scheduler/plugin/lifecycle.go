package plugin

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
)

// How scheduler mode follows its pods' lives (issue 26):
//
//   - a pod being deleted (deletionTimestamp set) that is bound still
//     holds its GPUs: its job holds them until the pod object is gone, as
//     kube-scheduler and the kubelet count them until then;
//   - a job whose pods are all gone is booked by how they went: every pod
//     succeeded is a clean finish (Finished), a pod that failed makes it
//     Failed, a pod that vanished without either (deleted by someone else:
//     an operator, a controller, another scheduler's preemption) makes it
//     Cancelled, never Finished; so does a pod kube marked disrupted
//     (DisruptionTarget), whatever phase it ended in. Jobs gpusched evicted are Preempted;
//   - a gang that lost members keeps its GPUs while any member runs (see
//     reconcile);
//   - a pod with spec.schedulingGates is not planned and holds nothing
//     until its gates are removed;
//   - a job bound (admitted) whose pods are not all bound within
//     Args.AdmitTimeout is released by the Scheduler (Decision.Expired):
//     its assignments are withdrawn and it waits again (expire).

// podView is what one cycle sees of the profile's pods.
type podView struct {
	// live are the pods to schedule or hold: not terminal, and not being
	// deleted unless bound.
	live []*v1.Pod
	// ended are the terminal phases of the profile's terminal pods.
	ended map[types.UID]v1.PodPhase
	// held are unbound pods of gangs that have more pods than their size
	// while some bound members terminate: they wait until those are gone.
	held []*v1.Pod
}

// viewPods sorts all (every pod the informer knows) into what a cycle of
// profile works on.
func viewPods(all []*v1.Pod, profile string, a *Args) podView {
	v := podView{ended: map[types.UID]v1.PodPhase{}}
	gangs := map[string][]*v1.Pod{}
	for _, p := range all {
		if p.Spec.SchedulerName != profile {
			continue
		}
		switch {
		case isTerminal(p):
			if !disrupted(p) {
				v.ended[p.UID] = p.Status.Phase
			}
			continue
		case p.DeletionTimestamp != nil && p.Spec.NodeName == "":
			continue
		case len(p.Spec.SchedulingGates) > 0 && p.Spec.NodeName == "":
			// kube keeps it out of scheduling until its gates are
			// removed: it is no job yet and holds nothing.
			continue
		}
		if p.Labels[a.GangLabel] != "" {
			id := jobID(p, a)
			gangs[id] = append(gangs[id], p)
			continue
		}
		v.live = append(v.live, p)
	}
	for _, id := range sortedKeys(gangs) {
		pods := gangs[id]
		g, _, err := gangOf(pods[0], a)
		dying := slices.ContainsFunc(pods, func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
		if err != nil || !dying || len(pods) <= g.size {
			v.live = append(v.live, pods...)
			continue
		}
		// Replacements of members still terminating: the newest unbound
		// pods beyond the size wait.
		slices.SortStableFunc(pods, func(x, y *v1.Pod) int {
			return x.CreationTimestamp.Compare(y.CreationTimestamp.Time)
		})
		excess := len(pods) - g.size
		for k := len(pods) - 1; k >= 0; k-- {
			p := pods[k]
			if excess > 0 && p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
				v.held = append(v.held, p)
				excess--
			}
		}
		v.live = append(v.live, slices.DeleteFunc(pods, func(p *v1.Pod) bool { return slices.Contains(v.held, p) })...)
	}
	return v
}

// disrupted reports whether p was deleted by a disruption (the
// DisruptionTarget condition kube sets when its scheduler preempts a pod,
// the Eviction API evicts it, the taint manager or the pod garbage
// collector deletes it): whatever phase it ends in (a process that exits
// 0 on SIGTERM succeeds), it did not finish its work, so it counts as
// vanished, never as a clean finish (issue 26, defect 2).
func disrupted(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// endBook counts how the host ended jobs, by the state it reported.
type endBook struct {
	count map[queue.State]int
	// last is the state each ended job was booked in (the latest
	// maxEndsKept jobs).
	last  map[string]queue.State
	order []string
}

// maxEndsKept bounds endBook.last.
const maxEndsKept = 1024

func (b *endBook) record(id string, st queue.State) {
	if b.count == nil {
		b.count, b.last = map[queue.State]int{}, map[string]queue.State{}
	}
	b.count[st]++
	if _, ok := b.last[id]; !ok {
		b.order = append(b.order, id)
	}
	b.last[id] = st
	if len(b.order) > maxEndsKept {
		delete(b.last, b.order[0])
		b.order = b.order[1:]
	}
}

// finalPhases keeps the terminal phase of pods deleted since the last
// cycles (the informer's final state), so that a pod that succeeded and
// was deleted before a cycle saw it still counts as a finish. Entries go
// once used or after two cycles.
type finalPhases struct {
	phase map[types.UID]v1.PodPhase
	seen  map[types.UID]int // the cycle an entry was recorded in
	cycle int
}

func (f *finalPhases) record(uid types.UID, ph v1.PodPhase) {
	if f.phase == nil {
		f.phase, f.seen = map[types.UID]v1.PodPhase{}, map[types.UID]int{}
	}
	f.phase[uid], f.seen[uid] = ph, f.cycle
}

// take returns and forgets uid's final phase.
func (f *finalPhases) take(uid types.UID) (v1.PodPhase, bool) {
	ph, ok := f.phase[uid]
	delete(f.phase, uid)
	delete(f.seen, uid)
	return ph, ok
}

// endCycle drops entries older than two cycles.
func (f *finalPhases) endCycle() {
	f.cycle++
	for uid, c := range f.seen {
		if f.cycle-c > 2 {
			delete(f.phase, uid)
			delete(f.seen, uid)
		}
	}
}

// endedOutOfView records that p, a bound pod kube-scheduler's informer
// dropped (not a tombstone), ended rather than was deleted. That informer
// lists no terminal pods (field selector status.phase!=Succeeded,
// status.phase!=Failed), so a pod that ends reaches its handlers as a
// deletion carrying its last non-terminal state; a pod deleted through
// the API carries a deletionTimestamp in it (the apiserver sets one
// before it removes any pod). Which terminal phase it reached is not
// told: it is booked as succeeded.
func (h *host) endedOutOfView(p *v1.Pod) {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || isTerminal(p) {
		return
	}
	h.mu.Lock()
	h.finals.record(p.UID, v1.PodSucceeded)
	h.mu.Unlock()
}

// podsGone notes how the pods of rec that are not in cur went: failed,
// or vanished (deleted with no terminal phase).
func (h *host) podsGone(rec *jobRec, cur []*v1.Pod, ended map[types.UID]v1.PodPhase) {
	for _, p := range rec.job.all() {
		if slices.ContainsFunc(cur, func(q *v1.Pod) bool { return q.UID == p.UID }) {
			continue
		}
		ph, ok := ended[p.UID]
		if fp, fok := h.finals.take(p.UID); !ok && fok {
			ph, ok = fp, true
		}
		switch {
		case !ok:
			rec.vanished++
		case ph == v1.PodFailed:
			rec.failed++
		}
	}
}

// outcome is how a holding job whose pods are all gone ended.
func (rec *jobRec) outcome() queue.State {
	switch {
	case rec.failed > 0:
		return queue.Failed
	case rec.vanished > 0:
		return queue.Cancelled
	}
	return queue.Succeeded
}

// endHolding books a holding job whose pods are all gone by its outcome.
func (h *host) endHolding(id string, rec *jobRec, now time.Time) {
	st := rec.outcome()
	var err error
	switch st {
	case queue.Succeeded:
		err = h.s.Finished(id, now)
	case queue.Failed:
		err = h.s.Failed(id, now)
	default:
		h.log.Info("A job's pods were deleted without gpusched evicting them and without finishing: not booked as finished", "job", id, "podsVanished", rec.vanished)
		err = h.s.Cancel(id, now)
	}
	if err != nil {
		h.log.Error(err, "Ending a job", "job", id, "as", st.String())
	}
	h.ends.record(id, st)
}

// expire withdraws the assignments of jobs the Scheduler released because
// their pods were not all bound within Args.AdmitTimeout (Decision.
// Expired): their pods waiting at Permit are rejected, and they say why.
// A job some of whose pods did bind meanwhile is forgotten, and the next
// cycle restores it from its bound pods (as after a restart), so that no
// bound GPU is free in the Scheduler's books.
func (h *host) expire(d *gpusched.Decision, now time.Time, fx *effects) {
	for _, x := range d.Expired {
		rec := h.jobs[x.Job]
		if rec == nil {
			continue
		}
		h.dropAssignments(x.Job, fx)
		if slices.ContainsFunc(rec.job.all(), func(p *v1.Pod) bool { return p.Spec.NodeName != "" }) {
			_ = h.s.Cancel(x.Job, now)
			delete(h.jobs, x.Job)
		}
		for _, p := range rec.job.all() {
			fx.events = append(fx.events, podEvent{p, v1.EventTypeWarning, ReasonPending, "gpusched: job " + x.Job + " " + x.Reason})
		}
	}
}
