package gang

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TaskKind says what one task of a group takes from a GPU.
type TaskKind uint8

// Task kinds.
const (
	TaskCPU   TaskKind = iota // no GPU: CPU and memory only
	TaskWhole                 // GPUs whole GPUs, exclusively
	TaskShare                 // Milli milli-GPU of one GPU in shared mode
	TaskMIG                   // one MIG instance of MIGProfile
)

var taskKindNames = [...]string{"cpu", "whole", "share", "mig"}

// String returns "cpu", "whole", "share" or "mig".
func (k TaskKind) String() string {
	if int(k) < len(taskKindNames) {
		return taskKindNames[k]
	}
	return "TaskKind(" + strconv.Itoa(int(k)) + ")"
}

// Group is one task group of a Request, resolved against a cluster: every
// task of the group needs the same resources on one host.
type Group struct {
	// Name is the group's name from the job (may be empty).
	Name string
	// Count is the number of tasks wanted; Min (1..Count) the number that
	// must place. Min < Count makes the group elastic.
	Count, Min int
	// Kind says what each task takes from a GPU.
	Kind TaskKind
	// GPUs is the number of whole GPUs per task (TaskWhole).
	GPUs int
	// Milli is the share of one GPU per task (TaskShare), 1..999.
	Milli int
	// MIGProfile names the MIG profile (TaskMIG).
	MIGProfile string
	// CPUMilli and MemoryMiB are taken from the task's host.
	CPUMilli  int64
	MemoryMiB int64
	// Models lists the acceptable accelerator models in ascending ID order;
	// nil accepts any. For MIG tasks it holds only models that have the
	// profile.
	Models []topology.ModelID
	// AllowHost, if non-nil, must return true for a host to take a task of
	// this group, beside the Request's AllowHost (which applies to every
	// group): the caller's per-group restriction, such as the node
	// selectors of the members of one Kubernetes gang that differ. Same
	// rules as Request.AllowHost; NewRequest leaves it nil, a caller sets
	// it on a copy of the Request's Groups. Every placer of the package
	// honours it (record refuses a task elsewhere).
	AllowHost func(topology.HostID) bool

	modelOK  []bool                  // by ModelID; nil: any
	mig      []topology.MIGProfileID // by ModelID: the profile on that model, or -1
	gpuMilli int64                   // GPU capacity per task, milli (MIG: the smallest across models)
}

// AllowsHost reports whether g's own AllowHost (nil: every host) lets a
// task of g use host h; the model and the Request's filter are checked
// apart (Accepts, Request.AllowHost).
func (g *Group) AllowsHost(h topology.HostID) bool {
	return g.AllowHost == nil || g.AllowHost(h)
}

// groupFilters reports whether some group of r has its own AllowHost.
func (r *Request) groupFilters() bool {
	for i := range r.Groups {
		if r.Groups[i].AllowHost != nil {
			return true
		}
	}
	return false
}

// Accepts reports whether a task of g may run on a host of model m.
// CPU-only tasks accept any host.
func (g *Group) Accepts(m topology.ModelID) bool {
	if g.Kind == TaskCPU {
		return true
	}
	if m == topology.NoModel {
		return false
	}
	return g.modelOK == nil || g.modelOK[m]
}

