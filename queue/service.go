package queue

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Demotion lowers the priority of jobs as they attain service, for
// policies that need no runtime estimate: a job starts at level 0 and
// moves down a level at each threshold of the service it has attained
// (running time, or GPU time, over all its runs). The host runs it: it
// counts each job's running time, and when a job's level changes it sets
// the job's priority to its base priority minus its level (the root
// Scheduler's SetPriority); with priority preemption within the queue a
// waiting job of a higher level then preempts a running one of a lower
// level. NextChange tells the host when a running job's level changes,
// so it can run a scheduling cycle then. Implementations are pure and
// deterministic.
type Demotion interface {
	// Level returns the level (0 = the highest priority) of a job holding
	// gpus GPUs that has run for ran in total.
	Level(gpus float64, ran time.Duration) int
	// NextChange returns how much longer such a job must run for its
	// level to change, and false when it never changes again.
	NextChange(gpus float64, ran time.Duration) (time.Duration, bool)
}

// LAS is Tiresias' discretised two-dimensional least-attained-service
// policy (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed
// Deep Learning", NSDI'19, §3.2 and §4.2): a job's attained service is
// its GPUs × its running time (both dimensions, so a wide job ages as
// fast as its width), discretised into queues by ascending thresholds;
// a job in a higher queue goes first and preempts jobs in lower ones;
// within a queue jobs go in FIFO order. It needs no job durations.
// Tiresias' starvation guard (promoting a job that waited long) is not
// modelled.
type LAS struct {
	// Thresholds are the attained GPU-seconds at which a job moves to
	// the next queue, ascending and positive: k thresholds make k+1
	// queues.
	Thresholds []float64
}

// Validate reports thresholds that are not positive, finite and
// ascending.
func (l LAS) Validate() error {
	for i, t := range l.Thresholds {
		if !(t > 0) || math.IsInf(t, 0) {
			return fmt.Errorf("queue: LAS threshold %d: %g is not a positive finite number of GPU-seconds", i, t)
		}
		if i > 0 && t <= l.Thresholds[i-1] {
			return fmt.Errorf("queue: LAS threshold %d: %g is not above the one before (%g)", i, t, l.Thresholds[i-1])
		}
	}
	return nil
}

// Level returns the number of thresholds at or below gpus × ran.
// O(log thresholds).
func (l LAS) Level(gpus float64, ran time.Duration) int {
	s := gpus * ran.Seconds()
	k, found := slices.BinarySearch(l.Thresholds, s)
	if found {
		k++
	}
	return k
}

// NextChange returns the running time until gpus × ran reaches the next
// threshold (rounded up to a whole nanosecond); false past the last one,
// or for a job holding no GPU (it attains no GPU service).
func (l LAS) NextChange(gpus float64, ran time.Duration) (time.Duration, bool) {
	k := l.Level(gpus, ran)
	if k >= len(l.Thresholds) || gpus <= 0 {
		return 0, false
	}
	need := l.Thresholds[k]/gpus - ran.Seconds()
	d := time.Duration(math.Ceil(need * float64(time.Second)))
	return max(d, 1), true
}

// TimeSlice is round-based time slicing in the spirit of Gandiva (Xiao
// et al., "Gandiva: Introspective Cluster Scheduling for Deep Learning",
// OSDI'18, §4.1): a job holds its GPUs for a lease; each lease it
// completes moves it one level down, so at the end of a lease a waiting
// job that has had fewer leases preempts it (suspend, checkpoint,
// resume later), and over a round every contending job gets a lease.
// When nobody waits, a job keeps running through its leases. Levels are
// not bounded.
type TimeSlice struct {
	// Lease is the running time a job holds its GPUs before it yields to
	// jobs that have had fewer leases; > 0.
	Lease time.Duration
}

// Validate reports a lease that is not positive.
func (s TimeSlice) Validate() error {
	if s.Lease <= 0 {
		return fmt.Errorf("queue: time-slice lease %v: want a positive duration", s.Lease)
	}
	return nil
}

// Level returns the number of whole leases in ran (capped at
// math.MaxInt32).
func (s TimeSlice) Level(_ float64, ran time.Duration) int {
	if s.Lease <= 0 || ran <= 0 {
		return 0
	}
	return int(min(int64(ran/s.Lease), math.MaxInt32))
}

// NextChange returns the time to the end of the current lease.
func (s TimeSlice) NextChange(_ float64, ran time.Duration) (time.Duration, bool) {
	if s.Lease <= 0 {
		return 0, false
	}
	return s.Lease - max(ran, 0)%s.Lease, true
}

// DemotedPriority is the priority a job of base priority gets at level:
// base − level, saturating at math.MinInt32.
func DemotedPriority(base int32, level int) int32 {
	return int32(max(int64(base)-int64(level), math.MinInt32))
}
