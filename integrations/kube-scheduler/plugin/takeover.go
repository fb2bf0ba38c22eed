package plugin

import (
	"context"
	"fmt"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// PreemptedForAnnotation marks the pods of a victim gang (a job with more
// than one pod to evict) with the job the room is for. It is written to
// all of them before any is evicted (issue 26, defect 1): a leader killed,
// or that lost its lease, between two evictions leaves a gang that lost
// some members, and the scheduler that takes over evicts the rest
// (resumeEvictions) instead of keeping them on the GPUs the preemptor was
// planned on. A victim whose eviction is refused before any of its pods
// went is unmarked (the value is emptied).
const PreemptedForAnnotation = "gpusched.io/preempted-for"

// resumeGrace is the grace of a resumed eviction: the pod's own (the
// previous leader's choice is not known).
const resumeGrace = time.Duration(math.MaxInt64)

// victimPods counts the pods to evict per victim in evs.
func victimPods(evs []eviction) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		n[e.job]++
	}
	return n
}

// markVictims writes PreemptedForAnnotation to every pod of each victim
// gang in evs. A pod that cannot be marked is still evicted (the mark only
// matters if this scheduler stops in the middle).
func (h *host) markVictims(ctx context.Context, evs []eviction) {
	n := victimPods(evs)
	var marks []eviction
	for _, e := range evs {
		if n[e.job] >= 2 && e.pod.Annotations[PreemptedForAnnotation] != e.forJ {
			marks = append(marks, e)
		}
	}
	// apiWriters at a time; all are written before any eviction.
	workqueue.ParallelizeUntil(ctx, apiWriters, len(marks), func(i int) {
		e := marks[i]
		if err := h.io.annotate(ctx, e.pod, map[string]string{PreemptedForAnnotation: e.forJ}); err != nil {
			h.log.Error(err, "Marking a victim's pod before its eviction", "pod", klog.KObj(e.pod), "victim", e.job)
		}
	})
}

// unmarkVictim empties the mark of job's pods in evs: its eviction was
// refused before any of its pods went, and it runs on.
func (h *host) unmarkVictim(ctx context.Context, evs []eviction, job string) {
	if victimPods(evs)[job] < 2 {
		return
	}
	for _, e := range evs {
		if e.job != job {
			continue
		}
		if err := h.io.annotate(ctx, e.pod, map[string]string{PreemptedForAnnotation: ""}); err != nil {
			h.log.Error(err, "Unmarking a victim's pod whose eviction was refused", "pod", klog.KObj(e.pod), "victim", e.job)
		}
	}
}

// resumeEvictions evicts the bound pods of j, a job just restored, if
// any of its pods carries the mark of a preemption a previous leader
// began.
func (h *host) resumeEvictions(j *podJob, fx *effects) {
	rec := h.jobs[j.spec.ID]
	if rec == nil || rec.evicting {
		return
	}
	var forJ string
	for _, p := range j.all() {
		if m := p.Annotations[PreemptedForAnnotation]; m != "" {
			forJ = m
		}
	}
	if forJ == "" {
		return
	}
	rec.evicting = true
	for _, p := range j.all() {
		if !h.asked.claim(p) {
			// Unbound, being deleted, or its eviction asked already: a
			// cycle's evictions go out off the cycle loop, and one of
			// them may still be queued or in flight (evictonce.go).
			continue
		}
		fx.evict = append(fx.evict, eviction{job: j.spec.ID, forJ: forJ, pod: p, grace: resumeGrace})
		fx.events = append(fx.events, podEvent{p, v1.EventTypeNormal, ReasonPreempted,
			fmt.Sprintf("gpusched: preempted for %s (the rest of an eviction a previous leader began)", forJ)})
	}
}
