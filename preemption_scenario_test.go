package gpusched

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/workload"
)

// TestPreemptionScenarios runs the scripts in testdata/preemption with the
// scenario harness of TestScenarios plus these commands (regenerate with
// `go test -run TestPreemptionScenarios -rewrite`):
//
//	preemptor [scope=queue|any|never] [reclaim=any|lower|never] [fair-sharing]
//	          [grace=DUR] [max-restarts=N] [eviction-retry=DUR]
//	                         configure a PlanPreemptor (before the first job)
//	submit … [minrun=DUR] [cap=N] [pinned] [checkpoint-every=DUR]
//	                         submit with preemption protections
//	checkpoint id=J [at=DUR] the job reports a checkpoint at DUR
//	progress id=J            the job's last checkpoint and saved work
//	refuse id=J [at=DUR] [reason=WORD]
//	                         the host reports J's eviction refused (EvictionRefused)
//
// Invariants are checked after every command, as in TestScenarios.
func TestPreemptionScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/preemption", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out := h.runPreemption(t, td)
			h.check(t, td)
			return out
		})
	})
}

func (h *harness) runPreemption(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "preemptor":
		var cfg preempt.Config
		var v string
		if td.MaybeScanArgs(t, "scope", &v) {
			cfg.LowerPriority = map[string]preempt.Scope{"queue": preempt.WithinQueue, "any": preempt.AnyQueue, "never": preempt.NeverByPriority}[v]
		}
		if td.MaybeScanArgs(t, "reclaim", &v) {
			cfg.Reclaim = map[string]preempt.ReclaimPolicy{"any": preempt.ReclaimAny, "lower": preempt.ReclaimLowerPriority, "never": preempt.ReclaimNever}[v]
		}
		cfg.FairSharing = td.HasArg("fair-sharing")
		if td.MaybeScanArgs(t, "grace", &v) {
			cfg.Grace = dur(t, v)
		}
		td.MaybeScanArgs(t, "max-restarts", &h.cfg.MaxRestarts)
		if td.MaybeScanArgs(t, "eviction-retry", &v) {
			h.cfg.EvictionRetry = dur(t, v)
		}
		p, err := NewPlanPreemptor(cfg, 0)
		if err != nil {
			t.Fatal(err)
		}
		h.cfg.Preemptor = p
		return "ok"
	case "submit":
		s := h.sched(t)
		now := h.at(t, td)
		j := jobFromArgs(t, td, "")
		protections(t, td, &j)
		if err := s.Submit(j, now); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "burst":
		s := h.sched(t)
		now := h.at(t, td)
		var n int
		var prefix string
		td.ScanArgs(t, "n", &n)
		td.ScanArgs(t, "prefix", &prefix)
		for i := 1; i <= n; i++ {
			j := jobFromArgs(t, td, fmt.Sprintf("%s%03d", prefix, i))
			protections(t, td, &j)
			if err := s.Submit(j, now); err != nil {
				return "error: " + err.Error()
			}
		}
		return fmt.Sprintf("submitted %d", n)
	case "checkpoint":
		// A checkpoint at at, reported at the latest time so far (or at
		// at, if later): time does not go back.
		s := h.sched(t)
		now := h.now
		at := h.at(t, td)
		if at.After(now) {
			now = at
		}
		h.now = now
		var id string
		td.ScanArgs(t, "id", &id)
		if err := s.Checkpointed(id, at, now); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "refuse":
		s := h.sched(t)
		now := h.at(t, td)
		var id string
		why := "refused"
		td.ScanArgs(t, "id", &id)
		td.MaybeScanArgs(t, "reason", &why)
		if err := s.EvictionRefused(id, now, why); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "progress":
		var id string
		td.ScanArgs(t, "id", &id)
		cp, saved, ok := h.sched(t).Progress(id)
		if !ok {
			return "unknown job " + id
		}
		last := "none"
		if !cp.IsZero() {
			last = rel(cp)
		}
		est := ""
		if st, ok := h.s.Job(id); ok && st.State.Holding() && h.s.jobs.byID[id].endKnown {
			est = "; estimated end " + rel(h.s.jobs.byID[id].end)
		}
		return fmt.Sprintf("checkpoint %s, saved %v%s", last, saved.Round(time.Second), est)
	}
	return h.run(t, td)
}

// protections reads the preemption arguments of submit and burst.
func protections(t *testing.T, td *datadriven.TestData, j *workload.Job) {
	var v string
	if td.MaybeScanArgs(t, "minrun", &v) {
		j.MinRunTime = dur(t, v)
	}
	td.MaybeScanArgs(t, "cap", &j.MaxPreemptions)
	j.NonPreemptible = td.HasArg("pinned")
	if td.MaybeScanArgs(t, "checkpoint-every", &v) {
		j.CheckpointInterval = dur(t, v)
	}
}
