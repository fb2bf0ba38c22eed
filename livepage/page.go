package livepage

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// DefaultMaxPending is how many waiting jobs a page lists when
// Options.MaxPending is 0.
const DefaultMaxPending = 500

// Page is what the live page shows: the value WriteHTML draws and
// Handler serves as JSON at /state.json.
type Page struct {
	// Title names the page's source (a profile, a state file).
	Title string `json:"title"`
	// Status is the line under the title: when the cycle shown ran, or
	// why there is none.
	Status string `json:"status"`
	// At is the time of the cycle shown; zero with no cycle.
	At time.Time `json:"at"`
	// Queues are every queue of the tree, root first, depth first.
	Queues []Queue `json:"queues"`
	// Pending are the first Options.MaxPending jobs that waited in the
	// cycle, in the Decision's order; PendingTotal counts them all.
	Pending      []Waiting `json:"pending"`
	PendingTotal int       `json:"pendingTotal"`
	// Stranded is the cycle's fragmentation per topology level,
	// innermost first (empty without Cycle.Stats).
	Stranded []Stranded `json:"stranded,omitempty"`
	// Cluster is the cluster's root domain; nil for a page with no
	// Scheduler (WriteHTML then draws the title and status only).
	Cluster *Domain `json:"cluster,omitempty"`
}

// Queue is one queue's row: its jobs and its "gpu" resource (in GPUs,
// fractions for shares), its subtree included (queue.View).
type Queue struct {
	Name  string `json:"name"`
	Depth int    `json:"depth"` // 0 for the root
	Leaf  bool   `json:"leaf"`
	// Pending, Admitted and Running count jobs.
	Pending  int `json:"pending"`
	Admitted int `json:"admitted"`
	Running  int `json:"running"`
	// Governed is false when no quota limits GPUs: Guarantee and
	// Borrowed are 0 then.
	Governed bool `json:"governed"`
	// Guarantee is the nominal quota; Used is held by running jobs,
	// Reserved by admitted ones not started; Borrowed is Used+Reserved
	// beyond Guarantee.
	Guarantee float64 `json:"guarantee"`
	Used      float64 `json:"used"`
	Reserved  float64 `json:"reserved"`
	Borrowed  float64 `json:"borrowed"`
}

// Waiting is a job that waited in the cycle.
type Waiting struct {
	Job   string `json:"job"`
	Queue string `json:"queue"`
	State string `json:"state"` // pending, requeued or preempted
	// Reason is the reason token (gpusched.Reason.Token), Why the reason
	// in words.
	Reason string `json:"reason"`
	Why    string `json:"why"`
}

// Stranded is the fragmentation at one topology level (gpusched.
// StrandedGPUs): GPUs free in Domains domains that hold fewer than Need,
// the fewest a waiting shape can use in one domain of the level (at the
// host level the least over GPU models; 0 when no job waits).
type Stranded struct {
	Level   string `json:"level"`
	GPUs    int    `json:"gpus"`
	Domains int    `json:"domains"`
	Need    int    `json:"need"`
}

// Domain is a box of the cluster picture: a network domain (or the
// root), holding its child network domains, its own hosts and racks; or
// a rack (Rack set): the trays of one multi-node NVLink domain within a
// network domain (a rack whose trays sit in several network domains is
// drawn in each, with the trays there). Counts are of the hosts drawn
// inside it.
type Domain struct {
	Level string `json:"level"` // the level's name: "cluster", "tor", …; "nvlink" for a rack
	Name  string `json:"name"`
	Rack  bool   `json:"rack,omitempty"`
	// GPUs counts the GPUs, Healthy the allocatable ones, Free the free
	// allocatable ones.
	GPUs    int `json:"gpus"`
	Healthy int `json:"healthy"`
	Free    int `json:"free"`
	// Stranded is Free when the domain's free GPUs are fewer than every
	// waiting shape needs in one domain of its level, else 0.
	Stranded int      `json:"stranded"`
	Domains  []Domain `json:"domains,omitempty"`
	Hosts    []Host   `json:"hosts,omitempty"`
}

