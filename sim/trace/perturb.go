package trace

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Perturbation is how a seed varies a recorded trace, so that
// replications of one trace (gpusched sim compare --seeds) differ in
// documented ways and their spread means something. A zero Perturbation
// changes nothing.
type Perturbation struct {
	// Bootstrap resamples the jobs with replacement: as many draws as jobs,
	// each a copy of a uniformly drawn job keeping its arrival time; the
	// second and later copies of a job get IDs suffixed "#bK".
	Bootstrap bool
	// Jitter moves each arrival by a uniform offset in [−Jitter, +Jitter]
	// (not before the trace's first arrival).
	Jitter time.Duration
	// Window keeps only the jobs arriving within a window this long whose
	// start is drawn uniformly over the trace's arrival span (0: all).
	Window time.Duration
}

// MaxPerturbation is the longest jitter or window a Perturbation takes:
// ten years, beyond any recorded trace and far from time.Duration's limit.
const MaxPerturbation = 10 * 365 * 24 * time.Hour

// ParsePerturbation reads a comma-separated list of bootstrap,
// jitter=DURATION and window=DURATION ("" or "none": none), each
// duration at most MaxPerturbation.
func ParsePerturbation(s string) (Perturbation, error) {
	var p Perturbation
	if s == "" || s == "none" {
		return p, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		var err error
		switch k {
		case "bootstrap":
			p.Bootstrap = true
		case "jitter":
			p.Jitter, err = time.ParseDuration(v)
		case "window":
			p.Window, err = time.ParseDuration(v)
		default:
			return p, fmt.Errorf("perturbation %q: unknown %q (want bootstrap, jitter=DURATION, window=DURATION)", s, k)
		}
		if err != nil || p.Jitter < 0 || p.Window < 0 {
			return p, fmt.Errorf("perturbation %q: %s wants a non-negative duration such as 10m", s, k)
		}
		if p.Jitter > MaxPerturbation || p.Window > MaxPerturbation {
			return p, fmt.Errorf("perturbation %q: %s beyond %v", s, k, MaxPerturbation)
		}
	}
	return p, nil
}

// String returns p as ParsePerturbation reads it.
func (p Perturbation) String() string {
	var parts []string
	if p.Bootstrap {
		parts = append(parts, "bootstrap")
	}
	if p.Jitter > 0 {
		parts = append(parts, "jitter="+p.Jitter.String())
	}
	if p.Window > 0 {
		parts = append(parts, "window="+p.Window.String())
	}
	return strings.Join(parts, ",")
}

// Perturb returns jobs varied by p with draws from seed: first the window,
// then the bootstrap, then the jitter. The result is sorted by (Submit,
// ID); jobs is not changed. It fails when the window keeps no job, and
// for a jitter or window outside [0, MaxPerturbation].
func Perturb(jobs []Job, p Perturbation, seed uint64) ([]Job, error) {
	if p.Jitter < 0 || p.Jitter > MaxPerturbation || p.Window < 0 || p.Window > MaxPerturbation {
		return nil, fmt.Errorf("trace: perturbation %s: jitter and window must be within [0, %v]", p, MaxPerturbation)
	}
	out := slices.Clone(jobs)
	if p == (Perturbation{}) || len(out) == 0 {
		return out, nil
	}
	rng := rand.New(rand.NewPCG(seed, 0xbe27))
	lo, hi := out[0].Submit, out[0].Submit
	for i := range out {
		lo, hi = min(lo, out[i].Submit), max(hi, out[i].Submit)
	}
	if p.Window > 0 && hi-lo > p.Window {
		start := lo + time.Duration(rng.Int64N(int64(hi-lo-p.Window)+1))
		out = slices.DeleteFunc(out, func(j Job) bool { return j.Submit < start || j.Submit >= start+p.Window })
		if len(out) == 0 {
			return nil, errors.New("trace: the perturbation's window holds no job")
		}
	}
	if p.Bootstrap {
		src := out
		out = make([]Job, len(src))
		copies := make([]int, len(src))
		for i := range out {
			k := rng.IntN(len(src))
			out[i] = src[k]
			if copies[k]++; copies[k] > 1 {
				out[i].Spec.ID += "#b" + strconv.Itoa(copies[k]-1)
			}
		}
	}
	if p.Jitter > 0 {
		for i := range out {
			d := time.Duration(rng.Int64N(2*int64(p.Jitter)+1)) - p.Jitter
			out[i].Submit = max(lo, out[i].Submit+d)
		}
	}
	slices.SortStableFunc(out, func(a, b Job) int {
		return cmp.Or(cmp.Compare(a.Submit, b.Submit), strings.Compare(a.Spec.ID, b.Spec.ID))
	})
	return out, nil
}
