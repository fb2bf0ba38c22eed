package gpusched

import (
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/topology"
)

// TestDefragScenarios runs the scripts in testdata/defrag with the
// harness of TestPreemptionScenarios plus (regenerate with
// `go test -run TestDefragScenarios -rewrite`):
//
//	defrag [after=DUR] [per-hour=N] [max-per-job=N] [min-value=F]
//	       [consolidate] [c-per-hour=N] [c-idle=DUR] [c-target=N]
//	                         turn on Config.Defrag (before the first job),
//	                         with consolidation when idle (the c- budget)
//	migrated id=J [at=DUR]   the host moved J (Scheduler.Migrated)
//	host-filter id=J hosts=H1,H2,...
//	                         J may use only the named hosts
//	                         (Scheduler.SetHostFilter; no hosts: none)
func TestDefragScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/defrag", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out := h.runDefrag(t, td)
			h.check(t, td)
			return out
		})
	})
}

func (h *harness) runDefrag(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "defrag":
		dc := &DefragConfig{}
		var v string
		if td.MaybeScanArgs(t, "after", &v) {
			dc.After = dur(t, v)
		}
		td.MaybeScanArgs(t, "per-hour", &dc.Budget.PerHour)
		td.MaybeScanArgs(t, "max-per-job", &dc.MaxPerJob)
		td.MaybeScanArgs(t, "min-value", &dc.Budget.MinValue)
		if td.HasArg("consolidate") {
			cc := &ConsolidateConfig{}
			td.MaybeScanArgs(t, "c-per-hour", &cc.Budget.PerHour)
			td.MaybeScanArgs(t, "c-target", &cc.Target)
			if td.MaybeScanArgs(t, "c-idle", &v) {
				cc.Idle = dur(t, v)
			}
			dc.Consolidate = cc
		}
		h.cfg.Defrag = dc
		return "ok"
	case "migrated":
		s := h.sched(t)
		now := h.at(t, td)
		var id string
		td.ScanArgs(t, "id", &id)
		if err := s.Migrated(id, now); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "host-filter":
		s := h.sched(t)
		var id, names string
		td.ScanArgs(t, "id", &id)
		td.MaybeScanArgs(t, "hosts", &names)
		allowed := map[topology.HostID]bool{}
		for _, n := range strings.Split(names, ",") {
			if n == "" {
				continue
			}
			hid, ok := s.Cluster().HostByName(n)
			if !ok {
				t.Fatalf("%s: no host %s", td.Pos, n)
			}
			allowed[hid] = true
		}
		f := HostFilter{Key: "hosts=" + names, Allow: func(h topology.HostID) bool { return allowed[h] }}
		if err := s.SetHostFilter(id, f); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	}
	return h.runPreemption(t, td)
}

var _ = preempt.DefragBudget{}
