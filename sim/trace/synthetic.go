package trace

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// Weighted is a value drawn with a relative weight.
type Weighted[T any] struct {
	Value  T
	Weight float64
}

// Synthetic describes a generated trace for scale tests: Poisson arrivals,
// job sizes drawn from a weighted table, log-normal run times clipped to a
// range, and queues drawn from a weighted table. The same Synthetic
// (Seed included) always yields the same jobs.
type Synthetic struct {
	// Seed seeds the generator (PCG).
	Seed uint64
	// Jobs is the number of jobs (≥ 1).
	Jobs int
	// MeanInterarrival is the mean time between arrivals (> 0); see
	// InterarrivalFor to derive it from a target load.
	MeanInterarrival time.Duration
	// Sizes are GPU counts per job with weights; nil means a Philly-like
	// mix: 1 GPU 70%, 2 10%, 4 9%, 8 8%, 16 2%, 32 1%.
	Sizes []Weighted[int]
	// MedianDuration and DurationSigma parametrise the log-normal run
	// time; zero means 30 minutes and 1.5. Draws are clipped to
	// [MinDuration, MaxDuration]; zero means 1 minute and 7 days.
	MedianDuration time.Duration
	DurationSigma  float64
	MinDuration    time.Duration
	MaxDuration    time.Duration
	// Queues are tenant names with weights; nil means one queue,
	// "default".
	Queues []Weighted[string]
	// Priorities are job priorities with weights, e.g. {0, 0.8}, {10,
	// 0.2} for a fifth of high-priority jobs; nil means every job has
	// priority 0. They are drawn from a stream of their own, so the
	// same Synthetic with and without Priorities yields the same jobs
	// but for their priorities.
	Priorities []Weighted[int32]
	// Shape turns GPU counts into task groups.
	Shape Shape
}

// HighPriority returns priorities for Synthetic.Priorities: a share
// (0..1) of jobs at priority prio, the rest at 0; nil for share 0.
func HighPriority(share float64, prio int32) []Weighted[int32] {
	if share == 0 {
		return nil
	}
	return []Weighted[int32]{{0, 1 - share}, {prio, share}}
}

// DefaultSizes is the size mix Synthetic uses when Sizes is nil.
var DefaultSizes = []Weighted[int]{{1, 70}, {2, 10}, {4, 9}, {8, 8}, {16, 2}, {32, 1}}

func (s Synthetic) withDefaults() Synthetic {
	if s.Sizes == nil {
		s.Sizes = DefaultSizes
	}
	if s.MedianDuration == 0 {
		s.MedianDuration = 30 * time.Minute
	}
	if s.DurationSigma == 0 {
		s.DurationSigma = 1.5
	}
	if s.MinDuration == 0 {
		s.MinDuration = time.Minute
	}
	if s.MaxDuration == 0 {
		s.MaxDuration = 7 * 24 * time.Hour
	}
	if s.Queues == nil {
		s.Queues = []Weighted[string]{{"default", 1}}
	}
	return s
}

// Validate reports the first field out of range.
func (s Synthetic) Validate() error {
	s = s.withDefaults()
	bad := func(f string, a ...any) error { return fmt.Errorf("trace: synthetic: "+f, a...) }
	switch {
	case s.Jobs < 1:
		return bad("jobs %d; want at least 1", s.Jobs)
	case s.MeanInterarrival <= 0:
		return bad("mean interarrival %v; want > 0", s.MeanInterarrival)
	case s.MedianDuration <= 0 || s.DurationSigma < 0 || math.IsNaN(s.DurationSigma) || s.DurationSigma > 10:
		return bad("duration median %v, sigma %g: want median > 0 and sigma in 0..10", s.MedianDuration, s.DurationSigma)
	case s.MinDuration <= 0 || s.MaxDuration < s.MinDuration:
		return bad("duration range [%v, %v] is empty or not positive", s.MinDuration, s.MaxDuration)
	}
	if err := checkWeights("sizes", s.Sizes, func(v int) bool { return v >= 0 && v <= maxJobGPUs }); err != nil {
		return err
	}
	if err := checkWeights("queues", s.Queues, func(string) bool { return true }); err != nil {
		return err
	}
	if s.Priorities != nil {
		return checkWeights("priorities", s.Priorities, func(int32) bool { return true })
	}
	return nil
}

