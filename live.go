package gpusched

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// liveChanges is the concern of live changes to the cluster and the queue
// tree (docs/live-changes.md): hosts joining and leaving, hosts changing
// shape, cordons, the health of whole domains, queue reconfiguration. Each
// change is built on a copy (topology.Cluster.Apply, queue.Tree.Reconfigure),
// checked, and switched to in one place, switchCluster or switchTree, which
// fan out to the other concerns through their methods. Its methods are the
// only writers of its fields.
type liveChanges struct {
	// draining are the hosts to take out once their jobs are gone, in
	// the order asked; back, when set, is the shape a host returns with.
	// Invariant: each names a live host of the cluster, set Draining or
	// worse, at most once.
	draining []drainingHost
}

type drainingHost struct {
	name string
	back *topology.HostGroup // SetHostGPUs: the host again, with its new template
}

// ErrLiveChange is the sentinel of the errors of live changes that cannot
// apply (unknown hosts or domains, removals of hosts that run jobs, …).
var ErrLiveChange = errors.New("live change")

func liveErr(format string, args ...any) error {
	return fmt.Errorf("gpusched: %w: %s", ErrLiveChange, fmt.Sprintf(format, args...))
}

// AddHosts applies a live change that adds hosts (and the templates,
// switches and multi-host fabric domains they need): into existing network
// domains or new ones (topology.Change; its Remove must be empty — see
// RemoveHosts). New hosts are healthy, free, and considered from the next
// cycle on; existing IDs do not change. An invalid change is a
// *topology.SpecError naming its field, and changes nothing.
// Cost: topology.Cluster.Apply and Ledger.Follow, plus O(leaves) to grow
// the queue tree's capacity; nothing per job.
func (s *Scheduler) AddHosts(ch topology.Change, now time.Time) error {
	if err := s.mutating("AddHosts", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	if len(ch.Remove) > 0 {
		return liveErr("AddHosts: the change removes hosts; use RemoveHosts, whose jobs are drained first")
	}
	return s.applyCluster(ch, s.advance(now))
}

// RemoveHosts takes hosts out of the cluster. A host that runs nothing
// goes at once. A host with jobs is set Draining and cordoned (it takes no
// new work, whatever its health does meanwhile): the next cycles recover
// its jobs by the drain rules (Config.DrainGrace, DrainKeep; Decision.
// Recoveries), and it goes at the start of the first cycle after its last
// job released what it held. It returns, sorted, the jobs that must leave
// first. Unknown names, and hosts already going, are errors (nothing
// changes).
func (s *Scheduler) RemoveHosts(names []string, now time.Time) ([]string, error) {
	if err := s.mutating("RemoveHosts", ""); err != nil {
		return nil, err
	}
	defer s.cb.leave()
	return s.drainHosts(names, nil, s.advance(now))
}

// SetHostGPUs gives host name a new shape, template (an existing
// template, or one of ch.Templates), under the same parent switch: the
// host is removed and added again under its name, with new GPU IDs. As
// for RemoveHosts, a host with jobs is drained first; it returns those
// jobs.
func (s *Scheduler) SetHostGPUs(name, template string, templates []topology.HostTemplate, now time.Time) ([]string, error) {
	if err := s.mutating("SetHostGPUs", ""); err != nil {
		return nil, err
	}
	defer s.cb.leave()
	h, ok := s.c.HostByName(name)
	if !ok {
		return nil, liveErr("SetHostGPUs: unknown host %q", name)
	}
	back := &topology.HostGroup{Name: name, Template: template}
	if p := s.c.Host(h).Parent; s.c.DomainKindOf(p) == topology.KindNetwork {
		back.Parent = s.c.DomainName(p)
	}
	// Check the new shape now, so that an error comes back here and not
	// when the host has drained.
	if err := s.c.CheckChange(topology.Change{Remove: []string{name}, Templates: templates, Hosts: []topology.HostGroup{*back}}); err != nil {
		return nil, err
	}
	if err := s.checkCapacityWithout(s.cfg.Queues, []topology.HostID{h}); err != nil {
		return nil, err
	}
	if len(templates) > 0 {
		if err := s.applyCluster(topology.Change{Templates: templates}, s.advance(now)); err != nil {
			return nil, err
		}
	}
	return s.drainHosts([]string{name}, back, s.advance(now))
}

func (s *Scheduler) drainHosts(names []string, back *topology.HostGroup, now time.Time) ([]string, error) {
	hosts := make([]topology.HostID, len(names))
	for i, name := range names {
		h, ok := s.c.HostByName(name)
		if !ok {
			return nil, liveErr("unknown host %q", name)
		}
		if s.live.going(name) || slices.Contains(names[:i], name) {
			return nil, liveErr("host %q is already being removed", name)
		}
		hosts[i] = h
	}
	if back == nil {
		if err := s.checkCapacityWithout(s.cfg.Queues, hosts); err != nil {
			return nil, err
		}
	}
	var jobs []string
	var now2 []string
	for i, h := range hosts {
		if len(s.jobs.onHost[h]) == 0 && back == nil {
			now2 = append(now2, names[i])
			continue
		}
		if s.ledger.HostHealth(h) == topology.Healthy {
			if _, err := s.setHostHealth(h, topology.Draining); err != nil {
				return nil, err
			}
		}
		// Cordoned too, so that its health coming back (SetDomainHealth)
		// does not give it new work while it waits to leave.
		if err := s.cordon(names[i], true); err != nil {
			return nil, err
		}
		for _, j := range s.jobs.onHost[h] {
			jobs = append(jobs, j.spec.ID)
		}
		s.live.drain(names[i], back)
	}
	if len(now2) > 0 {
		if err := s.applyCluster(topology.Change{Remove: now2}, now); err != nil {
			return nil, err
		}
	}
	if back != nil {
		s.removeDrained(now) // an idle host changes shape at once
	}
	slices.Sort(jobs)
	return slices.Compact(jobs), nil
}

// removeDrained takes out the draining hosts whose jobs are all gone (at
// the start of a cycle, and at once for an idle host changing shape). A
// host whose leaving the queue tree's guarantees no longer allow (quotas
// raised since it was asked) stays draining until they do.
func (s *Scheduler) removeDrained(now time.Time) {
	for _, d := range s.live.take(func(d drainingHost) bool {
		h, ok := s.c.HostByName(d.name)
		return ok && len(s.jobs.onHost[h]) == 0 && (d.back != nil || s.checkCapacityWithout(s.cfg.Queues, []topology.HostID{h}) == nil)
	}) {
		ch := topology.Change{Remove: []string{d.name}}
		if d.back != nil {
			ch.Hosts = []topology.HostGroup{*d.back}
		}
		if err := s.applyCluster(ch, now); err != nil {
			// Checked when asked (the shape) and above (the quotas).
			panic("gpusched: removing a drained host: " + err.Error())
		}
	}
}

// checkCapacityWithout reports whether the guarantees of the queue config
// cfg still fit in the cluster without hosts and without the hosts already
// waiting to leave or to change shape. O(hosts of the cluster).
func (s *Scheduler) checkCapacityWithout(cfg queue.Config, hosts []topology.HostID) error {
	capacity := capacityOf(s.c)
	for _, d := range s.live.draining {
		// A host changing shape counts as gone (its new shape is not
		// counted): conservative, and simple.
		if h, ok := s.c.HostByName(d.name); ok && !slices.Contains(hosts, h) {
			hosts = append(slices.Clip(hosts), h)
		}
	}
	for _, h := range hosts {
		hi := s.c.Host(h)
		capacity.Resources.CPUMilli -= hi.CPUMilli
		capacity.Resources.MemoryMiB -= hi.MemoryMiB
		capacity.Resources.GPUMilli -= int64(hi.NumGPUs) * topology.MilliPerGPU
		if hi.Model != topology.NoModel {
			capacity.Models[hi.Model].GPUMilli -= int64(hi.NumGPUs) * topology.MilliPerGPU
		}
	}
	if _, err := queue.Build(cfg, capacity); err != nil {
		return fmt.Errorf("gpusched: %w: without these hosts the queues' guarantees do not fit in the cluster (lower them first with Reconfigure): %w", ErrLiveChange, err)
	}
	return nil
}

// applyCluster applies ch to the cluster and switches every concern to
// the new version: the one place a cluster changes.
func (s *Scheduler) applyCluster(ch topology.Change, now time.Time) error {
	next, err := s.c.Apply(ch)
	if err != nil {
		return err
	}
	for _, name := range ch.Remove {
		h, _ := s.c.HostByName(name)
		if len(s.jobs.onHost[h]) > 0 {
			return liveErr("host %q still runs jobs", name)
		}
	}
	// The queue tree on a copy first: its capacity follows the cluster.
	tree, rc, err := s.tree.Reconfigure(s.cfg.Queues, capacityOf(next), nil, now)
	if err != nil {
		return err // a quota the smaller cluster cannot give any more
	}
	if err := s.ledger.Follow(next); err != nil {
		panic("gpusched: ledger cannot follow the cluster: " + err.Error()) // checked above
	}
	old := s.c
	s.c = next
	s.cfg.Cluster = next
	s.jobs.follow(next)
	s.adm.follow(next)
	s.res.follow(next)
	s.switchTree(tree, rc)
	// New hosts are capacity gained: the failure cache retries only the
	// shapes they could take a task of, as after a release.
	gen := s.ledger.Generation()
	for h := topology.HostID(old.NumHosts()); int(h) < next.NumHosts(); h++ {
		s.fit.gained(gen, h)
	}
	// A network domain whose hosts all left has nothing to recover (and
	// the recovery plan refuses a domain without hosts).
	s.rec.keepFaults(func(f preempt.Fault) bool { return faultHolds(next, f) })
	return nil
}

// capacityOf is what the cluster offers the queue tree.
func capacityOf(c *topology.Cluster) queue.Capacity {
	capacity := queue.Capacity{}
	perModel := make([]int64, len(c.Models()))
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		if c.Removed(h) {
			continue
		}
		_, n := c.HostGPUs(h)
		capacity.Resources.CPUMilli += c.CPUMilli(h)
		capacity.Resources.MemoryMiB += c.MemoryMiB(h)
		capacity.Resources.GPUMilli += int64(n) * topology.MilliPerGPU
		if m := c.HostModel(h); m != topology.NoModel {
			perModel[m] += int64(n) * topology.MilliPerGPU
		}
	}
	for m, a := range c.Models() {
		capacity.Models = append(capacity.Models, queue.ModelCapacity{Name: a.Model, GPUMilli: perModel[m]})
	}
	return capacity
}

