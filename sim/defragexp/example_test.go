package defragexp_test

import (
	"fmt"

	"github.com/gpusched/gpusched/sim/defragexp"
)

// The experiment's cluster and trace for one seed, at a small size.
func Example() {
	o := defragexp.Options{Racks: 4, Jobs: 200}
	c, err := defragexp.Cluster(o)
	if err != nil {
		panic(err)
	}
	jobs, err := defragexp.Trace(c, o, 1)
	if err != nil {
		panic(err)
	}
	big := 0
	for _, j := range jobs {
		if g := j.Spec.Groups[0]; g.Count*g.GPUs >= 64 {
			big++
		}
	}
	fmt.Println(c.NumGPUs(), "GPUs,", len(jobs), "jobs,", big, "gangs of 64 GPUs or more")
	// Output: 288 GPUs, 200 jobs, 11 gangs of 64 GPUs or more
}
