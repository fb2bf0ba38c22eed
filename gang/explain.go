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
	// acceptable model, on healthy hosts) for the gang, wherever they are;
	// or (Explanation.Limit ReasonCPU or ReasonMemory) no host the request
	// may use has the free CPU or memory for one task of some group, or
	// the free CPU or memory of those hosts, counted in whole tasks host
	// by host, holds fewer tasks than the gang needs (Explanation.Room).
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
	// 256-GPU ToR, or more GPUs than the cluster); or one task needs more
	// GPUs, CPU or memory (Explanation.Limit) than any host it may run on
	// has at all (a task is always on one host).
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
	// Limit is the resource the verdict is about: ReasonGPU, or for
	// VerdictTooLarge and VerdictCapacity caused by one task group,
	// ReasonCPU or ReasonMemory.
	Limit Reason
	// Group is the index of the task group whose one task makes the
	// verdict (a task larger than any host; a task no host has the free
	// CPU or memory for), or -1 when the gang as a whole does. TaskNeeds
	// is what one task of it needs of Limit, and HostHas the most that any
	// host it may run on has (for VerdictTooLarge: in all; for
	// VerdictCapacity: free, among the hosts with enough of the other
	// resource when there are any), in GPUs, milli-CPU or MiB.
	Group              int
	TaskNeeds, HostHas int64
	// TaskModels, for VerdictTooLarge by one task group, names the GPU
	// models the group accepts (joined by " or ") when it does not
	// accept every model of the cluster's hosts: HostHas is then the
	// most one host of those models has ("the largest GB200 host has 4
	// GPUs" on a cluster whose H100 hosts have 8). Empty otherwise.
	TaskModels string
	// Room is, for VerdictCapacity by CPU or memory found by counting,
	// how many tasks the free CPU and memory of the hosts the request may
	// use hold, host by host: of Group (whose Min tasks it needs), or,
	// when Group is -1, of the gang at its smallest per-task CPU and
	// memory (TaskNeeds is then that smallest demand of Limit): fewer than
	// RoomNeeds, the group's Min or the gang's Tasks. HostHas is then the
	// most of Limit one such host has free. Room and RoomNeeds are -1 for
	// every other explanation.
	Room, RoomNeeds int
	// ShapeTask, ShapeNeed, ShapeModels, ShapeHas, ShapeMost and
	// ShapeFree explain a VerdictCapacity by host shape, on a cluster of
	// several GPU models: a group of the gang needs ShapeNeed GPUs in
	// tasks of ShapeTask whole GPUs; the hosts whose model can hold one
	// of its tasks (ShapeModels, their names joined by " or ": the group
	// accepts the model and the model's largest host has ShapeTask GPUs)
	// have ShapeHas free GPUs in all, fewer than ShapeNeed, ShapeMost the
	// most on one host; the other ShapeFree free GPUs are on hosts whose
	// shape (ShapeBySize: too few GPUs per host for such a task) or model
	// (ShapeByModel: the group does not accept it) rules its tasks out:
	// no packing makes room there. ShapeTask is 0 for every other
	// explanation.
	ShapeTask, ShapeNeed, ShapeHas, ShapeMost, ShapeFree int
	ShapeModels                                          string
	ShapeBySize, ShapeByModel                            bool
	// FragTask, FragModels, FragHas, FragMost and FragFree explain a
	// VerdictFragmentation on a cluster of several GPU models where some
	// free GPUs are on hosts that cannot hold a task of the gang: the
	// hosts whose model can hold a task of FragTask whole GPUs
	// (FragModels, as ShapeModels) have FragHas free GPUs, enough in all
	// but at most FragMost on one host; the other FragFree are on hosts
	// ruled out by shape or model (ShapeBySize, ShapeByModel say which),
	// so the cluster's free count overstates what packing could give.
	// FragTask is 0 for every other explanation.
	FragTask, FragHas, FragMost, FragFree int
	FragModels                            string
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
	if x.ShapeTask > 0 && x.Verdict == VerdictCapacity {
		b.WriteString("; " + x.shapeClause() + ": " + x.Verdict.String())
		return b.String()
	} else if x.Room >= 0 && x.Verdict == VerdictCapacity {
		b.WriteString("; " + x.roomClause())
	} else if x.Group >= 0 && (x.Verdict == VerdictTooLarge || x.Verdict == VerdictCapacity) {
		b.WriteString("; " + x.taskClause())
	} else if x.Verdict == VerdictTooLarge && (x.LevelName == "cluster" || x.LevelName == "") {
		// Larger than the whole cluster: nothing more to say.
		b.WriteString("; the cluster has " + plural(x.TotalGPUs, "GPU") + ": " + x.Verdict.String())
		return b.String()
	} else if x.Verdict == VerdictTooLarge && x.Largest > 0 {
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
	if x.FragTask > 0 && x.Verdict == VerdictFragmentation {
		b.WriteString("; " + x.FragModels + " hosts have " + plural(x.FragHas, "free GPU") + ", at most " + strconv.Itoa(x.FragMost) + " on one; " +
			x.elsewhere(x.FragFree, x.FragTask))
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

// taskClause says what one task of x.Group needs and what the hosts have:
// "a task needs 9 GPUs, the largest host has 8", "no host has 60 cores
// free for a task (most: 57)".
func (x *Explanation) taskClause() string {
	need, have := x.amount(x.TaskNeeds), x.amount(x.HostHas)
	if x.Verdict == VerdictTooLarge {
		host := "host"
		if x.TaskModels != "" {
			host = x.TaskModels + " host"
		}
		return "a task needs " + need + ", the largest " + host + " has " + have
	}
	return "no host has " + need + " free for a task (most: " + have + ")"
}

// shapeClause says which hosts could hold the gang's tasks and where the
// free GPUs are instead: "no H100 host has 8 free GPUs; 144 free GPUs
// are on hosts whose shape cannot hold an 8-GPU task".
func (x *Explanation) shapeClause() string {
	models := x.ShapeModels
	var s string
	if x.ShapeMost < x.ShapeTask {
		s = "no " + models + " host has " + strconv.Itoa(x.ShapeTask) + " free GPUs"
	} else {
		s = models + " hosts have " + plural(x.ShapeHas, "free GPU") + " of the " + strconv.Itoa(x.ShapeNeed) + " needed"
	}
	return s + "; " + x.elsewhere(x.ShapeFree, x.ShapeTask)
}

// elsewhere says where the free GPUs no task of task GPUs can use are:
// "144 free GPUs are on hosts whose shape cannot hold an 8-GPU task".
func (x *Explanation) elsewhere(free, task int) string {
	are := " are"
	if free == 1 {
		are = " is"
	}
	s := plural(free, "free GPU") + are + " on hosts "
	if !x.ShapeBySize {
		return s + "of models the task does not accept"
	}
	art := "a"
	if t := strconv.Itoa(task); t[0] == '8' || t == "11" || t == "18" {
		art = "an"
	}
	whose := "whose shape"
	if x.ShapeByModel {
		whose = "whose model or shape"
	}
	return s + whose + " cannot hold " + art + " " + strconv.Itoa(task) + "-GPU task"
}

// roomClause says how many tasks the hosts' free CPU or memory holds:
// "free cores hold 2 of the 3 tasks of group 0, 60 cores each (most free
// on a host: 62 cores)".
func (x *Explanation) roomClause() string {
	what := "free cores"
	if x.Limit == ReasonMemory {
		what = "free memory"
	}
	s := what + " hold " + strconv.Itoa(x.Room) + " of the " + plural(x.RoomNeeds, "task")
	if x.Group >= 0 {
		s += " of group " + strconv.Itoa(x.Group) + ", "
	} else {
		s += ", at least "
	}
	return s + x.amount(x.TaskNeeds) + " each (most free on a host: " + x.amount(x.HostHas) + ")"
}

// amount renders n units of x.Limit.
func (x *Explanation) amount(n int64) string {
	switch x.Limit {
	case ReasonCPU:
		return milliGPUs(n) + " cores"
	case ReasonMemory:
		return strconv.FormatInt(n, 10) + " MiB memory"
	}
	return plural(int(n), "GPU")
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
		Limit:       ReasonGPU, Group: -1, Room: -1, RoomNeeds: -1,
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
	// So is a task larger than every host it may run on: O(groups × models).
	taskTooLarge := !tooLarge && pl.taskTooLarge(x)
	scanned := false
	if full && !tooLarge {
		if !taskTooLarge && pl.censusFits(r) {
			pl.fromCensus(x)
		} else {
			pl.scanHosts(x, d)
			scanned = true
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
	case tooLarge, taskTooLarge:
		x.Verdict = VerdictTooLarge
	case d.GPUs > 0 && x.Usable < need, d.GPUs == 0 && l.FreeMilli(root) < d.Milli:
		x.Verdict = VerdictCapacity
	case d.GPUs > 0 && x.Allowed < need:
		x.Verdict = VerdictQuota
	case scanned && pl.resourceShort(x):
		x.Verdict = VerdictCapacity
	case scanned && pl.roomShort(x, d):
		x.Verdict = VerdictCapacity
	case d.GPUs > 0 && pl.shapeShort(x):
		x.Verdict = VerdictCapacity
	default:
		x.Verdict = VerdictFragmentation
		if d.GPUs > 0 {
			pl.shapeFrag(x)
		}
	}
	return x
}

// shapeShort reports whether some group of the gang whose tasks take
// whole GPUs (the first in the request's order) is short of GPUs on the
// hosts that can hold one of its tasks (the group accepts the host's
// model, and the model's largest host has the group's GPUs per task),
// while other hosts have GPUs free: on a cluster of several models, free
// GPUs on hosts too small for a task (4-GPU trays for an 8-GPU task) are
// not fragmentation. If so it fills x's Shape fields. It reads the
// ledger's per-model host index only: the capable models' hosts with
// free GPUs are summed until the group's need is reached, so
// O(groups × models × (log hosts + GPUs needed)).
func (pl *policy) shapeShort(x *Explanation) bool {
	e := &pl.e
	return e.shapeGroups(func(g *Group, capable func(m int) bool, bySize, byModel bool) bool {
		need := g.Min * g.GPUs
		has, most := e.freeOn(capable, need)
		if has >= need || x.FreeGPUs-has <= 0 {
			return false
		}
		x.ShapeTask, x.ShapeNeed, x.ShapeHas, x.ShapeMost, x.ShapeFree = g.GPUs, need, has, most, x.FreeGPUs-has
		x.ShapeBySize, x.ShapeByModel = bySize, byModel
		x.ShapeModels = e.modelNames(capable)
		return true
	})
}

// shapeGroups calls fn, in the request's order, for each group whose
// tasks take whole GPUs and which some hosts' shape or model rules out
// (shapeOf), until fn returns true; it reports whether one did.
func (e *engine) shapeGroups(fn func(g *Group, capable func(m int) bool, bySize, byModel bool) bool) bool {
	for i := range e.r.Groups {
		g := &e.r.Groups[i]
		if g.Min == 0 || g.Kind != TaskWhole {
			continue
		}
		if capable, bySize, byModel := e.shapeOf(g); capable != nil && fn(g, capable, bySize, byModel) {
			return true
		}
	}
	return false
}

// freeOn sums the free GPUs on the hosts of the models capable says yes
// to, stopping once the sum reaches limit (none when limit < 0), and
// returns it with the most free on one host. It reads the ledger's
// per-model host index: O(models × (log hosts + hosts visited)).
func (e *engine) freeOn(capable func(m int) bool, limit int) (has, most int) {
	for m := range e.c.Models() {
		if !capable(m) {
			continue
		}
		e.l.AscendHosts(e.c.Root(), topology.ModelID(m), 1, func(_ topology.HostID, free int) bool {
			has += free
			most = max(most, free)
			return limit < 0 || has < limit
		})
		if limit >= 0 && has >= limit {
			break
		}
	}
	return has, most
}

// shapeOf says which models' hosts can hold a task of whole-GPU group g
// (capable: g accepts the model and its largest host has g's GPUs per
// task) and why others cannot (bySize: too small; byModel: a model g
// does not accept). capable is nil unless some model with hosts is
// capable and some other is not: then shape is not what limits g.
func (e *engine) shapeOf(g *Group) (capable func(m int) bool, bySize, byModel bool) {
	capable = func(m int) bool {
		return e.hostMax[m].hosts > 0 && g.Accepts(topology.ModelID(m)) && e.hostMax[m].gpus >= g.GPUs
	}
	some := false
	for m := range e.c.Models() {
		switch {
		case e.hostMax[m].hosts == 0:
		case capable(m):
			some = true
		case g.Accepts(topology.ModelID(m)):
			bySize = true
		default:
			byModel = true
		}
	}
	if !some || !bySize && !byModel {
		return nil, false, false
	}
	return capable, bySize, byModel
}

// modelNames joins the names of the models capable says yes to with
// " or ".
func (e *engine) modelNames(capable func(m int) bool) string {
	var names string
	for m, a := range e.c.Models() {
		if capable(m) {
			if names != "" {
				names += " or "
			}
			names += a.Model
		}
	}
	return names
}

// shapeFrag fills x's Frag fields for a fragmentation verdict when the
// first whole-GPU group of the gang cannot use some hosts with free GPUs
// (too small for its tasks, or of a model it does not accept): the free
// GPUs of the hosts that can hold its tasks, the most on one, and the
// rest, so that the reason does not count GPUs no packing could give it.
// It walks the capable models' hosts with free GPUs: O(models × (log
// hosts + such hosts)), on clusters of several models only.
func (pl *policy) shapeFrag(x *Explanation) {
	e := &pl.e
	e.shapeGroups(func(g *Group, capable func(m int) bool, bySize, byModel bool) bool {
		has, most := e.freeOn(capable, -1)
		if x.FreeGPUs-has > 0 {
			x.FragTask, x.FragHas, x.FragMost, x.FragFree = g.GPUs, has, most, x.FreeGPUs-has
			x.ShapeBySize, x.ShapeByModel = bySize, byModel
			x.FragModels = e.modelNames(capable)
		}
		return true // the first such group only
	})
}

// taskTooLarge reports whether one task of some group (with Min > 0)
// needs more GPUs, CPU or memory than any host of an acceptable model has
// in all, and if so fills x's Limit, Group, TaskNeeds and HostHas: GPUs
// before CPU before memory, then the first group in the request's order,
// so that the Limit does not depend on the order of the groups. Groups no
// host's model accepts are left to the host counts (ReasonModel).
func (pl *policy) taskTooLarge(x *Explanation) bool {
	e := &pl.e
	for _, lim := range [...]Reason{ReasonGPU, ReasonCPU, ReasonMemory} {
		for i := range e.r.Groups {
			g := &e.r.Groups[i]
			if g.Min == 0 {
				continue
			}
			most := e.largestHost(g)
			var need, have int64
			switch lim {
			case ReasonGPU:
				if g.Kind != TaskWhole {
					continue
				}
				need, have = int64(g.GPUs), int64(most.gpus)
			case ReasonCPU:
				need, have = g.CPUMilli, most.cpu
			case ReasonMemory:
				need, have = g.MemoryMiB, most.mem
			}
			if most.hosts > 0 && need > have {
				x.Limit, x.Group, x.TaskNeeds, x.HostHas = lim, i, need, have
				x.TaskModels = e.acceptedModels(g)
				return true
			}
		}
	}
	return false
}

// acceptedModels names the GPU models with hosts that g accepts, joined
// by " or ", when g does not accept every model with hosts; "" when it
// does (or takes no GPU). O(models).
func (e *engine) acceptedModels(g *Group) string {
	if g.Kind == TaskCPU {
		return ""
	}
	models := e.c.Models()
	names, all := "", true
	for m := range models {
		if m >= len(e.hostMax) || e.hostMax[m].hosts == 0 {
			continue
		}
		if !g.Accepts(topology.ModelID(m)) {
			all = false
			continue
		}
		if names != "" {
			names += " or "
		}
		names += models[m].Model
	}
	if all {
		return ""
	}
	return names
}

// largestHost returns the most GPUs, CPU and memory one host that may
// take a task of g has (each on its own), and how many such hosts there
// are: hosts of an accepted model, or every host for CPU-only tasks.
func (e *engine) largestHost(g *Group) hostMax {
	var most hostMax
	for m := range e.hostMax {
		hm := &e.hostMax[m]
		if hm.hosts == 0 || g.Kind != TaskCPU && (m == len(e.hostMax)-1 || !g.Accepts(topology.ModelID(m))) {
			continue
		}
		most.hosts += hm.hosts
		most.gpus = max(most.gpus, hm.gpus)
		most.cpu = max(most.cpu, hm.cpu)
		most.mem = max(most.mem, hm.mem)
	}
	return most
}

// resourceShort reports whether some group (with Min > 0) has no host
// that can take one of its tasks because every host the request may use
// for it (acceptable model, healthy, allowed) lacks the free CPU or
// memory for one task, and fills x's Limit, Group, TaskNeeds and HostHas:
// the limit is CPU when no such host has the cores free, memory when none
// has the memory, and CPU when each lacks one or the other (HostHas is
// then the most free CPU among the hosts with the memory). Groups limited
// by CPU come before those limited by memory, then the request's order,
// so the Limit does not depend on the order of the groups. It reads the
// per-group counts scanHosts left.
func (pl *policy) resourceShort(x *Explanation) bool {
	r := pl.e.r
	for _, lim := range [...]Reason{ReasonCPU, ReasonMemory} {
		for i := range r.Groups {
			g := &r.Groups[i]
			st := &pl.gstat[i]
			if g.Min == 0 || st.fits || st.short[ReasonGPU] > 0 || st.short[ReasonCPU]+st.short[ReasonMemory] == 0 {
				continue
			}
			gl, need, have := ReasonCPU, g.CPUMilli, st.mostCPU
			switch {
			case st.mostCPU < g.CPUMilli:
			case st.mostMem < g.MemoryMiB:
				gl, need, have = ReasonMemory, g.MemoryMiB, st.mostMem
			default:
				have = st.mostCPUWithMem
			}
			if gl == lim {
				x.Limit, x.Group, x.TaskNeeds, x.HostHas = lim, i, need, have
				return true
			}
		}
	}
	return false
}

// roomShort reports whether the free CPU and memory of the hosts the
// request may use, counted in whole tasks host by host, hold fewer tasks
// than the gang needs: for some group (with Min > 0 and a CPU or memory
// demand), Σ min(⌊free CPU / task CPU⌋, ⌊free memory / task memory⌋)
// over the hosts it may use (acceptable model, healthy, allowed) below
// its Min; or, over the hosts some group may use, the same sum at the
// gang's smallest per-task CPU and memory below its Min tasks. The limit
// is CPU when the CPU count alone falls short, else memory when the
// memory count does, else CPU; groups limited by CPU come before those
// by memory, then the request's order, then the gang as a whole. It reads
// the counts scanHosts left, and fills x's Limit, Group, TaskNeeds,
// HostHas and Room.
func (pl *policy) roomShort(x *Explanation, d Demand) bool {
	r := pl.e.r
	for _, lim := range [...]Reason{ReasonCPU, ReasonMemory} {
		for i := range r.Groups {
			g := &r.Groups[i]
			st, rm := &pl.gstat[i], &pl.rooms[i]
			if g.Min == 0 || g.CPUMilli == 0 && g.MemoryMiB == 0 || rm.hosts == 0 || rm.both >= g.Min {
				continue
			}
			gl, need, have := ReasonCPU, g.CPUMilli, st.mostCPU
			if rm.cpu >= g.Min && rm.mem < g.Min {
				gl, need, have = ReasonMemory, g.MemoryMiB, st.mostMem
			}
			if gl == lim {
				x.Limit, x.Group, x.TaskNeeds, x.HostHas, x.Room, x.RoomNeeds = lim, i, need, have, rm.both, g.Min
				return true
			}
		}
	}
	j := &pl.joint
	if j.minCPU == 0 && j.minMem == 0 || j.room.hosts == 0 || j.room.both >= d.Tasks {
		return false
	}
	x.Limit, x.TaskNeeds, x.HostHas = ReasonCPU, j.minCPU, j.mostCPU
	if j.room.cpu >= d.Tasks && j.room.mem < d.Tasks {
		x.Limit, x.TaskNeeds, x.HostHas = ReasonMemory, j.minMem, j.mostMem
	}
	x.Room, x.RoomNeeds = j.room.both, d.Tasks
	return true
}

// room counts tasks the free CPU and memory of some hosts hold, host by
// host: by CPU alone, by memory alone, and by both; and how many hosts.
type room struct{ hosts, cpu, mem, both int }

// add adds host h's room for tasks of cpu milli-CPU and mem MiB, each host
// counting at most most tasks (a missing demand counts as most).
func (rm *room) add(l *topology.Ledger, h topology.HostID, cpu, mem int64, most int) {
	kc, km := most, most
	if cpu > 0 {
		kc = int(min(l.CPUFree(h)/cpu, int64(most)))
	}
	if mem > 0 {
		km = int(min(l.MemoryFree(h)/mem, int64(most)))
	}
	rm.hosts++
	rm.cpu += kc
	rm.mem += km
	rm.both += min(kc, km)
}

// jointRoom is scanHosts' count at the gang's smallest per-task CPU and
// memory over the hosts some group may use, for roomShort.
type jointRoom struct {
	minCPU, minMem   int64
	mostCPU, mostMem int64
	room             room
}

// groupStat is what scanHosts finds for one task group: whether some host
// can take one of its tasks, how many hosts the request may use for it
// fall short by CPU, memory or GPUs, the most free CPU and memory among
// those hosts, and the most free CPU among those with the task's memory.
// (The room their free CPU and memory have for its tasks is in
// policy.rooms.)
type groupStat struct {
	fits             bool
	short            [NumReasons]int
	mostCPU, mostMem int64
	mostCPUWithMem   int64
}

// scanHosts counts, per reason, the hosts that cannot take any task of the
// request, and the free GPUs it could use; and per group, what keeps each
// host from taking one of its tasks (pl.gstat). Every group is looked at
// on every host, so the counts do not depend on the order of the groups.
// O(hosts × groups), plus the GPUs of hosts checked for shares and MIG
// slots.
func (pl *policy) scanHosts(x *Explanation, d Demand) {
	e := &pl.e
	c, l, r := e.c, e.l, e.r
	e.newEpoch()
	e.s = scope{lv: c.LevelCluster(), dom: c.Root(), fabric: topology.NoDomain, hosts: c.DomainHostList(c.Root())}
	x.Hosts = len(e.s.hosts)
	x.Usable, x.Allowed = 0, 0
	gpuTasks := d.Milli > 0
	pl.gstat = pl.gstat[:0]
	pl.rooms = pl.rooms[:0]
	const huge = int64(1) << 62
	j := &pl.joint
	*j = jointRoom{minCPU: huge, minMem: huge}
	for i := range r.Groups {
		pl.gstat = append(pl.gstat, groupStat{})
		pl.rooms = append(pl.rooms, room{})
		if g := &r.Groups[i]; g.Min > 0 {
			j.minCPU, j.minMem = min(j.minCPU, g.CPUMilli), min(j.minMem, g.MemoryMiB)
		}
	}
	if j.minCPU == huge {
		j.minCPU, j.minMem = 0, 0
	}
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		free := l.HostFreeGPUs(h)
		worst := reasonNone // the reason of the group that got furthest
		fits := false
		usable, allowed, mayUse := false, false, false
		for i := range r.Groups {
			g := &r.Groups[i]
			st := &pl.gstat[i]
			why := e.hostReason(h, g)
			if why > ReasonHealth || why == reasonNone {
				usable = usable || g.Kind != TaskCPU
				if why != ReasonQuota {
					allowed = allowed || g.Kind != TaskCPU
					cpu, mem := l.CPUFree(h), l.MemoryFree(h)
					st.mostCPU = max(st.mostCPU, cpu)
					st.mostMem = max(st.mostMem, mem)
					if mem >= g.MemoryMiB {
						st.mostCPUWithMem = max(st.mostCPUWithMem, cpu)
					}
					if g.Min > 0 {
						mayUse = true
						if rm := &pl.rooms[i]; rm.both < g.Min { // else it is not short
							rm.add(l, h, g.CPUMilli, g.MemoryMiB, g.Min)
						}
					}
				}
			}
			if why == reasonNone {
				if fits && st.fits {
					continue // nothing left to learn from this group here
				}
				if e.gpuFits(h, g) {
					fits = true
					st.fits = true
					continue
				}
				why = ReasonGPU
			}
			if why > ReasonQuota {
				st.short[why]++
			}
			if worst == reasonNone || why > worst {
				worst = why
			}
		}
		if mayUse && j.room.both < d.Tasks { // else it is not short
			j.mostCPU = max(j.mostCPU, l.CPUFree(h))
			j.mostMem = max(j.mostMem, l.MemoryFree(h))
			j.room.add(l, h, j.minCPU, j.minMem, d.Tasks)
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
		if e.l.HostFreeGPUs(h) < g.GPUs {
			return false
		}
		if e.r.AllowGPU == nil && e.s.fabric == topology.NoDomain && !e.isTouched(h) {
			return true // every free GPU of h is usable: the ledger's count says it
		}
		return e.wholeAvail(h).count() >= g.GPUs
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
		if !l.HostUsable(h) {
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
	if r.AllowHost != nil || r.AllowGPU != nil || r.groupFilters() {
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
	x.Hosts = len(c.DomainHostList(c.Root()))
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