func checkWeights[T any](name string, ws []Weighted[T], ok func(T) bool) error {
	sum := 0.0
	for i, w := range ws {
		if !(w.Weight >= 0) || math.IsInf(w.Weight, 0) || !ok(w.Value) {
			return fmt.Errorf("trace: synthetic: %s[%d]: value %v weight %g out of range", name, i, w.Value, w.Weight)
		}
		sum += w.Weight
	}
	if !(sum > 0) {
		return fmt.Errorf("trace: synthetic: %s: weights sum to zero", name)
	}
	return nil
}

// MeanGPUSeconds returns the expected GPU-seconds of one job (size times
// run time, the clipping of run times ignored).
func (s Synthetic) MeanGPUSeconds() float64 {
	s = s.withDefaults()
	var sum, mean float64
	for _, w := range s.Sizes {
		sum += w.Weight
		mean += w.Weight * float64(w.Value)
	}
	mean /= sum
	d := s.MedianDuration.Seconds() * math.Exp(s.DurationSigma*s.DurationSigma/2)
	return mean * d
}

// InterarrivalFor returns the mean interarrival that offers load (1.0 =
// 100%) to a cluster of gpus GPUs.
func (s Synthetic) InterarrivalFor(gpus int, load float64) time.Duration {
	if gpus <= 0 || !(load > 0) {
		return 0
	}
	return time.Duration(s.MeanGPUSeconds() / (load * float64(gpus)) * float64(time.Second))
}

// SyntheticReader yields the jobs of a Synthetic.
type SyntheticReader struct {
	s      Synthetic
	rng    *rand.Rand
	prng   *rand.Rand // priorities
	prios  []float64
	i      int
	t      time.Duration
	sizes  []float64
	queues []float64
	stats  Stats
}

// NewSynthetic validates s and returns a reader of its jobs.
func NewSynthetic(s Synthetic) (*SyntheticReader, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	r := &SyntheticReader{s: s, rng: rand.New(rand.NewPCG(s.Seed, 0x5eed)), sizes: cumulative(s.Sizes), queues: cumulative(s.Queues)}
	if s.Priorities != nil {
		r.prng, r.prios = rand.New(rand.NewPCG(s.Seed, 0x9a10)), cumulative(s.Priorities)
	}
	return r, nil
}

func cumulative[T any](ws []Weighted[T]) []float64 {
	out := make([]float64, len(ws))
	sum := 0.0
	for i, w := range ws {
		sum += w.Weight
		out[i] = sum
	}
	return out
}

func pick(cum []float64, u float64) int {
	x := u * cum[len(cum)-1]
	for i, c := range cum {
		if x < c {
			return i
		}
	}
	return len(cum) - 1
}

// Next returns the next job, or io.EOF after Jobs jobs.
func (r *SyntheticReader) Next() (Job, error) {
	if r.i >= r.s.Jobs {
		return Job{}, io.EOF
	}
	s := &r.s
	r.i++
	if r.i > 1 {
		r.t += time.Duration(r.rng.ExpFloat64() * float64(s.MeanInterarrival))
	}
	gpus := s.Sizes[pick(r.sizes, r.rng.Float64())].Value
	q := s.Queues[pick(r.queues, r.rng.Float64())].Value
	d := time.Duration(float64(s.MedianDuration) * math.Exp(s.DurationSigma*r.rng.NormFloat64()))
	d = max(s.MinDuration, min(s.MaxDuration, d))
	d = d.Round(time.Second)
	if d <= 0 {
		d = time.Second
	}
	r.stats.Read++
	j := Job{Spec: s.Shape.job("syn-"+strconv.Itoa(r.i), q, gpus, 0, 0, 0), Submit: r.t, Duration: d, Line: r.i}
	if r.prng != nil {
		j.Spec.Priority = s.Priorities[pick(r.prios, r.prng.Float64())].Value
	}
	return j, nil
}

// Stats returns the number of jobs generated so far.
func (r *SyntheticReader) Stats() Stats { return r.stats }