// Host is a host's cell.
type Host struct {
	Name  string `json:"name"`
	Model string `json:"model,omitempty"`
	// GPUs counts its GPUs; Used those with any allocation; Failed those
	// marked failed; Free its free allocatable GPUs.
	GPUs   int `json:"gpus"`
	Used   int `json:"used"`
	Failed int `json:"failed"`
	Free   int `json:"free"`
	// Stranded is Free when fewer free GPUs than every waiting shape that
	// accepts its model needs on one host, else 0.
	Stranded int `json:"stranded"`
	// Health is the host's: healthy, draining or failed; Cordoned is set
	// for a cordoned host.
	Health   string `json:"health"`
	Cordoned bool   `json:"cordoned,omitempty"`
	// Marks has one letter per GPU: u used, p in part used (shares or
	// MIG), f free, d draining and free, x failed.
	Marks string `json:"marks"`
}

// Cycle is the scheduling cycle a page shows: its time and what its
// Decision said.
type Cycle struct {
	At      time.Time
	Pending []gpusched.Pending
	// Stats are the cycle's figures (Config.Stats); nil draws no
	// fragmentation.
	Stats *gpusched.CycleStats
}

// FromDecision returns the Cycle of Decision d.
func FromDecision(d *gpusched.Decision) Cycle {
	return Cycle{At: d.Now, Pending: d.Pending, Stats: d.Stats}
}

// Options shape a page.
type Options struct {
	// Title names the page's source, e.g. "profile gpu" or "state
	// state.yaml".
	Title string
	// Status overrides the status line ("Last cycle at …" by default).
	Status string
	// MaxPending caps the waiting jobs listed (DefaultMaxPending when 0).
	MaxPending int
}

// Build returns the page of Scheduler s after cycle c (normally the
// last Decision s returned). It reads s through Queues, Cluster and
// Ledger only, and keeps nothing of s: the Page may be rendered after s
// changed, in another goroutine. Cost: O(queues + hosts + GPUs + listed
// rows).
func Build(s *gpusched.Scheduler, c Cycle, o Options) *Page {
	p := &Page{Title: o.Title, Status: o.Status, At: c.At}
	if p.Status == "" {
		p.Status = fmt.Sprintf("Last cycle at %s.", c.At.UTC().Format(time.RFC3339))
	}
	for _, v := range s.Queues() {
		q := Queue{Name: v.Queue, Depth: v.Depth, Leaf: v.Leaf, Pending: v.Pending, Admitted: v.Admitted, Running: v.Running}
		for _, r := range v.Resources {
			if r.Resource == "gpu" {
				q.Governed, q.Used, q.Reserved = r.Governed, r.Used, r.Reserved
				if r.Governed {
					q.Guarantee, q.Borrowed = r.Nominal, r.Borrowed
				}
			}
		}
		p.Queues = append(p.Queues, q)
	}
	limit := o.MaxPending
	if limit <= 0 {
		limit = DefaultMaxPending
	}
	p.PendingTotal = len(c.Pending)
	for _, w := range c.Pending[:min(limit, len(c.Pending))] {
		row := Waiting{Job: w.Job, Queue: w.Queue, State: w.State.String(), Reason: w.Reason.Token()}
		if w.Reason != nil {
			row.Why = w.Reason.String()
		}
		p.Pending = append(p.Pending, row)
	}
	b := newPicture(s.Cluster(), s.Ledger(), c.Stats)
	if c.Stats != nil {
		for _, x := range c.Stats.Stranded {
			p.Stranded = append(p.Stranded, Stranded{Level: x.Name, GPUs: x.GPUs, Domains: x.Domains, Need: x.Need})
		}
	}
	root := b.domain(b.c.Root())
	p.Cluster = &root
	return p
}

// picture builds the cluster's boxes.
type picture struct {
	c *topology.Cluster
	l topology.LedgerReader
	// need is each level's Need, hostNeed the host level's per model (nil
	// without figures: nothing is stranded).
	need     map[topology.Level]int
	hostNeed []int
	// racks are the multi-host fabric domains.
	racks map[topology.DomainID]bool
}

