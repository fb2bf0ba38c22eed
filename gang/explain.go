package gang

import (
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/topology"
)

// Reason is why a host cannot take any task of a request.
type Reason uint8

// Reasons, in the order hosts are checked: a host counts under the first
// reason that rules it out for every task group of the request.
const (
	ReasonModel  Reason = iota // its accelerator model is not acceptable
	ReasonHealth               // the host is draining or failed
	ReasonQuota                // the request's AllowHost filter (quota, reserved cells) rejects it
	ReasonCPU                  // too little free CPU
	ReasonMemory               // too little free memory
	ReasonGPU                  // too few free GPUs (or no GPU with the share or MIG slot free)
	NumReasons                 // the number of reasons

	reasonNone Reason = 255
)

var reasonNames = [...]string{"model", "health", "quota", "cpu", "memory", "gpu"}

// String returns the reason's short name ("model", "health", …).
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Verdict sums up why a request does not fit.
type Verdict uint8

// Verdicts.
const (
	// VerdictCapacity: the cluster does not have enough free GPUs (of an
	// acceptable model, on healthy hosts) for the gang, wherever they are.
	VerdictCapacity Verdict = iota
	// VerdictQuota: it has, but hosts the request may not use (AllowHost)
	// hold the difference.
	VerdictQuota
	// VerdictFragmentation: enough usable GPUs are free, but not together:
	// no domain at the required level has room for the whole gang (or its
	// free GPUs are spread so that the tasks do not fit on its hosts).
	VerdictFragmentation
	// VerdictTooLarge: the gang needs more GPUs than any domain at the
	// required level has at all, even empty (a 4,096-GPU gang in one
	// 256-GPU ToR, or more GPUs than the cluster).
	VerdictTooLarge
)

var verdictNames = [...]string{"capacity", "quota", "fragmentation", "too large"}

// String returns "capacity", "quota", "fragmentation" or "too large".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Candidate is a domain that came closest to holding a request.
type Candidate struct {
	Domain topology.DomainID
	Name   string
	// FreeGPUs is its number of free GPUs; Short how many more the gang
	// needs (0 when enough are free but the tasks did not pack).
	FreeGPUs int
	Short    int
	// Tasks is how many tasks a placement attempt fitted in it before
	// failing; -1 if it was not tried.
	Tasks int
}

// Explanation says why a request does not fit on a ledger now. It is data:
// a scheduler records it, a CLI prints String.
type Explanation struct {
	// Job is the request's ID.
	Job string
	// Verdict sums it up.
	Verdict Verdict
	// Tasks, GPUs and Milli are what the gang needs at least (Min tasks of
	// each group): tasks, whole GPUs, and GPU capacity in milli-GPU
	// (shares and MIG instances included).
	Tasks int
	GPUs  int
	Milli int64
	// Level is the level the gang must fit in one domain of: the innermost
	// required level, or the cluster level. LevelName is its name.
	Level     topology.Level
	LevelName string
	// Domains is the number of domains at Level; TooSmall how many of
	// them have fewer free GPUs than the gang needs; Tried how many had
	// enough but could not hold the tasks.
	Domains, TooSmall, Tried int
	// Largest is the GPU count of the largest domain at Level (free or
	// not).
	Largest int
	// Best is the domain at Level that came closest.
	Best Candidate
	// Excluded counts, per Reason, the hosts that cannot take any task of
	// the request (zero under DetailBrief, and for VerdictTooLarge, which
	// domain sizes alone prove).
	Excluded [NumReasons]int
	// Hosts is the number of hosts considered.
	Hosts int
	// FreeGPUs is the cluster's free GPUs; Usable those on hosts the
	// request could use (acceptable model, healthy); Allowed those of them
	// also allowed by AllowHost. Under DetailBrief both equal FreeGPUs.
	FreeGPUs, Usable, Allowed int
	// TotalGPUs is the cluster's GPU count.
	TotalGPUs int
	// FilterLabel is the request's FilterLabel ("quota" when it set
	// none): what ReasonQuota and VerdictQuota stand for in String.
	FilterLabel string
}

// filterLabel returns FilterLabel, or "quota".
func (x *Explanation) filterLabel() string {
	if x.FilterLabel == "" {
		return "quota"
	}
	return x.FilterLabel
}

