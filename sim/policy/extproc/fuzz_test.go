package extproc

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim/policy"
)

// replayed is an Ordering whose process's standard output is out and
// whose requests go nowhere: the reading side of the protocol without a
// process. Its reader's buffer is bufio's smallest, so long replies take
// the path that joins buffer-sized pieces.
func replayed(out []byte) *Ordering {
	return &Ordering{name: "fuzz", stderr: &tailBuffer{max: 64}, w: bufio.NewWriter(io.Discard), r: bufio.NewReaderSize(bytes.NewReader(out), 16)}
}

// FuzzReplies: whatever a policy process prints, the reader never
// panics: each call returns one int32 priority per job or an error naming
// the policy, and after a broken stream every call fails.
func FuzzReplies(f *testing.F) {
	for _, s := range []string{
		`{"priorities":[1,2]}` + "\n" + `{"priorities":[3,4]}` + "\n",
		`{"priorities":[1]}` + "\n",
		`{"priorities":[2147483648,0]}` + "\n",
		`{"priorities":[-2147483648,2147483647]}` + "\n",
		`{"error":"no"}` + "\n",
		`{"priorities":[1.5,2]}` + "\n",
		"not json\n",
		`{"priorities":[1,2]}`,
		"\n",
		`{"priorities":[` + strings.Repeat("1,", 40) + "1]}\n",
		`{"priorities":null}` + "\n",
		`[1,2]` + "\n",
	} {
		f.Add([]byte(s))
	}
	jobs := []policy.Job{{ID: "a", Queue: "q", GPUs: 1, Submit: time.Second}, {ID: "b", Queue: "q", GPUs: 8, Running: true}}
	f.Fuzz(func(t *testing.T, out []byte) {
		o := replayed(out)
		var broken error
		for range 4 {
			ps, err := o.Enqueued(time.Minute, jobs)
			if err != nil {
				if !strings.Contains(err.Error(), "fuzz") {
					t.Fatalf("error %v does not name the policy", err)
				}
				if o.broken != nil {
					broken = o.broken
				}
				continue
			}
			if broken != nil {
				t.Fatalf("a call succeeded after the stream broke (%v)", broken)
			}
			if len(ps) != len(jobs) {
				t.Fatalf("%d priorities for %d jobs", len(ps), len(jobs))
			}
		}
	})
}
