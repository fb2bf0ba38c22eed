package extproc_test

import (
	"fmt"
	"io"
	"log"

	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/sim/policy/extproc"
)

// Example starts a Python ordering (python/examples/smallest_first.py,
// run from the repository root) and asks it for the priorities of two
// jobs that entered a queue. The simulator does the same for
// `gpusched sim run --ordering 'exec:python3 python/examples/smallest_first.py'`.
// It has no Output: it needs python3 (TestPythonMatchesGo runs this
// policy through the real python3, and skips where there is none).
func Example() {
	o, err := extproc.Start([]string{"python3", "python/examples/smallest_first.py"}, "", 1)
	if err != nil {
		log.Fatal(err)
	}
	if c, ok := o.(io.Closer); ok {
		defer c.Close()
	}
	prio, err := o.Enqueued(0, []policy.Job{
		{ID: "big", Queue: "a", GPUs: 8},
		{ID: "small", Queue: "a", GPUs: 1},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(prio) // [-8000 -1000]: the 1-GPU job goes first
}