// Request is a gang resolved against one cluster: task groups placed all or
// nothing (down to each group's Min), topology constraints as Levels, a seed
// for randomised policies, and the caller's filters. Build it with
// NewRequest; a Request is read-only to placers and may be placed many
// times, on any ledger of its cluster. Do not modify Groups, Required or
// Preferred after NewRequest.
type Request struct {
	// ID is the job's ID.
	ID string
	// Groups are the task groups in the job's order.
	Groups []Group
	// Required lists the levels at which all tasks must share one domain,
	// innermost first. Preferred lists the levels at which they should,
	// innermost first; placers try them in that order and record in
	// Placement.Relaxed those they had to give up.
	Required  []topology.Level
	Preferred []topology.Level
	// Seed drives randomised policies (random); the same seed on the same
	// state gives the same placement.
	Seed uint64
	// AllowHost, if non-nil, must return true for a host to take any task
	// of this request: hosts held for other tenants' quota, reserved buddy
	// cells, cordoned hosts. Hosts it rejects count as ReasonQuota in
	// explanations. It must be deterministic and must not touch the ledger.
	AllowHost func(topology.HostID) bool
	// AllowGPU, if non-nil, must return true for a GPU to be used, with the
	// same rules as AllowHost.
	AllowGPU func(topology.GPUID) bool
	// FilterLabel names what AllowHost and AllowGPU stand for in
	// explanations ("quota" when empty): a Kubernetes host says "node
	// filters", a cell allocator "reserved cells".
	FilterLabel string
	// AllowDomain, if non-nil, must return true for a domain at a
	// placement level other than LevelHost to be tried as the gang's
	// domain: a caller that knows the gang did not place a moment ago
	// confines a what-if to the domains it changed (package preempt does,
	// after releasing victims). Rejected domains are skipped at O(1) each
	// and do not appear in explanations. Same rules as AllowHost.
	AllowDomain func(lv topology.Level, d topology.DomainID) bool
	// MaxPerHost, if positive, caps the tasks of the request (all groups
	// together) one placement puts on one host (workload.Job's
	// MaxTasksPerHost).
	MaxPerHost int

	c        *topology.Cluster
	within   topology.Level // innermost required tree level (LevelHost and up), or the cluster level
	fabric   bool           // LevelFabric is required
	order    []int          // group placement order: whole GPUs descending, MIG, shares, CPU-only
	alts     [][]int        // other orders tried when order fails (several groups): see altOrders
	simple   bool           // every group is whole-GPU or CPU-only
	tasks    int            // total Count
	minTasks int            // total Min
}

// Cluster returns the cluster the request was resolved against.
func (r *Request) Cluster() *topology.Cluster { return r.c }

// Tasks returns the number of tasks wanted (sum of Count).
func (r *Request) Tasks() int { return r.tasks }

// MinTasks returns the number of tasks that must place (sum of Min).
func (r *Request) MinTasks() int { return r.minTasks }

// Within returns the innermost required level, LevelFabric when an
// accelerator fabric domain is required, or the cluster level when nothing
// is.
func (r *Request) Within() topology.Level {
	if r.fabric {
		return topology.LevelFabric
	}
	return r.within
}

// Demand is what a number of tasks per group adds up to.
type Demand struct {
	Tasks int
	// GPUs counts whole GPUs (TaskWhole tasks only).
	GPUs int
	// Milli counts GPU capacity in milli-GPU: whole GPUs, shares and MIG
	// instances (at their smallest size).
	Milli int64
	// MaxGPUs is the largest whole-GPU demand of one task.
	MaxGPUs int
	// CPUMilli and MemoryMiB are the totals.
	CPUMilli  int64
	MemoryMiB int64
}

// MinDemand returns what the Min tasks of every group need.
func (r *Request) MinDemand() Demand { return r.demand(true) }

// FullDemand returns what Count tasks of every group need.
func (r *Request) FullDemand() Demand { return r.demand(false) }

func (r *Request) demand(min bool) Demand {
	var d Demand
	for i := range r.Groups {
		g := &r.Groups[i]
		n := g.Count
		if min {
			n = g.Min
		}
		d.Tasks += n
		if g.Kind == TaskWhole {
			d.GPUs += n * g.GPUs
			d.MaxGPUs = max(d.MaxGPUs, g.GPUs)
		}
		d.Milli += int64(n) * g.gpuMilli
		d.CPUMilli += int64(n) * g.CPUMilli
		d.MemoryMiB += int64(n) * g.MemoryMiB
	}
	return d
}

// NewRequest validates job and resolves it against cluster c: model names
// to ModelIDs, MIG profiles to each model's profile, level names to Levels.
// It returns a *workload.FieldError naming the field for a job no cluster
// could honour (see workload.Job.Validate) and for names c does not know:
// an unknown model ("groups[1].models[0]"), a MIG profile no acceptable
// model has ("groups[0].migProfile"), an unknown level
// ("topology[2].level"), a level both required and preferred. A request
// larger than the cluster is not an error: placers explain why it does not
// fit.
func NewRequest(c *topology.Cluster, job *workload.Job) (*Request, error) {
	if c == nil {
		panic("gang: NewRequest with a nil cluster")
	}
	if job == nil {
		return nil, &workload.FieldError{Field: "job", Msg: "nil job"}
	}
	if err := job.Validate(); err != nil {
		return nil, err
	}
	return newRequest(c, job, len(job.Groups) == 1)
}

