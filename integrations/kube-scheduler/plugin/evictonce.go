package plugin

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// askedEvictions are the pods whose eviction this scheduler asked for and
// that are not gone: queued (evictQueue), in flight, or done while the
// pod object lingers. A pod (one incarnation: its UID) is asked at most
// once. Evictions go out off the cycle loop, so a later cycle can meet a
// victim whose evictions are still queued, as a job it does not know (a
// rebuild restores every job from its pods) carrying the mark of a
// preemption (resumeEvictions): it must not ask again (found by the e2e
// TestHALeaderKilled: 17 eviction requests for 16 pods gone;
// TestEvictionQueuedIsNotAskedAgain). A refused eviction, or one not sent
// (its victim's first pod was refused), is released: the pod runs on and
// a later preemption may ask again. A pod being deleted is never asked.
type askedEvictions struct {
	mu   sync.Mutex
	uids map[types.UID]bool
}

// claim reports whether pod's eviction may be asked now (it is bound, not
// being deleted, and not asked already), and records it as asked.
func (a *askedEvictions) claim(pod *v1.Pod) bool {
	if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.uids[pod.UID] {
		return false
	}
	if a.uids == nil {
		a.uids = map[types.UID]bool{}
	}
	a.uids[pod.UID] = true
	return true
}

// release says that uid's eviction was refused or not sent (it may be
// asked again), or that the pod is gone.
func (a *askedEvictions) release(uid types.UID) {
	a.mu.Lock()
	delete(a.uids, uid)
	a.mu.Unlock()
}