// Fragmented reports whether the cluster as a whole has enough usable free
// GPUs for the gang (so it is fragmentation or topology, not capacity).
func (x *Explanation) Fragmented() bool { return x.Verdict == VerdictFragmentation }

// String renders the explanation on one line, e.g.
//
//	job j: needs 16 GPUs (2 tasks) in one tor; best tor003 has 12 free (4 short); 9 of 12 tors too small; cluster has 412 free GPUs: fragmentation
func (x *Explanation) String() string {
	var b strings.Builder
	if x.Job != "" {
		b.WriteString("job " + x.Job + ": ")
	}
	b.WriteString("needs ")
	switch {
	case x.GPUs > 0:
		b.WriteString(plural(x.GPUs, "GPU"))
	case x.Milli > 0:
		b.WriteString(milliGPUs(x.Milli) + " GPU")
	default:
		b.WriteString("no GPU")
	}
	b.WriteString(" (" + plural(x.Tasks, "task") + ")")
	if x.LevelName != "" && x.LevelName != "cluster" {
		b.WriteString(" in one " + x.LevelName)
	}
	if x.Verdict == VerdictTooLarge && (x.LevelName == "cluster" || x.LevelName == "") {
		// Larger than the whole cluster: nothing more to say.
		b.WriteString("; the cluster has " + plural(x.TotalGPUs, "GPU") + ": " + x.Verdict.String())
		return b.String()
	}
	if x.Verdict == VerdictTooLarge && x.Largest > 0 {
		b.WriteString("; the largest " + x.LevelName + " has " + plural(x.Largest, "GPU"))
	} else if x.Best.Domain != topology.NoDomain && x.LevelName != "cluster" {
		b.WriteString("; best " + x.Best.Name + " has " + strconv.Itoa(x.Best.FreeGPUs) + " free")
		switch {
		case x.Best.Short > 0:
			b.WriteString(" (" + strconv.Itoa(x.Best.Short) + " short)")
		case x.Best.Tasks >= 0:
			b.WriteString(" but fits " + strconv.Itoa(x.Best.Tasks) + " of " + strconv.Itoa(x.Tasks) + " tasks")
		}
		if x.TooSmall > 0 {
			b.WriteString("; " + strconv.Itoa(x.TooSmall) + " of " + strconv.Itoa(x.Domains) + " " + x.LevelName + " domains too small")
		}
	}
	b.WriteString("; cluster has " + strconv.Itoa(x.FreeGPUs) + " free GPUs")
	if x.Usable != x.FreeGPUs {
		b.WriteString(", " + strconv.Itoa(x.Usable) + " usable")
	}
	if x.Allowed != x.Usable {
		b.WriteString(", " + strconv.Itoa(x.Allowed) + " within " + x.filterLabel())
	}
	if x.Verdict == VerdictQuota {
		b.WriteString(": " + x.filterLabel())
	} else {
		b.WriteString(": " + x.Verdict.String())
	}
	first := true
	for r, n := range x.Excluded {
		if n == 0 {
			continue
		}
		if first {
			b.WriteString("; hosts excluded by ")
			first = false
		} else {
			b.WriteString(", ")
		}
		name := Reason(r).String()
		if Reason(r) == ReasonQuota {
			name = x.filterLabel()
		}
		b.WriteString(name + " " + strconv.Itoa(n))
	}
	return b.String()
}

func plural(n int, unit string) string {
	s := strconv.Itoa(n) + " " + unit
	if n != 1 {
		s += "s"
	}
	return s
}

func milliGPUs(m int64) string {
	if m%1000 == 0 {
		return strconv.FormatInt(m/1000, 10)
	}
	return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64)
}

