package gpusched

import (
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestElasticScenarios runs the scripts in testdata/elastic with the
// harness of TestPreemptionScenarios plus (regenerate with
// `go test -run TestElasticScenarios -rewrite`):
//
//	elastic [no-grow]       turn on Config.Elastic (before the first job)
//	shrunk id=J [at=DUR]    the host stopped J's tasks (Scheduler.Shrunk)
//	grown id=J [at=DUR]     the host started J's new tasks (Scheduler.Grown)
func TestElasticScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/elastic", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out := h.runElastic(t, td)
			h.check(t, td)
			return out
		})
	})
}

func (h *harness) runElastic(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "elastic":
		h.cfg.Elastic = &ElasticConfig{NoGrow: td.HasArg("no-grow")}
		return "ok"
	case "shrunk", "grown":
		s := h.sched(t)
		now := h.at(t, td)
		var id string
		td.ScanArgs(t, "id", &id)
		var err error
		if td.Cmd == "shrunk" {
			err = s.Shrunk(id, now)
		} else {
			err = s.Grown(id, now)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	}
	return h.runPreemption(t, td)
}
