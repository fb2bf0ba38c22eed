package main

import (
	"math"
	"slices"
)

// median returns the median of xs (the mean of the two middle values for
// an even count); NaN for none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread returns the largest distance of a sample from the median, as a
// fraction of the median: the "±" the table prints. 0 for fewer than two
// samples.
func spread(xs []float64) float64 {
	m := median(xs)
	if len(xs) < 2 || m == 0 {
		return 0
	}
	d := 0.0
	for _, x := range xs {
		d = max(d, math.Abs(x-m))
	}
	return d / m
}

// maxExact is the largest number of rank assignments mannWhitneyP
// enumerates; beyond it, it uses the normal approximation.
const maxExact = 1 << 20

// mannWhitneyP returns the two-sided p-value of the Mann-Whitney U test
// (Wilcoxon rank-sum) that samples a and b come from the same
// distribution. Ties get mid-ranks. For small samples (C(n1+n2, n1) ≤
// maxExact: up to 10 and 10) the p-value is exact, from every way of
// drawing len(a) of the pooled ranks; for larger ones it is the normal
// approximation with a tie correction. 1 when either sample is empty.
func mannWhitneyP(a, b []float64) float64 {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return 1
	}
	ranks := midRanks(a, b)
	obs := 0.0 // rank sum of a
	for _, r := range ranks[:n1] {
		obs += r
	}
	mean := float64(n1) * float64(n1+n2+1) / 2
	dev := math.Abs(obs - mean)
	if binomial(n1+n2, n1) <= maxExact {
		var total, extreme float64
		enumerateSums(ranks, n1, func(sum float64) {
			total++
			if math.Abs(sum-mean) >= dev-1e-9 {
				extreme++
			}
		})
		return extreme / total
	}
	// Normal approximation, with the tie correction of the variance.
	n := float64(n1 + n2)
	tie := tieTerm(ranks)
	v := float64(n1) * float64(n2) / 12 * ((n + 1) - tie/(n*(n-1)))
	if v <= 0 {
		return 1
	}
	z := dev / math.Sqrt(v)
	return math.Min(1, math.Erfc(z/math.Sqrt2))
}

// midRanks ranks the pooled samples a then b (1-based), giving tied
// values the mean of the ranks they span; the result lists a's ranks
// first.
func midRanks(a, b []float64) []float64 {
	type item struct {
		v float64
		i int
	}
	all := make([]item, 0, len(a)+len(b))
	for i, v := range a {
		all = append(all, item{v, i})
	}
	for i, v := range b {
		all = append(all, item{v, len(a) + i})
	}
	slices.SortStableFunc(all, func(x, y item) int {
		switch {
		case x.v < y.v:
			return -1
		case x.v > y.v:
			return 1
		}
		return 0
	})
	ranks := make([]float64, len(all))
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		r := float64(i+1+j) / 2 // mean of ranks i+1 … j
		for k := i; k < j; k++ {
			ranks[all[k].i] = r
		}
		i = j
	}
	return ranks
}

// tieTerm is Σ(t³ − t) over groups of t equal ranks.
func tieTerm(ranks []float64) float64 {
	s := slices.Clone(ranks)
	slices.Sort(s)
	sum := 0.0
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		t := float64(j - i)
		sum += t*t*t - t
		i = j
	}
	return sum
}

// enumerateSums calls f with the sum of every choice of k of ranks.
func enumerateSums(ranks []float64, k int, f func(float64)) {
	var rec func(start, left int, sum float64)
	rec = func(start, left int, sum float64) {
		if left == 0 {
			f(sum)
			return
		}
		for i := start; i <= len(ranks)-left; i++ {
			rec(i+1, left-1, sum+ranks[i])
		}
	}
	rec(0, k, 0)
}

// binomial returns C(n, k) as a float (large values are only compared).
func binomial(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
