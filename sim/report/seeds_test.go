package report_test

import (
	"math"
	"testing"

	"github.com/gpusched/gpusched/sim/report"
)

// TestMedianCI: the distribution-free interval for the median by order
// statistics, worked by hand from binomial(n, ½).
func TestMedianCI(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want report.Interval
	}{
		// n = 5: [x(1), x(5)] covers 1 − 2/32 = 93.75% < 95%; nothing
		// narrower or wider exists: the range, coverage 0.9375.
		{"five", []float64{5, 1, 4, 2, 3}, report.Interval{N: 5, Median: 3, Lo: 1, Hi: 5, Coverage: 0.9375}},
		// n = 6: [x(1), x(6)] covers 1 − 2/64 = 96.9%; [x(2), x(5)]
		// 1 − 2·7/64 = 78.1%: the range.
		{"six", []float64{6, 1, 5, 2, 4, 3}, report.Interval{N: 6, Median: 3.5, Lo: 1, Hi: 6, Coverage: 62.0 / 64}},
		// n = 9: P(B ≤ 1) = 10/512, coverage of [x(2), x(8)] = 1 − 20/512
		// = 96.1%; P(B ≤ 2) = 46/512, [x(3), x(7)] 82%: [x(2), x(8)].
		{"nine", []float64{9, 8, 7, 6, 5, 4, 3, 2, 1}, report.Interval{N: 9, Median: 5, Lo: 2, Hi: 8, Coverage: 1 - 20.0/512}},
		{"one", []float64{7}, report.Interval{N: 1, Median: 7, Lo: 7, Hi: 7, Coverage: 0}},
		{"none", nil, report.Interval{}},
	} {
		got := report.MedianCI(tc.xs, 0.95)
		if got.N != tc.want.N || got.Median != tc.want.Median || got.Lo != tc.want.Lo || got.Hi != tc.want.Hi || math.Abs(got.Coverage-tc.want.Coverage) > 1e-12 {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
