package conformance

import (
	"os"
	"strings"
	"testing"
)

// TestGpuschedSide plays every scenario on gpusched alone (no apiserver,
// no Kueue) and checks it against docs/kueue-conformance.md: each step's
// gpusched column as recorded there, so a change in gpusched's quota
// semantics shows here even where Kueue cannot run.
func TestGpuschedSide(t *testing.T) {
	report, err := os.ReadFile("../../../docs/kueue-conformance.md")
	if err != nil {
		t.Logf("docs/kueue-conformance.md: %v; running without the recorded outcomes", err)
	}
	recorded := recordedColumns(string(report))
	if err == nil && len(recorded) != len(Scenarios()) {
		t.Errorf("docs/kueue-conformance.md records %d scenarios, there are %d: regenerate it", len(recorded), len(Scenarios()))
	}
	for _, s := range Scenarios() {
		obs, err := RunGpusched(&s)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if len(obs) != len(s.Steps) {
			t.Fatalf("%s: %d observations for %d steps", s.Name, len(obs), len(s.Steps))
		}
		rows, ok := recorded[s.Title]
		if !ok {
			continue
		}
		for i, o := range obs {
			if i >= len(rows) {
				t.Errorf("%s: the report has %d steps, the scenario %d", s.Name, len(rows), len(obs))
				break
			}
			if got := o.String(); got != rows[i][1] {
				t.Errorf("%s step %d: gpusched now %q, the report says %q (Kueue: %q)", s.Name, i+1, got, rows[i][1], rows[i][0])
			}
		}
	}
}

// recordedColumns reads the report's per-scenario tables: title → rows of
// (Kueue, gpusched).
func recordedColumns(report string) map[string][][2]string {
	out := map[string][][2]string{}
	title := ""
	for _, line := range strings.Split(report, "\n") {
		if t, ok := strings.CutPrefix(line, "## "); ok {
			title = t
			continue
		}
		if title == "" || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| step") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			continue
		}
		out[title] = append(out[title], [2]string{strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])})
	}
	return out
}
