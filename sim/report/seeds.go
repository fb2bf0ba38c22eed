package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/gpusched/gpusched/sim"
)

// Interval is a median over replications (seeds) with a distribution-free
// confidence interval: the order statistics x(j) ≤ median ≤ x(k) chosen
// so that P(x(j) ≤ true median ≤ x(k)) ≥ the level asked for, from the
// binomial(n, ½) distribution, as narrow as that allows. With too few
// replications for the level (fewer than 6 for 95%) the interval is the
// whole range and Coverage says how sure it is.
type Interval struct {
	N        int     `json:"n"`
	Median   float64 `json:"median"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Coverage float64 `json:"coverage"`
}

// MedianCI returns the median of xs and its confidence interval at level
// (e.g. 0.95). xs is not changed. O(n log n).
func MedianCI(xs []float64, level float64) Interval {
	n := len(xs)
	if n == 0 {
		return Interval{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	iv := Interval{N: n}
	if n%2 == 1 {
		iv.Median = s[n/2]
	} else {
		iv.Median = (s[n/2-1] + s[n/2]) / 2
	}
	// Coverage of [x(j), x(n+1−j)] (1-based) is 1 − 2·P(B ≤ j−1), B ~
	// binomial(n, ½). Take the largest j that keeps it ≥ level.
	cdf := func(k int) float64 { // P(B ≤ k)
		var p float64
		for i := 0; i <= k; i++ {
			p += binom(n, i)
		}
		return p / math.Pow(2, float64(n))
	}
	j := 1
	for j+1 <= (n+1)/2 && 1-2*cdf(j) >= level {
		j++
	}
	iv.Lo, iv.Hi = s[j-1], s[n-j]
	iv.Coverage = 1 - 2*cdf(j-1)
	return iv
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// SeedMetric is one metric aggregated over seeds.
type SeedMetric struct {
	Name string
	Get  func(*sim.Summary) float64
	Fmt  func(float64) string
}

// SeedMetrics are the metrics WriteSeedTable aggregates.
var SeedMetrics = []SeedMetric{
	{"queue wait mean", func(s *sim.Summary) float64 { return s.Wait.Mean }, secs},
	{"queue wait p95", func(s *sim.Summary) float64 { return s.Wait.P95 }, secs},
	{"total wait mean", func(s *sim.Summary) float64 { return s.TotalWait.Mean }, secs},
	{"JCT mean", func(s *sim.Summary) float64 { return s.JCT.Mean }, secs},
	{"JCT p95", func(s *sim.Summary) float64 { return s.JCT.P95 }, secs},
	{"still waiting at the end", func(s *sim.Summary) float64 { return float64(s.StillWaiting.Jobs) }, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }},
	{"GPU allocation (whole run)", func(s *sim.Summary) float64 { return s.AllocationRate }, pct},
	{"allocation while jobs wait", func(s *sim.Summary) float64 { return s.BusyAllocation }, pct},
	{"fairness per window (Jain)", func(s *sim.Summary) float64 { return s.Fairness.WindowJain }, num},
	{"finish-time fairness ρ p95", func(s *sim.Summary) float64 { return s.FinishTimeFairness.P95 }, num},
	{"preemptions", func(s *sim.Summary) float64 { return float64(s.Preemption.Preemptions) }, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }},
}

// SeedRuns are one label's summaries, one per seed.
type SeedRuns struct {
	Label string
	Runs  []sim.Summary
}

// SeedStats returns each SeedMetric's median and 95% interval for r.
func SeedStats(r SeedRuns) map[string]Interval {
	out := map[string]Interval{}
	for _, m := range SeedMetrics {
		xs := make([]float64, len(r.Runs))
		for i := range r.Runs {
			xs[i] = m.Get(&r.Runs[i])
		}
		out[m.Name] = MedianCI(xs, 0.95)
	}
	return out
}

// WriteSeedTable writes, for each label, every SeedMetric as "median
// [lo, hi]" over its seeds, and a last row with the intervals' coverage.
func WriteSeedTable(w io.Writer, labels []SeedRuns) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "metric (median [95% CI] over seeds)")
	stats := make([]map[string]Interval, len(labels))
	for i, l := range labels {
		fmt.Fprint(tw, "\t"+l.Label)
		stats[i] = SeedStats(l)
	}
	fmt.Fprintln(tw)
	for _, m := range SeedMetrics {
		fmt.Fprint(tw, m.Name)
		for i := range labels {
			iv := stats[i][m.Name]
			fmt.Fprintf(tw, "\t%s [%s, %s]", m.Fmt(iv.Median), m.Fmt(iv.Lo), m.Fmt(iv.Hi))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "seeds / interval coverage")
	for i := range labels {
		iv := stats[i][SeedMetrics[0].Name]
		fmt.Fprintf(tw, "\t%d / %s", iv.N, pct(iv.Coverage))
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// PairedStats returns, for each SeedMetric, the median of other − base
// over their seeds, paired seed by seed (the i-th run of each: the same
// seed, so the same trace and random draws), with its 95% interval. The
// runs must be in the same seed order; extra runs of the longer are left
// out. An interval that excludes 0 says the difference is the policies',
// not the seeds'.
func PairedStats(base, other SeedRuns) map[string]Interval {
	n := min(len(base.Runs), len(other.Runs))
	out := map[string]Interval{}
	for _, m := range SeedMetrics {
		xs := make([]float64, n)
		for i := range n {
			xs[i] = m.Get(&other.Runs[i]) - m.Get(&base.Runs[i])
		}
		out[m.Name] = MedianCI(xs, 0.95)
	}
	return out
}

// WritePairedTable writes, for each label after the first, every
// SeedMetric's paired difference from the first label (PairedStats) as
// "median [lo, hi]".
func WritePairedTable(w io.Writer, labels []SeedRuns) error {
	if len(labels) < 2 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "paired difference from %s (median [95%% CI] over seeds)", labels[0].Label)
	stats := make([]map[string]Interval, len(labels))
	for i := 1; i < len(labels); i++ {
		fmt.Fprint(tw, "\t"+labels[i].Label+" − "+labels[0].Label)
		stats[i] = PairedStats(labels[0], labels[i])
	}
	fmt.Fprintln(tw)
	for _, m := range SeedMetrics {
		fmt.Fprint(tw, m.Name)
		for i := 1; i < len(labels); i++ {
			iv := stats[i][m.Name]
			fmt.Fprintf(tw, "\t%s [%s, %s]", signed(m.Fmt, iv.Median), signed(m.Fmt, iv.Lo), signed(m.Fmt, iv.Hi))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// signed formats v with f, with a leading minus for negative values
// (the duration and share formats print magnitudes).
func signed(f func(float64) string, v float64) string {
	if v < 0 {
		return "−" + f(-v)
	}
	return f(v)
}
