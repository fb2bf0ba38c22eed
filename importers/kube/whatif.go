package kube

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/snapshot"
)

// Setup is a configuration and a dump read together: what `gpusched
// explain --kube` and `gpusched sim run --kube` start from.
type Setup struct {
	Import *Import
	State  *snapshot.State
	// Notes are the mapping report and the dump's notes.
	Notes []Note
}

// Prepare reads the configuration at config (a directory or a file; ""
// reads the configuration objects in the dump itself) and the dump at
// dump, and builds the state.
func Prepare(dump, config string, opt DumpOptions) (*Setup, error) {
	if config == "" {
		config = dump
	}
	im, err := ReadDir(config)
	if err != nil {
		return nil, err
	}
	st, notes, err := ReadDumpDir(dump, im, opt)
	if err != nil {
		return nil, err
	}
	return &Setup{Import: im, State: st, Notes: append(slices.Clone(im.Notes), notes...)}, nil
}

// Load restores the state into a Scheduler that preempts as the
// configuration says. Each call returns a fresh Scheduler.
func (s *Setup) Load() (*snapshot.Loaded, []Note, error) {
	pre, err := gpusched.NewPlanPreemptor(s.Import.Preemption, 0)
	if err != nil {
		return nil, nil, err
	}
	st := *s.State
	return Load(&st, snapshot.Options{Preemptor: pre})
}

// Forecast loads the state and runs it forward over horizon.
func (s *Setup) Forecast(horizon time.Duration) (*Forecast, []Note, error) {
	l, notes, err := s.Load()
	if err != nil {
		return nil, nil, err
	}
	f, err := Run(l, horizon)
	return f, notes, err
}

// fmtStart renders a forecast start relative to now.
func fmtStart(t, now time.Time) string {
	switch {
	case t.IsZero():
		return "unknown"
	case !t.After(now):
		return "now"
	}
	return t.UTC().Format(time.RFC3339) + " (in " + fmtDur(t.Sub(now)) + ")"
}

func fmtDur(d time.Duration) string {
	return snapshot.FormatDuration(d.Round(time.Second))
}

// WriteForecast writes, for each waiting job, when it is expected to
// start and for how long it will have waited.
func WriteForecast(w io.Writer, f *Forecast) {
	fmt.Fprintf(w, "expected starts (from runtime estimates; \"unknown\" where a job waits for jobs without one or beyond %s):\n", f.Until.UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  job\tqueue\twaiting since\texpected start\twait")
	n := 0
	for _, j := range f.Jobs {
		if j.Running && len(j.Preempted) == 0 {
			continue
		}
		n++
		wait := "unknown"
		if !j.Start.IsZero() {
			wait = fmtDur(j.Start.Sub(j.Submitted))
		}
		start := fmtStart(j.Start, f.Now)
		if len(j.Preempted) > 0 {
			start += fmt.Sprintf(" (preempted at %s)", j.Preempted[0].UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", j.Job, j.Queue, j.Submitted.UTC().Format(time.RFC3339), start, wait)
	}
	if n == 0 {
		fmt.Fprintln(tw, "  (no job waits)")
	}
	tw.Flush()
}

// Comparison is the same state run forward under two configurations.
type Comparison struct {
	Base, Changed *Forecast
}

// Compare runs base and changed forward from their states over horizon.
func Compare(base, changed *Setup, horizon time.Duration) (*Comparison, []Note, error) {
	fb, nb, err := base.Forecast(horizon)
	if err != nil {
		return nil, nil, fmt.Errorf("baseline: %w", err)
	}
	fc, nc, err := changed.Forecast(horizon)
	if err != nil {
		return nil, nil, fmt.Errorf("changed: %w", err)
	}
	return &Comparison{Base: fb, Changed: fc}, append(nb, nc...), nil
}

// Write writes the comparison: each job's wait under both
// configurations, each queue's GPU-hours in the window, and who gets
// preempted.
func (c *Comparison) Write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "what-if from %s to %s: unchanged vs changed configuration\n\n", c.Base.Now.UTC().Format(time.RFC3339), c.Base.Until.UTC().Format(time.RFC3339))
	fmt.Fprintln(tw, "job\tqueue\twait (unchanged)\twait (changed)\tdifference")
	changed := map[string]*JobForecast{}
	for i := range c.Changed.Jobs {
		changed[c.Changed.Jobs[i].Job] = &c.Changed.Jobs[i]
	}
	wait := func(j *JobForecast) (string, time.Duration, bool) {
		if j == nil {
			return "left out", 0, false
		}
		if j.Running && len(j.Preempted) == 0 {
			return "running", 0, false
		}
		if j.Start.IsZero() {
			return "unknown", 0, false
		}
		d := j.Start.Sub(j.Submitted)
		return fmtDur(d), d, true
	}
	for i := range c.Base.Jobs {
		b := &c.Base.Jobs[i]
		a := changed[b.Job]
		sb, db, okb := wait(b)
		sa, da, oka := wait(a)
		if sb == "running" && sa == "running" {
			continue
		}
		diff := "-"
		switch {
		case okb && oka && da < db:
			diff = "-" + fmtDur(db-da)
		case okb && oka && da > db:
			diff = "+" + fmtDur(da-db)
		case okb && oka:
			diff = "same"
		case !okb && oka:
			diff = "starts"
		case okb && !oka:
			diff = "no longer starts"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.Job, b.Queue, sb, sa, diff)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nGPU-hours per queue in the window:\n")
	fmt.Fprintln(tw, "queue\tunchanged\tchanged")
	var queues []string
	for _, u := range append(slices.Clone(c.Base.Usage), c.Changed.Usage...) {
		if !slices.Contains(queues, u.Queue) {
			queues = append(queues, u.Queue)
		}
	}
	slices.Sort(queues)
	get := func(us []QueueUsage, q string) float64 {
		for _, u := range us {
			if u.Queue == q {
				return u.GPUHours
			}
		}
		return 0
	}
	for _, q := range queues {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\n", q, get(c.Base.Usage, q), get(c.Changed.Usage, q))
	}
	tw.Flush()
	fmt.Fprintf(w, "\npreempted:\n  unchanged: %s\n  changed:   %s\n", preempted(c.Base), preempted(c.Changed))
}

func preempted(f *Forecast) string {
	var out []string
	for _, j := range f.Jobs {
		for _, t := range j.Preempted {
			out = append(out, fmt.Sprintf("%s at %s", j.Job, t.UTC().Format(time.RFC3339)))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