// explain builds the Explanation of a request that did not fit.
func (pl *policy) explain() *Explanation {
	e := &pl.e
	c, l, r := e.c, e.l, e.r
	d := r.MinDemand()
	lv := r.Within()
	root := c.Root()
	x := &Explanation{
		Job: r.ID, Tasks: d.Tasks, GPUs: d.GPUs, Milli: d.Milli,
		Level: lv, LevelName: c.LevelName(lv),
		FreeGPUs: l.FreeGPUs(root), TotalGPUs: c.NumGPUs(),
		Best:        Candidate{Domain: topology.NoDomain, Tasks: -1},
		FilterLabel: r.FilterLabel,
	}
	x.Usable, x.Allowed = x.FreeGPUs, x.FreeGPUs
	x.Tried = pl.tried
	need := d.GPUs
	x.Domains = len(c.DomainsAt(lv))
	full := pl.opts.Explain == DetailFull
	x.Largest = e.largest[lv]
	// A gang larger than every domain at its level (or than the cluster) is
	// proven infeasible by sizes alone: no host census is needed to say so,
	// and none is taken, so the proof costs O(1) however large the cluster.
	tooLarge := need > 0 && x.Largest > 0 && need > x.Largest || need > c.NumGPUs()
	if full && !tooLarge {
		if pl.censusFits(r) {
			pl.fromCensus(x)
		} else {
			pl.scanHosts(x, d)
		}
		pl.countTooSmall(x, lv, need)
	}
	if full && tooLarge {
		x.TooSmall = x.Domains
	}
	// The best candidate: the domain an attempt got furthest in, else the
	// one with the most free GPUs.
	best := pl.best
	if best == topology.NoDomain {
		best, _ = l.MaxFreeDomain(lv)
	}
	if best != topology.NoDomain {
		x.Best = Candidate{Domain: best, Name: c.DomainName(best), FreeGPUs: l.FreeGPUs(best), Tasks: -1}
		if pl.best == best {
			x.Best.Tasks = pl.bestTasks
		}
		x.Best.Short = max(0, need-x.Best.FreeGPUs)
	}
	switch {
	case tooLarge:
		x.Verdict = VerdictTooLarge
	case d.GPUs > 0 && x.Usable < need, d.GPUs == 0 && l.FreeMilli(root) < d.Milli:
		x.Verdict = VerdictCapacity
	case d.GPUs > 0 && x.Allowed < need:
		x.Verdict = VerdictQuota
	default:
		x.Verdict = VerdictFragmentation
	}
	return x
}

// scanHosts counts, per reason, the hosts that cannot take any task of the
// request, and the free GPUs it could use. O(hosts × groups), plus the
// GPUs of hosts checked for shares and MIG slots.
func (pl *policy) scanHosts(x *Explanation, d Demand) {
	e := &pl.e
	c, l, r := e.c, e.l, e.r
	e.newEpoch()
	e.s = scope{lv: c.LevelCluster(), dom: c.Root(), fabric: topology.NoDomain, hi: topology.HostID(c.NumHosts())}
	x.Hosts = c.NumHosts()
	x.Usable, x.Allowed = 0, 0
	gpuTasks := d.Milli > 0
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		free := l.HostFreeGPUs(h)
		worst := reasonNone // the reason of the group that got furthest
		fits := false
		usable, allowed := false, false
		for i := range r.Groups {
			g := &r.Groups[i]
			why := e.hostReason(h, g)
			if why > ReasonHealth || why == reasonNone {
				usable = usable || g.Kind != TaskCPU
				if why != ReasonQuota {
					allowed = allowed || g.Kind != TaskCPU
				}
			}
			if why == reasonNone {
				if e.gpuFits(h, g) {
					fits = true
					break
				}
				why = ReasonGPU
			}
			if worst == reasonNone || why > worst {
				worst = why
			}
		}
		if usable && gpuTasks {
			x.Usable += free
			if allowed {
				x.Allowed += free
			}
		}
		if !fits && worst != reasonNone {
			x.Excluded[worst]++
		}
	}
	if !gpuTasks {
		x.Usable, x.Allowed = x.FreeGPUs, x.FreeGPUs
	}
}

// gpuFits reports whether h has the GPUs (free, share or MIG slot) for one
// task of g.
func (e *engine) gpuFits(h topology.HostID, g *Group) bool {
	switch g.Kind {
	case TaskWhole:
		return e.l.HostFreeGPUs(h) >= g.GPUs && e.wholeAvail(h).count() >= g.GPUs
	case TaskShare:
		first, n := e.c.HostGPUs(h)
		for i := 0; i < n; i++ {
			if f, _ := e.shareFree(first + topology.GPUID(i)); f >= g.Milli {
				return true
			}
		}
		return false
	case TaskMIG:
		m := e.c.HostModel(h)
		first, n := e.c.HostGPUs(h)
		for i := 0; i < n; i++ {
			if mask, ok := e.migSlots(first + topology.GPUID(i)); ok {
				if st, _ := migStart(e.c.Model(m), g.mig[m], mask); st >= 0 {
					return true
				}
			}
		}
		return false
	}
	return true
}

