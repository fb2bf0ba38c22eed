package kube

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/snapshot"
)

// Load restores st into a Scheduler with package snapshot. A job the
// queues could never admit (Kueue leaves such a workload pending for
// ever; gpusched refuses it) is left out with a note instead of failing
// the whole state.
func Load(st *snapshot.State, opt snapshot.Options) (*snapshot.Loaded, []Note, error) {
	var notes []Note
	for range len(st.Jobs) + 1 {
		l, err := st.Restore(opt)
		if err == nil {
			return l, notes, nil
		}
		var se *snapshot.Error
		if !errors.Is(err, gpusched.ErrNeverFits) || !errors.As(err, &se) {
			return nil, notes, err
		}
		m := jobField.FindStringSubmatch(se.Field)
		if m == nil {
			return nil, notes, err
		}
		i, _ := strconv.Atoi(m[1])
		notes = append(notes, Note{Kind: Approximated, Object: "job " + st.Jobs[i].ID, Msg: "never admissible, left out: " + se.Err.Error()})
		st.Jobs = slices.Delete(slices.Clone(st.Jobs), i, i+1)
	}
	return nil, notes, errors.New("load: too many jobs that never fit")
}

var jobField = regexp.MustCompile(`^jobs\[(\d+)\]`)

// JobForecast is what a forecast says of one job.
type JobForecast struct {
	Job, Queue string
	Submitted  time.Time
	// Running says the job ran at the state's time.
	Running bool
	// Start is when it is expected to (re)start; zero means unknown
	// (not within the forecast: it waits for jobs without a runtime
	// estimate, or beyond the horizon). For a running job, its start.
	Start time.Time
	// End is its expected end; zero means unknown (no estimate).
	End time.Time
	// Preempted lists when it is expected to be preempted.
	Preempted []time.Time
	// Reason is why it waits at the state's time ("" if it starts then
	// or runs).
	Reason string
}

// QueueUsage is a leaf's use of GPUs during a forecast's window.
type QueueUsage struct {
	Queue    string
	GPUHours float64
}

// Forecast is a run of a loaded Scheduler forward from its state's time,
// as a host would drive it: each cycle's bindings start at once, victims
// stop after their grace period, and jobs end at their start plus their
// runtime estimate (a preempted job restarts from the beginning). Jobs
// without an estimate never end, so whatever waits for them gets an
// unknown start.
type Forecast struct {
	Now, Until time.Time
	Jobs       []JobForecast
	Usage      []QueueUsage
}

// Run forecasts l (a state just loaded) over the window [Now, Now +
// horizon]. It changes l's Scheduler.
func Run(l *snapshot.Loaded, horizon time.Duration) (*Forecast, error) {
	if horizon <= 0 {
		return nil, errors.New("forecast: horizon must be positive")
	}
	s := l.Scheduler
	now := l.State.Now
	until := now.Add(horizon)
	f := &Forecast{Now: now, Until: until}
	index := map[string]int{}
	runtime := map[string]time.Duration{}
	gpus := map[string]float64{}
	ends := map[string]time.Time{}
	stops := map[string]time.Time{}
	since := map[string]time.Time{}
	usage := map[string]float64{}
	for _, j := range l.State.Jobs {
		index[j.ID] = len(f.Jobs)
		jf := JobForecast{Job: j.ID, Queue: j.Queue, Submitted: j.Submitted}
		runtime[j.ID] = j.Runtime
		var g float64
		for _, tg := range j.Groups {
			g += float64(tg.Count) * (float64(tg.GPUs) + float64(tg.GPUMilli)/1000)
		}
		gpus[j.ID] = g
		if j.State == "running" {
			jf.Running, jf.Start = true, j.Started
			since[j.ID] = now
			if j.Runtime > 0 {
				end := j.Started.Add(j.Runtime - j.Progress)
				if end.Before(now) {
					end = now
				}
				ends[j.ID], jf.End = end, end
			}
		}
		f.Jobs = append(f.Jobs, jf)
	}
	stopUse := func(id string, t time.Time) {
		if st, ok := since[id]; ok {
			usage[f.Jobs[index[id]].Queue] += gpus[id] * t.Sub(st).Hours()
			delete(since, id)
		}
	}
	for cycle := 0; cycle < 100000; cycle++ {
		d := s.Schedule(now)
		if cycle == 0 {
			for _, p := range d.Pending {
				if i, ok := index[p.Job]; ok {
					f.Jobs[i].Reason = p.Reason.String()
				}
			}
		}
		for _, b := range d.Bindings {
			if err := s.Started(b.Job, now); err != nil {
				return nil, fmt.Errorf("forecast: %w", err)
			}
			i, ok := index[b.Job]
			if !ok {
				continue
			}
			jf := &f.Jobs[i]
			jf.Start, jf.End = now, time.Time{}
			since[b.Job] = now
			if rt := runtime[b.Job]; rt > 0 {
				ends[b.Job] = now.Add(rt)
				jf.End = ends[b.Job]
			}
		}
		for _, p := range d.Preemptions {
			if _, ok := stops[p.Job]; !ok {
				stops[p.Job] = now.Add(p.Grace)
			}
		}
		next, ok := earliest(ends, stops)
		if !ok || next.After(until) {
			break
		}
		now = next
		for _, id := range sortedIDs(stops) {
			if stops[id].After(now) {
				continue
			}
			delete(stops, id)
			if _, running := ends[id]; !running && since[id].IsZero() {
				continue
			}
			delete(ends, id)
			stopUse(id, now)
			if err := s.Preempted(id, now); err != nil {
				return nil, fmt.Errorf("forecast: %w", err)
			}
			if i, ok := index[id]; ok {
				f.Jobs[i].Preempted = append(f.Jobs[i].Preempted, now)
				f.Jobs[i].Start, f.Jobs[i].End, f.Jobs[i].Running = time.Time{}, time.Time{}, false
			}
		}
		for _, id := range sortedIDs(ends) {
			if ends[id].After(now) {
				continue
			}
			delete(ends, id)
			delete(stops, id)
			stopUse(id, now)
			if err := s.Finished(id, now); err != nil {
				return nil, fmt.Errorf("forecast: %w", err)
			}
		}
	}
	for _, id := range sortedKeys(since) {
		stopUse(id, until)
	}
	for _, q := range sortedKeys(usage) {
		f.Usage = append(f.Usage, QueueUsage{Queue: q, GPUHours: usage[q]})
	}
	return f, nil
}

func earliest(ms ...map[string]time.Time) (time.Time, bool) {
	var t time.Time
	ok := false
	for _, m := range ms {
		for _, v := range m {
			if !ok || v.Before(t) {
				t, ok = v, true
			}
		}
	}
	return t, ok
}

func sortedIDs(m map[string]time.Time) []string { return sortedKeys(m) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
