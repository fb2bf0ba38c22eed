package topology

import "fmt"

// Cordoning is the operator's "no new work here": a cordoned host keeps
// what it runs, takes nothing new, and is out of the free counters and the
// indexes like an unhealthy one. It is kept apart from health: health is
// what the hardware reports and what recovery acts on (a draining host's
// jobs are moved), while a cordon moves nothing, and uncordoning a host
// never makes a failed one healthy.

// SetHostCordoned cordons (true) or uncordons host h. Work on it stays
// allocated. O(GPUs of the host × tree depth); a no-op when nothing
// changes.
func (l *Ledger) SetHostCordoned(h HostID, cordoned bool) error {
	if h < 0 || int(h) >= len(l.cordoned) {
		return fmt.Errorf("topology: host id %d out of range", h)
	}
	if l.c.Removed(h) {
		return fmt.Errorf("topology: host %s was removed", l.c.hosts[h].name)
	}
	if l.cordoned[h] == cordoned {
		return nil
	}
	l.flipHost(h, func() { l.cordoned[h] = cordoned })
	return nil
}

// HostCordoned reports whether host h is cordoned.
func (l *Ledger) HostCordoned(h HostID) bool { return l.cordoned[h] }

// HostUsable reports whether host h takes new work: Healthy and not
// cordoned. Placers check it, not HostHealth alone.
func (l *Ledger) HostUsable(h HostID) bool { return l.hostHealth[h] == Healthy && !l.cordoned[h] }
