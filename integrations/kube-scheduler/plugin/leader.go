package plugin

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// leadership tells the host when this kube-scheduler leads (issue 26,
// defect 1). kube-scheduler syncs its informers before leader election
// (unless delayCacheUntilActive), so a synced cache does not mean leading:
// a standby replica that ran cycles would evict, delete and patch from its
// own diverging view. What only the leader does is run scheduling cycles
// (scheduleOne pops pods only after it won the election). So the host lets
// one pod of its profile, the probe, through PreEnqueue while it does not
// know it leads; the first scheduling cycle of any pod of the profile
// (PreFilter) proves it leads, and only then does the host's loop run its
// first cycle. A replica that loses the lease exits (kube-scheduler), so
// leading, once seen, lasts.
type leadership struct {
	once    sync.Once
	leading chan struct{} // closed once leading

	mu    sync.Mutex
	probe types.UID // the pod let through PreEnqueue to be scheduled
}

func newLeadership() *leadership { return &leadership{leading: make(chan struct{})} }

// lead records that this scheduler leads.
func (l *leadership) lead() { l.once.Do(func() { close(l.leading) }) }

// isLeading reports whether this scheduler is known to lead.
func (l *leadership) isLeading() bool {
	select {
	case <-l.leading:
		return true
	default:
		return false
	}
}

// letProbe reports whether pod goes through PreEnqueue as the probe: it
// is the probe, or there is none yet and pod can be scheduled (no
// scheduling gates).
func (l *leadership) letProbe(pod *v1.Pod) bool {
	if l.isLeading() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.probe == pod.UID:
		return true
	case l.probe == "" && len(pod.Spec.SchedulingGates) == 0:
		l.probe = pod.UID
		return true
	}
	return false
}

// forget drops the probe if it is uid (the pod was deleted).
func (l *leadership) forget(uid types.UID) {
	l.mu.Lock()
	if l.probe == uid {
		l.probe = ""
	}
	l.mu.Unlock()
}
