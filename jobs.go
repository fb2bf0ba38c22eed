package gpusched

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// job is one live job. Its identity (spec, req, leaf, shape, demand) is
// set by newJob; the rest is in parts, each written only by the concern
// named on it.
type job struct {
	// Listing the waiting jobs reads, per row, reasonCycle and state, then
	// entry's first fields (ID, Ref, class), and reason only where
	// reasonCycle is the cycle's. The first five come first and fit in
	// 56 bytes, so that a row is one cache line: a job (over 512 bytes,
	// with pointers) is allocated after the runtime's 8-byte type header,
	// in a slot that starts a line (TestJobListingLine). With reason among
	// them, class would lie on the next line.
	//
	// reason is why it waits, set in cycle reasonCycle (cycleState);
	// state is written by the job transitions (below).
	reasonCycle uint64
	state       queue.State
	entry       queue.Entry // its entry in its leaf's pending index (package queue)
	reason      *Reason

	spec   workload.Job // as submitted; Priority as last set (SetPriority), Queue as last moved (Reconfigure)
	req    *gang.Request
	leaf   *queue.Leaf
	shape  string // its class: see shapeKey
	demand queue.Vector
	// nom is read first when a candidate is evaluated: it sits on the line
	// of the fields evaluate reads next (shape, demand), not on a line of
	// its own further down.
	nom jobNomination // its nomination and victims (nominations)

	// Written by the job transitions (events.go: take, start, release,
	// back, end, rejected), hosts by jobTable.index, leaf (after newJob) by
	// jobTable.moveLeaf. Invariant: placement, txn, charged and hosts are
	// set exactly while state (above) is Holding(); end and
	// endKnown are then its estimated end (the jobTable's ends order).
	// req.Seed and entry.Seq are set once by jobTable.add; nothing else
	// writes req (a candidate's model filter travels as a value:
	// cycleState.request).
	placement   *gang.Placement
	txn         gang.Txn
	charged     queue.Vector // what admission charged (from the placement); may be demand's slice itself (admit), so neither is written in place
	hosts       []topology.HostID
	hostOne     [1]topology.HostID // hosts' array for a one-claim placement (jobTable.index)
	admitted    time.Time
	started     time.Time
	end         time.Time // estimated end while holding; zero: unknown
	endKnown    bool
	preemptions int // times reported Preempted

	models jobModels   // its model filters (admission.models)
	vic    jobVictim   // its filing as a possible victim (victimIndex)
	rec    jobRecovery // checkpoints, progress, restarts (recovery)
	el     jobElastic  // its shrink or grow in flight, size before shrinking (elastic)
	noPlan noPlanMemo  // the PlanPreemptor's last failed plan for it
	ref    jobRefusal  // its refused stop, if any (evictionRefusals)
}

// jobTable holds the live jobs and the indexes of the holding ones. Its
// methods are the only writers of its fields.
type jobTable struct {
	byID map[string]*job // every live job
	// ends orders the holding jobs by estimated end (known first, then by
	// submission). Invariant: exactly the jobs with state.Holding(), each
	// filed under endKeyOf its current end/endKnown. Its keys carry what
	// the order compares, so that filing a job reads no other job (at
	// 100k GPUs, a hundred thousand jobs scattered in memory).
	ends endOrder
	// onHost lists the holding jobs with a claim on each host. Invariant:
	// j is in onHost[h] iff it holds and h is in j.hosts.
	onHost [][]*job
	seq    uint64 // the last submission sequence number handed out
	seed   uint64 // Config.Seed
}

func newJobTable(c *topology.Cluster, seed uint64) jobTable {
	t := jobTable{byID: map[string]*job{}, onHost: make([][]*job, c.NumHosts()), seed: seed}
	// Every host's list starts with room for onHostSlots jobs in one array
	// for all: a host's first jobs (a cycle admits gangs onto wholly free
	// hosts) allocate nothing. Each list is capped at its own slots, so a
	// longer one moves out on its own (append).
	slots := make([]*job, len(t.onHost)*onHostSlots)
	for h := range t.onHost {
		t.onHost[h] = slots[h*onHostSlots : h*onHostSlots : (h+1)*onHostSlots]
	}
	return t
}

// onHostSlots is the room each host's job list (jobTable.onHost) starts
// with.
const onHostSlots = 4

