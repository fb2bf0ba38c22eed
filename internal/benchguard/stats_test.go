package main

import (
	"math"
	"testing"
)

func TestMedianSpread(t *testing.T) {
	if m := median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median odd = %v, want 3", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median even = %v, want 2.5", m)
	}
	// median 10, farthest sample 12: ±20%.
	if s := spread([]float64{9, 10, 12}); math.Abs(s-0.2) > 1e-12 {
		t.Errorf("spread = %v, want 0.2", s)
	}
}

func TestMannWhitneyP(t *testing.T) {
	cases := []struct {
		name string
		a, b []float64
		want float64
	}{
		// Complete separation, 5 and 5: 2 of C(10,5)=252 orderings are
		// as extreme (all a below, all a above): p = 2/252.
		{"separated", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 2.0 / 252},
		{"separated-reversed", []float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5}, 2.0 / 252},
		// Interleaved perfectly: rank sums 1+3+5+7+9=25 vs mean 27.5;
		// well within the noise.
		{"interleaved", []float64{1, 3, 5, 7, 9}, []float64{2, 4, 6, 8, 10}, -1},
		// All equal: every choice has the same sum: p = 1.
		{"all-tied", []float64{1, 1, 1}, []float64{1, 1, 1}, 1},
		{"empty", nil, []float64{1}, 1},
	}
	for _, c := range cases {
		p := mannWhitneyP(c.a, c.b)
		if c.want < 0 {
			if p < 0.5 {
				t.Errorf("%s: p = %v, want a large p", c.name, p)
			}
			continue
		}
		if math.Abs(p-c.want) > 1e-12 {
			t.Errorf("%s: p = %v, want %v", c.name, p, c.want)
		}
	}
	// 3 and 3 separated: 2/C(6,3) = 0.1: never significant at 0.05,
	// which is why the guard runs at least 5 rounds.
	if p := mannWhitneyP([]float64{1, 2, 3}, []float64{4, 5, 6}); math.Abs(p-0.1) > 1e-12 {
		t.Errorf("3v3 separated: p = %v, want 0.1", p)
	}
	// Large samples take the normal approximation: separated 30 and 30
	// gives a tiny p.
	var a, b []float64
	for i := range 30 {
		a = append(a, float64(i))
		b = append(b, float64(100+i))
	}
	if p := mannWhitneyP(a, b); p > 1e-6 {
		t.Errorf("30v30 separated (normal approximation): p = %v", p)
	}
}

func TestParseBenchLine(t *testing.T) {
	name, ns, ok := parseBenchLine("BenchmarkPreempt/plan-512gpu-tor/100k-tor64-2   \t     100\t   6135856 ns/op\t     11058 jobs\t   41488 B/op\t      22 allocs/op")
	if !ok || name != "Preempt/plan-512gpu-tor/100k-tor64" || ns != 6135856 {
		t.Errorf("got %q %v %v", name, ns, ok)
	}
	if _, _, ok := parseBenchLine("PASS"); ok {
		t.Error("PASS parsed as a result")
	}
	// A single-CPU run has no -N suffix; 100k must stay.
	name, _, ok = parseBenchLine("BenchmarkPlace/topology/256gpu-tor/100k \t 10 \t 44239 ns/op")
	if !ok || name != "Place/topology/256gpu-tor/100k" {
		t.Errorf("no suffix: got %q %v", name, ok)
	}
}
