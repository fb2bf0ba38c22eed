package benchmarks

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/gpusched/gpusched"
)

// decisionDigests are the SHA-256 digests of every Decision (as JSON) of
// decisionCycles cycles on each scheduling fixture (see
// TestDecisionsUnchanged), recorded on main before the cycle's
// performance rounds of issue #29: a change that only makes the cycle
// faster leaves them as they are. GPUSCHED_DIGESTS=1 prints new ones.
var decisionDigests = map[string]string{
	"h100-10k":  "e9c538d7e2a29325127bbf2aa2aebb88875544ebd65d05e089e6fe2ffa5c3230",
	"h100-100k": "0df0c86b76946c7b4cf4335cda6daf88caba8b548a801d973255750145789db0",
}

const decisionCycles = 6

// longDigest is the digest of decisionCyclesLong cycles on the 10k-GPU
// fixture (TestDecisionsUnchangedLong), recorded on main before the
// reservations kept on standby (b03fd76): long enough for the holders of
// its eight backfilling queues' reservations, four held a cycle, to wait
// on standby and hold again.
const (
	longDigest         = "d639c84b8be18fc0294cfbf384bd4901a8370d7625ad9f7d9c0e62ab26c58d1c"
	decisionCyclesLong = 1000
)

// TestDecisionsUnchanged runs decisionCycles cycles on the 10k-GPU (and,
// without -short, the 100k-GPU) scheduling fixture with 10,000 jobs
// pending — the full cycle first, then cycles after the earliest-ending
// job finishes, each bound job started and replaced by a new pending one
// — and compares a digest of every Decision, bindings with their GPUs,
// pending jobs with their reasons, with the recorded one.
func TestDecisionsUnchanged(t *testing.T) {
	for _, name := range []string{"h100-10k", "h100-100k"} {
		if name == "h100-100k" && testing.Short() {
			continue
		}
		t.Run(name, func(t *testing.T) {
			got := decisionDigest(t, name, decisionCycles)
			if os.Getenv("GPUSCHED_DIGESTS") != "" {
				t.Logf("%q: %q,", name, got)
				return
			}
			if want := decisionDigests[name]; got != want {
				t.Errorf("decisions of %s changed: digest %s, recorded %s", name, got, want)
			}
		})
	}
}

// TestDecisionsUnchangedLong is TestDecisionsUnchanged on the 10k-GPU
// fixture for decisionCyclesLong cycles (not with -short).
func TestDecisionsUnchangedLong(t *testing.T) {
	if testing.Short() {
		t.Skip("a thousand cycles: not with -short")
	}
	got := decisionDigest(t, "h100-10k", decisionCyclesLong)
	if os.Getenv("GPUSCHED_DIGESTS") != "" {
		t.Logf("long: %q", got)
		return
	}
	if got != longDigest {
		t.Errorf("decisions of %d cycles on h100-10k changed: digest %s, recorded %s", decisionCyclesLong, got, longDigest)
	}
}

func decisionDigest(t *testing.T, presetName string, cycles int) string {
	w := world(t, presetName)
	s, now, r := w.scheduler(t, 10000)
	h := sha256.New()
	next := 10000
	for cycle := 0; cycle < cycles; cycle++ {
		if cycle > 0 {
			var id string
			s.Holding(func(jid string, st gpusched.JobStatus) bool {
				id = jid
				if end := st.Started.Add(st.Spec.Runtime); end.After(now) {
					now = end
				}
				return false
			})
			if err := s.Finished(id, now); err != nil {
				t.Fatal(err)
			}
		}
		d := s.Schedule(now)
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "cycle %d %d\n", cycle, len(b))
		h.Write(b)
		for _, x := range d.Bindings {
			if err := s.Started(x.Job, now); err != nil {
				t.Fatal(err)
			}
			if err := s.Submit(schedJob(r, "p"+strconv.Itoa(next), w.leaves[next%len(w.leaves)]), now); err != nil {
				t.Fatal(err)
			}
			next++
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