// endKey is a holding job's key in jobTable.ends: its estimated end as
// seconds and nanoseconds (time.Time's range, without its monotonic
// reading), then its submission sequence.
type endKey struct {
	sec     int64
	seq     uint64
	j       *job
	nsec    int32
	unknown bool // no estimate: after every known end
}

// endKeyOf is j's key under its current end and endKnown.
func endKeyOf(j *job) endKey {
	k := endKey{unknown: !j.endKnown, seq: j.entry.Seq, j: j}
	if j.endKnown {
		k.sec, k.nsec = j.end.Unix(), int32(j.end.Nanosecond())
	}
	return k
}

// less orders known ends first, by end, then unknown ones; ties by
// submission.
func (a endKey) less(b endKey) bool {
	if a.unknown != b.unknown {
		return b.unknown
	}
	if !a.unknown && (a.sec != b.sec || a.nsec != b.nsec) {
		return a.sec < b.sec || (a.sec == b.sec && a.nsec < b.nsec)
	}
	return a.seq < b.seq
}

// ascendEnds calls fn for each holding job in order of estimated end
// (unknown last) until it returns false.
func (t *jobTable) ascendEnds(fn func(*job) bool) {
	t.ends.ascend(func(k endKey) bool { return fn(k.j) })
}

// add files a new job (from newJob) under the next sequence number, which
// also seeds its request.
func (t *jobTable) add(j *job) {
	t.seq++
	j.req.Seed = t.seed ^ (t.seq * 0x9E3779B97F4A7C15)
	j.entry.Seq = t.seq
	t.byID[j.spec.ID] = j
}

// remove forgets a job that ended (it holds nothing).
func (t *jobTable) remove(j *job) { delete(t.byID, j.spec.ID) }

// index files a job that has just taken j.placement: by its estimated
// end and on each of its hosts.
func (t *jobTable) index(j *job) {
	t.ends.insert(endKeyOf(j))
	if cl := j.placement.Claims; len(cl) == 1 { // most jobs: no allocation
		j.hostOne[0] = cl[0].Host
		j.hosts = j.hostOne[:]
	} else {
		j.hosts = j.placement.Hosts()
	}
	for _, h := range j.hosts {
		on := t.onHost[h]
		t.onHost[h] = append(on, j)
		if len(on) == cap(on) {
			// It moved out: the array it left (a host's first slots, kept
			// as long as the table) keeps no job alive.
			clear(on)
		}
	}
}

// unindex forgets a holding job that releases its placement; it returns
// the hosts it held.
func (t *jobTable) unindex(j *job) []topology.HostID {
	t.ends.delete(endKeyOf(j))
	for _, h := range j.hosts {
		on := t.onHost[h]
		if k := slices.Index(on, j); k >= 0 {
			t.onHost[h] = slices.Delete(on, k, k+1)
		}
	}
	return j.hosts
}

// refile files a holding job again under a new estimated end, set by fn.
func (t *jobTable) refile(j *job, fn func()) {
	t.ends.delete(endKeyOf(j))
	fn()
	t.ends.insert(endKeyOf(j))
}

// follow grows the per-host index for a new version of the cluster (live
// changes: hosts only ever get new IDs).
func (t *jobTable) follow(c *topology.Cluster) {
	for len(t.onHost) < c.NumHosts() {
		t.onHost = append(t.onHost, nil)
	}
}

// moveLeaf files j under leaf, its queue's leaf in a reconfigured tree
// (its pending entry is already there), and names it in j's spec: Job
// reports the queue a job is in.
func (t *jobTable) moveLeaf(j *job, leaf *queue.Leaf) { j.leaf, j.spec.Queue = leaf, leaf.Name() }

// placedWithin records the domain a restored job's placement was made
// within (RestoredJob.Domain), where an elastic gang grows back.
func (t *jobTable) placedWithin(j *job, lv topology.Level, d topology.DomainID) {
	j.placement.Level, j.placement.Domain = lv, d
}

// reclass sets j's class (its queue entry's Class: the jobs of one class
// share a cycle's placement failures), filing a waiting job in its leaf
// again under it.
func (t *jobTable) reclass(j *job, class string) {
	if j.entry.Class == class {
		return
	}
	if !j.state.Holding() && j.leaf.Remove(&j.entry) {
		j.entry.Class = class
		j.leaf.Add(&j.entry)
		return
	}
	j.entry.Class = class
}
