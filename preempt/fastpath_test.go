package preempt

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestLostSinceAgrees: the planner's lost work of a job (run.lostSince,
// which reads a reported checkpoint in place) equals the plain
// computation from lastCheckpoint, for times with and without monotonic
// readings, checkpoints before, at and after the start, and intervals.
func TestLostSinceAgrees(t *testing.T) {
	mono := time.Now()
	rapid.Check(t, func(rt *rapid.T) {
		at := func(label string) time.Time {
			switch rapid.IntRange(0, 3).Draw(rt, label+" kind") {
			case 0:
				return time.Time{}
			case 1:
				return mono.Add(time.Duration(rapid.Int64Range(-1e13, 1e13).Draw(rt, label)))
			}
			return t0.Add(time.Duration(rapid.Int64Range(-1e13, 1e13).Draw(rt, label)))
		}
		j := &Job{Started: at("started"), Checkpoint: at("checkpoint")}
		switch rapid.IntRange(0, 2).Draw(rt, "checkpoint is") {
		case 1:
			j.Checkpoint = j.Started
		case 2:
			j.Checkpoint = j.Started.Round(0)
		}
		if rapid.Bool().Draw(rt, "interval") {
			j.CheckpointInterval = time.Duration(rapid.Int64Range(-1e9, 1e12).Draw(rt, "every"))
		}
		now := at("now")
		milli := rapid.Int64Range(0, 64000).Draw(rt, "milli")
		want := GPUTime(0)
		if !j.Started.IsZero() {
			from := j.Started
			if cp := j.lastCheckpoint(now); !cp.IsZero() {
				from = cp
			}
			want = lostNanos(milli, from.UnixNano(), now.UnixNano())
		}
		r := &run{now: now, nowNano: now.UnixNano()}
		if got := r.lostSince(milli, j); got != want {
			rt.Fatalf("lostSince %d, plain %d (started %v, checkpoint %v, interval %v, now %v)", got, want, j.Started, j.Checkpoint, j.CheckpointInterval, now)
		}
	})
}