// Reconfigure replaces the queue tree's configuration live: quotas,
// weights, ordering policies, fairness, priority classes; queues added and
// removed. The jobs of a removed queue go where moves say; a Move with no
// To rejects its pending jobs, which are forgotten and returned, sorted,
// for the host to report (their reason: their queue was removed). Jobs
// that hold resources stay where they run, charged to their (new) queue.
// An invalid config or move is a *queue.ConfigError naming its field, and
// changes nothing. Cost: queue.Tree.Reconfigure, plus O(jobs that change
// queue).
func (s *Scheduler) Reconfigure(cfg queue.Config, moves []queue.Move, now time.Time) ([]string, error) {
	if err := s.mutating("Reconfigure", ""); err != nil {
		return nil, err
	}
	defer s.cb.leave()
	now = s.advance(now)
	if len(s.live.draining) > 0 { // the hosts waiting to leave must be able to
		if err := s.checkCapacityWithout(cfg, nil); err != nil {
			return nil, err
		}
	}
	tree, rc, err := s.tree.Reconfigure(cfg, capacityOf(s.c), moves, now)
	if err != nil {
		return nil, err
	}
	s.cfg.Queues = cfg
	rejected := s.switchTree(tree, rc)
	slices.Sort(rejected)
	return rejected, nil
}

