package sim_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched/sim"
)

// The engine fires events in (time, sequence) order; a canceled event
// never fires.
func ExampleEngine() {
	e := sim.NewEngine()
	say := func(s string) func(time.Duration) {
		return func(now time.Duration) { fmt.Println(now, s) }
	}
	e.Schedule(2*time.Second, say("second, scheduled first"))
	e.Schedule(time.Second, say("first"))
	e.Schedule(2*time.Second, say("second, scheduled later"))
	id := e.Schedule(3*time.Second, say("never"))
	e.Cancel(id)
	fmt.Println(e.Run(), "events")
	// Output:
	// 1s first
	// 2s second, scheduled first
	// 2s second, scheduled later
	// 3 events
}
