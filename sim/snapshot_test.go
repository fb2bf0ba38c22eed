package sim_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/workload"
)

// watched counts what the simulator told a scheduler.
type watched struct {
	*simtest.FIFO
	submitted []string
	cycles    []time.Duration
	running   map[string]bool
}

func (w *watched) Submit(now time.Duration, j workload.Job) error {
	w.submitted = append(w.submitted, j.ID)
	return w.FIFO.Submit(now, j)
}

func (w *watched) Schedule(now time.Duration) sim.Decision {
	w.cycles = append(w.cycles, now)
	return w.FIFO.Schedule(now)
}

func (w *watched) Started(now time.Duration, id string) error {
	w.running[id] = true
	return w.FIFO.Started(now, id)
}

func (w *watched) Finished(now time.Duration, id string) error {
	delete(w.running, id)
	return w.FIFO.Finished(now, id)
}

// seen is what a snapshot saw.
type seen struct {
	at        time.Duration
	submitted int
	lastCycle time.Duration // -1: none yet
	running   []string
}

// TestSnapshots: Config.Snapshot sees the Scheduler after the events due
// at its time and before the cycle due then, once per time, in order; a
// time after the run sees its end; and snapshots change nothing.
func TestSnapshots(t *testing.T) {
	c := box(t)
	jobs := func() []trace.Job {
		return []trace.Job{
			tj("a", 0, 100*time.Second, 0, gpus(8)),
			tj("b", 10*time.Second, 50*time.Second, 0, gpus(4)),
			tj("c", 30*time.Second, 20*time.Second, 0, gpus(4)),
		}
	}
	base := simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Audit: true}, jobs())

	w := &watched{FIFO: simtest.NewFIFO(c), running: map[string]bool{}}
	var got []seen
	cfg := sim.Config{Cluster: c, Scheduler: w, Audit: true,
		// Out of order and repeated: each is taken once, in order.
		Snapshots: []time.Duration{30 * time.Second, 0, 20 * time.Second, 100 * time.Second, time.Hour, 30 * time.Second},
		Snapshot: func(at time.Duration) error {
			last := time.Duration(-1)
			if n := len(w.cycles); n > 0 {
				last = w.cycles[n-1]
			}
			var run []string
			for id := range w.running {
				run = append(run, id)
			}
			slices.Sort(run)
			got = append(got, seen{at, len(w.submitted), last, run})
			return nil
		}}
	r := simtest.Run(t, cfg, jobs())
	want := []seen{
		// At 0: a submitted, its cycle not run yet.
		{0, 1, -1, nil},
		// At 20 s: nothing happens then; b waits (a holds the box) since
		// the cycle at 10 s.
		{20 * time.Second, 2, 10 * time.Second, []string{"a"}},
		// At 30 s: c arrived, the cycle at 30 s not run yet.
		{30 * time.Second, 3, 10 * time.Second, []string{"a"}},
		// At 100 s: a ended, the cycle that starts b and c not run yet.
		{100 * time.Second, 3, 30 * time.Second, nil},
		// After the end (150 s): everything ran.
		{time.Hour, 3, 150 * time.Second, nil},
	}
	if len(got) != len(want) {
		t.Fatalf("snapshots %+v, want %+v", got, want)
	}
	for i := range want {
		if g, w := got[i], want[i]; g.at != w.at || g.submitted != w.submitted || g.lastCycle != w.lastCycle || !slices.Equal(g.running, w.running) {
			t.Errorf("snapshot %d: %+v, want %+v", i, g, w)
		}
	}
	a, _ := json.Marshal(base.Summary)
	b, _ := json.Marshal(r.Summary)
	if string(a) != string(b) {
		t.Errorf("snapshots changed the run:\n%s\n%s", a, b)
	}
}

func TestSnapshotErrors(t *testing.T) {
	c := box(t)
	jobs := []trace.Job{tj("a", 0, 100*time.Second, 0, gpus(8))}
	stop := errors.New("stop here")
	_, err := sim.New(sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Snapshots: []time.Duration{-time.Second}, Snapshot: func(time.Duration) error { return nil }}, jobs)
	if !errors.Is(err, sim.ErrConfig) || !strings.Contains(err.Error(), "Snapshots[0]") {
		t.Errorf("negative: %v", err)
	}
	_, err = sim.New(sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Horizon: time.Minute, Snapshots: []time.Duration{2 * time.Minute}}, jobs)
	if !errors.Is(err, sim.ErrConfig) || !strings.Contains(err.Error(), "after") && !strings.Contains(err.Error(), "outside") {
		t.Errorf("after the horizon: %v", err)
	}
	s, err := sim.New(sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Snapshots: []time.Duration{50 * time.Second},
		Snapshot: func(time.Duration) error { return stop }}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); !errors.Is(err, stop) || !strings.Contains(err.Error(), "snapshot at 50s") {
		t.Errorf("Run: %v", err)
	}
}