// countTooSmall counts the domains at lv with fewer than need free GPUs,
// walking the ledger's index over those with enough: O(log domains + those
// domains).
func (pl *policy) countTooSmall(x *Explanation, lv topology.Level, need int) {
	l := pl.e.l
	enough := 0
	if lv == topology.LevelHost {
		free, after := need, topology.NoHost
		for {
			h, f, ok := l.NextHost(pl.e.c.Root(), topology.NoModel, free, after)
			if !ok {
				break
			}
			enough++
			free, after = f, h
		}
	} else {
		free, after := need, topology.NoDomain
		for {
			d, f, ok := l.NextDomain(lv, free, after)
			if !ok {
				break
			}
			enough++
			free, after = f, d
		}
	}
	x.TooSmall = x.Domains - enough
}

// census is a summary of the hosts of a ledger at one Generation, per
// accelerator model: how many hosts, how many unhealthy, and the healthy
// ones by free GPUs. One scan builds it; every explanation on the same
// state reuses it (a scheduling cycle explains many pending requests
// against one state).
type census struct {
	l     *topology.Ledger
	gen   uint64
	hosts []int     // by model, NoModel last
	sick  []int     // by model: hosts not healthy
	free  []int     // by model: free GPUs on healthy hosts
	hist  [][]int32 // by model and free GPUs: healthy hosts
}

func (cs *census) refresh(l *topology.Ledger) {
	if cs.l == l && cs.gen == l.Generation() && cs.hosts != nil {
		return
	}
	c := l.Cluster()
	nm := len(c.Models()) + 1
	cs.l, cs.gen = l, l.Generation()
	if len(cs.hosts) != nm {
		cs.hosts = make([]int, nm)
		cs.sick = make([]int, nm)
		cs.free = make([]int, nm)
		cs.hist = make([][]int32, nm)
		for m := range cs.hist {
			cs.hist[m] = make([]int32, topology.MaxGPUsPerHost+1)
		}
	}
	clear(cs.hosts)
	clear(cs.sick)
	clear(cs.free)
	for m := range cs.hist {
		clear(cs.hist[m])
	}
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		m := int(c.HostModel(h))
		if m < 0 {
			m = nm - 1
		}
		cs.hosts[m]++
		if l.HostHealth(h) != topology.Healthy {
			cs.sick[m]++
			continue
		}
		f := l.HostFreeGPUs(h)
		cs.free[m] += f
		cs.hist[m][f]++
	}
}

// censusFits reports whether explanations for r can be answered from the
// census: whole-GPU tasks only, no CPU or memory demand, no filters.
func (pl *policy) censusFits(r *Request) bool {
	if r.AllowHost != nil || r.AllowGPU != nil {
		return false
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Kind != TaskWhole || g.CPUMilli > 0 || g.MemoryMiB > 0 {
			return false
		}
	}
	return true
}

// fromCensus fills the host counts of x from the census: hosts of models
// no group accepts (and hosts without GPUs) count as model, unhealthy hosts
// as health, and healthy hosts with fewer free GPUs than the smallest task
// that accepts their model as gpu.
func (pl *policy) fromCensus(x *Explanation) {
	e := &pl.e
	c, r := e.c, e.r
	cs := &pl.census
	cs.refresh(e.l)
	x.Hosts = c.NumHosts()
	x.Usable, x.Allowed = 0, 0
	for m := range cs.hosts {
		kmin := 0
		if m < len(c.Models()) {
			for i := range r.Groups {
				if g := &r.Groups[i]; g.Accepts(topology.ModelID(m)) && (kmin == 0 || g.GPUs < kmin) {
					kmin = g.GPUs
				}
			}
		}
		if kmin == 0 {
			x.Excluded[ReasonModel] += cs.hosts[m]
			continue
		}
		x.Excluded[ReasonHealth] += cs.sick[m]
		x.Usable += cs.free[m]
		for f := 0; f < kmin && f < len(cs.hist[m]); f++ {
			x.Excluded[ReasonGPU] += int(cs.hist[m][f])
		}
	}
	x.Allowed = x.Usable
}