// switchTree moves every job to its leaf in tree, forgets the pending jobs
// rc rejected, and switches the concerns that read the tree.
func (s *Scheduler) switchTree(tree *queue.Tree, rc *queue.Reconfigured) []string {
	var rejected []string
	for _, e := range rc.Rejected {
		s.rejected(s.jobs.byID[e.ID])
		rejected = append(rejected, e.ID)
	}
	if !rc.Kept() {
		for _, j := range s.jobs.byID { // each job on its own: order does not matter
			s.jobs.moveLeaf(j, rc.NewLeaf(j.leaf))
		}
	}
	s.tree = tree
	s.adm.followTree(tree)
	s.cyc.forgetLeaves()
	s.res.dropAll()
	return rejected
}

// Cordon stops new work on host name; what runs there keeps running.
// Uncordon lets it take work again (unless its health says otherwise).
func (s *Scheduler) Cordon(name string) error {
	if err := s.mutating("Cordon", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	return s.cordon(name, true)
}

// Uncordon undoes Cordon.
func (s *Scheduler) Uncordon(name string) error {
	if err := s.mutating("Uncordon", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	return s.cordon(name, false)
}

func (s *Scheduler) cordon(name string, on bool) error {
	h, ok := s.c.HostByName(name)
	if !ok {
		return liveErr("unknown host %q", name)
	}
	if !on && s.live.going(name) {
		return liveErr("host %q is leaving the cluster", name)
	}
	if s.ledger.HostCordoned(h) == on {
		return nil
	}
	if err := s.ledger.SetHostCordoned(h, on); err != nil {
		return err
	}
	// Either way the kept reservations' shadows modelled the host as it
	// was (unusable while cordoned): rebuilt, as after a health change.
	s.res.healthLost()
	if !on {
		s.fit.gained(s.ledger.Generation(), h)
	}
	return nil
}

// SetDomainHealth sets the health of every host of a network domain (a
// ToR, a spine, the whole cluster by its name) or of every GPU of a fabric
// domain (an NVLink island, an NVL72 rack) at once, as one fault for the
// next cycle's recovery plan (preempt.DomainFault). It returns the jobs
// holding resources there, sorted.
func (s *Scheduler) SetDomainHealth(domain string, h topology.Health) ([]string, error) {
	if err := s.mutating("SetDomainHealth", ""); err != nil {
		return nil, err
	}
	defer s.cb.leave()
	d, ok := s.c.DomainByName(domain)
	if !ok {
		return nil, liveErr("SetDomainHealth: unknown domain %q", domain)
	}
	if h > topology.Failed {
		return nil, liveErr("SetDomainHealth: bad health %d", h)
	}
	var ids []string
	changed := false
	switch s.c.DomainKindOf(d) {
	case topology.KindFabric:
		for _, g := range s.c.DomainGPUs(d) {
			old := s.ledger.GPU(g).Health
			if err := s.ledger.SetGPUHealth(g, h); err != nil {
				return nil, err
			}
			host := s.c.GPUHost(g)
			changed = s.healthMoved(host, old, h) || changed
			for _, j := range s.jobs.onHost[host] {
				if usesGPU(j.placement, g) {
					ids = append(ids, j.spec.ID)
				}
			}
		}
	case topology.KindCluster, topology.KindNetwork:
		if len(s.c.DomainHostList(d)) == 0 {
			return nil, liveErr("SetDomainHealth: %s holds no host", domain)
		}
		for _, host := range s.c.DomainHostList(d) {
			old := s.ledger.HostHealth(host)
			if err := s.ledger.SetHostHealth(host, h); err != nil {
				return nil, err
			}
			changed = s.healthMoved(host, old, h) || changed
			for _, j := range s.jobs.onHost[host] {
				ids = append(ids, j.spec.ID)
			}
		}
	default:
		return nil, liveErr("SetDomainHealth: %s is a %s domain; use SetHostHealth or SetGPUHealth", domain, s.c.DomainKindOf(d))
	}
	if changed {
		s.rec.noteDomain(preempt.DomainFault(d, h, ""))
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// going reports whether host name is waiting to be removed.
func (l *liveChanges) going(name string) bool {
	return slices.ContainsFunc(l.draining, func(d drainingHost) bool { return d.name == name })
}

// drain files host name for removal once it runs nothing.
func (l *liveChanges) drain(name string, back *topology.HostGroup) {
	l.draining = append(l.draining, drainingHost{name: name, back: back})
}

// take returns, in the order asked, the draining hosts ready says may
// go, and forgets them.
func (l *liveChanges) take(ready func(drainingHost) bool) []drainingHost {
	var out []drainingHost
	l.draining = slices.DeleteFunc(l.draining, func(d drainingHost) bool {
		if ready(d) {
			out = append(out, d)
			return true
		}
		return false
	})
	return out
}

// LeavingHost is a host waiting to leave the cluster once its jobs are
// gone (RemoveHosts), or, with Template set, to come back with that
// template under its name (SetHostGPUs).
type LeavingHost struct {
	Name     string
	Template string
}

// Leaving returns the hosts waiting to leave or to change shape, in the
// order asked: what a saved state (package snapshot) carries so that a
// restarted Scheduler asks again (RemoveHosts, SetHostGPUs without new
// templates: the cluster already has them).
func (s *Scheduler) Leaving() []LeavingHost {
	var out []LeavingHost
	for _, d := range s.live.draining {
		lh := LeavingHost{Name: d.name}
		if d.back != nil {
			lh.Template = d.back.Template
		}
		out = append(out, lh)
	}
	return out
}