func newPicture(c *topology.Cluster, l topology.LedgerReader, st *gpusched.CycleStats) *picture {
	b := &picture{c: c, l: l, need: map[topology.Level]int{}, racks: map[topology.DomainID]bool{}}
	if st != nil {
		for _, x := range st.Stranded {
			b.need[x.Level] = x.Need
			if x.Level == topology.LevelHost {
				b.hostNeed = x.ModelNeed
			}
		}
	}
	for _, d := range c.DomainsAt(topology.LevelFabric) {
		if gs := c.DomainGPUs(d); len(gs) > 0 && c.GPUHost(gs[0]) != c.GPUHost(gs[len(gs)-1]) {
			b.racks[d] = true
		}
	}
	return b
}

// stranded returns free when a domain of level lv holding free GPUs has
// them stranded, else 0.
func (b *picture) stranded(lv topology.Level, free int) int {
	if need := b.need[lv]; free > 0 && free < need {
		return free
	}
	return 0
}

// domain returns network (or cluster) domain d's box: its child network
// domains, then its own hosts, the trays of a rack grouped in a rack box.
func (b *picture) domain(d topology.DomainID) Domain {
	c := b.c
	info := c.Domain(d)
	out := Domain{Level: c.LevelName(info.Level), Name: info.Name, Healthy: b.l.HealthyGPUs(d), Free: b.l.FreeGPUs(d)}
	for _, h := range c.DomainHostList(d) {
		out.GPUs += c.Host(h).NumGPUs
	}
	for _, ch := range c.DomainChildren(d) {
		if c.DomainKindOf(ch) == topology.KindNetwork {
			out.Domains = append(out.Domains, b.domain(ch))
		}
	}
	var rack *Domain
	rackOf := topology.NoDomain
	for _, h := range c.DomainHostList(d) {
		hi := c.Host(h)
		if hi.Parent != d {
			continue // under a child network domain
		}
		x := b.host(h)
		f := topology.NoDomain
		if hi.NumGPUs > 0 {
			f = c.GPUFabric(hi.FirstGPU)
		}
		if !b.racks[f] {
			out.Hosts = append(out.Hosts, x)
			continue
		}
		if rack == nil || f != rackOf {
			out.Domains = append(out.Domains, Domain{Level: c.LevelName(topology.LevelFabric), Name: c.DomainName(f), Rack: true})
			rack, rackOf = &out.Domains[len(out.Domains)-1], f
		}
		rack.GPUs += x.GPUs
		rack.Healthy += b.l.HealthyGPUs(hi.Domain)
		rack.Free += x.Free
		rack.Hosts = append(rack.Hosts, x)
	}
	for i := range out.Domains {
		if x := &out.Domains[i]; x.Rack {
			x.Stranded = b.stranded(topology.LevelFabric, x.Free)
		}
	}
	out.Stranded = b.stranded(info.Level, out.Free)
	return out
}

// host returns host h's cell.
func (b *picture) host(h topology.HostID) Host {
	c, l := b.c, b.l
	hi := c.Host(h)
	x := Host{Name: hi.Name, GPUs: hi.NumGPUs, Free: l.HostFreeGPUs(h), Health: l.HostHealth(h).String(), Cordoned: l.HostCordoned(h)}
	if hi.Model != topology.NoModel {
		x.Model = c.Model(hi.Model).Model
	}
	marks := make([]byte, hi.NumGPUs)
	for i := range hi.NumGPUs {
		st := l.GPU(hi.FirstGPU + topology.GPUID(i))
		switch {
		case st.Health == topology.Failed:
			marks[i] = 'x'
			x.Failed++
		case st.Mode == topology.ModeWhole:
			marks[i] = 'u'
		case st.Mode != topology.ModeFree:
			marks[i] = 'p'
		case st.Health == topology.Draining:
			marks[i] = 'd'
		default:
			marks[i] = 'f'
		}
		if st.Mode != topology.ModeFree {
			x.Used++
		}
	}
	x.Marks = string(marks)
	if b.hostNeed != nil && hi.Model != topology.NoModel && int(hi.Model) < len(b.hostNeed) {
		if need := b.hostNeed[hi.Model]; x.Free > 0 && x.Free < need {
			x.Stranded = x.Free
		}
	}
	return x
}