// newRequest is NewRequest for a valid job; block: in one requestBlock
// (a job of one group).
func newRequest(c *topology.Cluster, job *workload.Job, block bool) (*Request, error) {
	bad := func(field, format string, args ...any) error {
		return &workload.FieldError{Job: job.ID, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	var r *Request
	if block {
		// Most jobs: the request, its group, its order and its one
		// constraint in one allocation, so that a placement's first reads
		// of them fall on neighbouring lines (see requestBlock).
		b := new(requestBlock)
		r = &b.r
		r.Groups, r.order = b.group[:1:1], b.order[:1:1]
		if len(job.Topology) == 1 {
			if job.Topology[0].Required {
				r.Required = b.levels[:0:1]
			} else {
				r.Preferred = b.levels[:0:1]
			}
		}
	} else {
		r = new(Request)
		r.Groups, r.order = make([]Group, len(job.Groups)), make([]int, len(job.Groups))
	}
	r.ID, r.c, r.within, r.MaxPerHost = job.ID, c, c.LevelCluster(), job.MaxTasksPerHost
	models := c.Models()
	for i := range job.Groups {
		jg := &job.Groups[i]
		p := "groups[" + strconv.Itoa(i) + "]"
		g := &r.Groups[i]
		*g = Group{
			Name: jg.Name, Count: jg.Count, Min: jg.Min(),
			GPUs: jg.GPUs, Milli: jg.GPUMilli, MIGProfile: jg.MIGProfile,
			CPUMilli: jg.CPUMilli, MemoryMiB: jg.MemoryMiB,
		}
		switch {
		case jg.GPUs > 0:
			g.Kind = TaskWhole
			g.gpuMilli = int64(jg.GPUs) * topology.MilliPerGPU
		case jg.GPUMilli > 0:
			g.Kind = TaskShare
			g.gpuMilli = int64(jg.GPUMilli)
		case jg.MIGProfile != "":
			g.Kind = TaskMIG
		default:
			g.Kind = TaskCPU
		}
		if len(jg.Models) > 0 {
			g.modelOK = make([]bool, len(models))
			for k, name := range jg.Models {
				m, ok := c.ModelByName(name)
				if !ok {
					return nil, bad(p+".models["+strconv.Itoa(k)+"]", "unknown model %q (cluster has: %s)", name, modelNames(c))
				}
				g.modelOK[m] = true
			}
		}
		if g.Kind == TaskMIG {
			g.mig = make([]topology.MIGProfileID, len(models))
			any := false
			named := g.modelOK // the job's Models (nil: any); read before the loop sets modelOK
			for m := range models {
				g.mig[m] = -1
				if named != nil && !named[m] {
					continue
				}
				id, ok := models[m].MIGProfileByName(jg.MIGProfile)
				if !ok {
					continue
				}
				if g.modelOK == nil {
					g.modelOK = make([]bool, len(models))
				}
				g.modelOK[m] = true
				g.mig[m] = id
				milli := int64(models[m].MIGProfiles[id].Milli)
				if !any || milli < g.gpuMilli {
					g.gpuMilli = milli
				}
				any = true
			}
			if !any {
				return nil, bad(p+".migProfile", "no acceptable model of the cluster has MIG profile %q", jg.MIGProfile)
			}
			// Models whose name matched but lack the profile are dropped.
			for m := range g.modelOK {
				if g.mig[m] < 0 {
					g.modelOK[m] = false
				}
			}
		}
		if g.modelOK != nil {
			for m, ok := range g.modelOK {
				if ok {
					g.Models = append(g.Models, topology.ModelID(m))
				}
			}
		}
		r.tasks += g.Count
		r.minTasks += g.Min
	}
	for i, con := range job.Topology {
		lv, ok := c.LevelByName(con.Level)
		if !ok {
			return nil, bad("topology["+strconv.Itoa(i)+"].level", "unknown level %q (cluster has: %s)", con.Level, levelNames(c))
		}
		if slices.Contains(r.Required, lv) || slices.Contains(r.Preferred, lv) {
			return nil, bad("topology["+strconv.Itoa(i)+"].level", "level %q named twice (as %q)", con.Level, c.LevelName(lv))
		}
		if con.Required {
			r.Required = append(r.Required, lv)
		} else {
			r.Preferred = append(r.Preferred, lv)
		}
	}
	slices.Sort(r.Required)
	slices.Sort(r.Preferred)
	for _, lv := range r.Required {
		if lv == topology.LevelFabric {
			r.fabric = true
		} else if lv < r.within {
			r.within = lv
		}
	}
	for i := range r.order {
		r.order[i] = i
	}
	slices.SortStableFunc(r.order, func(a, b int) int {
		ga, gb := &r.Groups[a], &r.Groups[b]
		if ka, kb := kindRank(ga.Kind), kindRank(gb.Kind); ka != kb {
			return ka - kb
		}
		return gb.GPUs - ga.GPUs
	})
	r.simple = true
	for i := range r.Groups {
		if k := r.Groups[i].Kind; k != TaskWhole && k != TaskCPU {
			r.simple = false
		}
	}
	r.alts = altOrders(r.Groups, r.order)
	return r, nil
}

// requestBlock is NewRequest's one allocation for a request of one group
// and at most one topology constraint (required or preferred). Each
// slice into it is capped at its own part, so that appending to one
// cannot write into another.
type requestBlock struct {
	r      Request
	order  [1]int
	levels [1]topology.Level
	group  [1]Group
}

// altOrders returns the group orders a placer tries, after order, when a
// gang of several groups does not fit in a domain the greedy way: the
// groups hungriest for CPU first, then for memory first (a launcher that
// needs most of a host's cores must choose its host before the workers
// take those cores), then order reversed (small and CPU-only tasks
// first). Orders equal to one already listed are dropped; nil for a
// single group.
func altOrders(groups []Group, order []int) [][]int {
	if len(groups) < 2 {
		return nil
	}
	var alts [][]int
	add := func(o []int) {
		if slices.Equal(o, order) {
			return
		}
		for _, a := range alts {
			if slices.Equal(a, o) {
				return
			}
		}
		alts = append(alts, o)
	}
	byCPU := slices.Clone(order)
	slices.SortStableFunc(byCPU, func(a, b int) int {
		ga, gb := &groups[a], &groups[b]
		return cmp.Or(cmp.Compare(gb.CPUMilli, ga.CPUMilli), cmp.Compare(gb.MemoryMiB, ga.MemoryMiB))
	})
	add(byCPU)
	byMem := slices.Clone(order)
	slices.SortStableFunc(byMem, func(a, b int) int {
		ga, gb := &groups[a], &groups[b]
		return cmp.Or(cmp.Compare(gb.MemoryMiB, ga.MemoryMiB), cmp.Compare(gb.CPUMilli, ga.CPUMilli))
	})
	add(byMem)
	rev := slices.Clone(order)
	slices.Reverse(rev)
	add(rev)
	return alts
}

// kindRank orders groups for placement: whole GPUs first (largest first),
// then MIG instances, shares, and CPU-only tasks, so the hardest tasks
// choose first.
func kindRank(k TaskKind) int {
	switch k {
	case TaskWhole:
		return 0
	case TaskMIG:
		return 1
	case TaskShare:
		return 2
	}
	return 3
}

func modelNames(c *topology.Cluster) string {
	var names []string
	for _, m := range c.Models() {
		names = append(names, m.Model)
	}
	if len(names) == 0 {
		return "no accelerators"
	}
	return strings.Join(names, ", ")
}

func levelNames(c *topology.Cluster) string {
	var names []string
	for lv := topology.Level(0); lv <= c.LevelCluster(); lv++ {
		names = append(names, c.LevelName(lv))
	}
	return strings.Join(names, ", ")
}
