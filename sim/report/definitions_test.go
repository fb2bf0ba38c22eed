package report

import (
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim"
)

// Every row of the summary table has a definition, which the HTML report
// prints with the configuration it is given.
func TestDefinitionsAndConfig(t *testing.T) {
	for _, rw := range rows {
		if Definitions[rw.name] == "" {
			t.Errorf("row %q has no definition", rw.name)
		}
	}
	var b strings.Builder
	p := &sim.Provenance{Version: "v1.2.3", Commit: "abc", Command: "gpusched sim run", Config: "0123456789ab",
		Flags: map[string]string{"ordering": "srtf", "seed": "7"}, Set: []string{"ordering"}, Seeds: []uint64{7},
		Inputs: []sim.InputFile{{Flag: "trace", Path: "t.csv", SHA256: "ffee", Bytes: 3}}}
	if err := writeHTML(&b, t.TempDir(), Page{Title: "x", Provenance: p}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"v1.2.3 commit abc", "--ordering</td><td>srtf", "sha256 ffee", "0123456789ab", "<dt>queue wait mean (started jobs)</dt>"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report has no %q", want)
		}
	}
}
