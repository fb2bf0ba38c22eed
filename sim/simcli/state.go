package simcli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/snapshot"
)

// stateSaver writes the state of a run's Scheduler at chosen times
// (`sim run --save-state`), as package snapshot files that `gpusched
// explain` reads.
type stateSaver struct {
	dir string
	ats []time.Duration
	// header heads every file (the run it comes from).
	header string
	wrote  []string
}

// parseSaveState reads the --save-state values: durations since the
// trace start, each given once (repeated flags and comma-separated lists
// both work).
func parseSaveState(vals []string, horizon time.Duration) ([]time.Duration, error) {
	var ats []time.Duration
	seen := map[string]string{}
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			d, err := time.ParseDuration(part)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("--save-state %q: want a duration since the trace start, such as 90m or 2h", part)
			}
			if horizon > 0 && d > horizon {
				return nil, fmt.Errorf("--save-state %s: after --horizon %v, where the run stops", part, horizon)
			}
			name := stateFileName(d)
			if prev, dup := seen[name]; dup {
				return nil, fmt.Errorf("--save-state %s: the same time as %s", part, prev)
			}
			seen[name] = part
			ats = append(ats, d)
		}
	}
	return ats, nil
}

// stateFileName is the file of the state at d: state-AT.yaml, with AT as
// Go writes durations less zero minutes and seconds (state-1h.yaml,
// state-1h30m.yaml, state-45s.yaml).
func stateFileName(d time.Duration) string {
	return "state-" + snapshot.FormatDuration(d) + ".yaml"
}

// hook returns the simulator's snapshot function for one run: at each
// time it captures s, built with the placer policy (and, for fgd, the
// workload w), and writes it. The configuration and the submission order
// are the Scheduler's own (Scheduler.Config, Submissions).
func (ss *stateSaver) hook(s *gpusched.Scheduler, policy string, w *frag.Distribution) func(time.Duration) error {
	opt := snapshot.CaptureOptions{Placer: policy, Workload: w}
	return func(at time.Duration) error {
		st, err := snapshot.Capture(s, rootsched.Epoch.Add(at), opt)
		if err != nil {
			return err
		}
		name := filepath.Join(ss.dir, stateFileName(at))
		var buf bytes.Buffer
		when := snapshot.FormatDuration(at)
		header := fmt.Sprintf("The simulated Scheduler %s after the trace start, as its cycle then saw it,\n%s.\nExplain it: gpusched explain %s", when, ss.header, name)
		if err := snapshot.Encode(&buf, st, header); err != nil {
			return err
		}
		if err := os.MkdirAll(ss.dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			return err
		}
		ss.wrote = append(ss.wrote, name)
		return nil
	}
}
