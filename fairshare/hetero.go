package fairshare

import (
	"errors"
	"fmt"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// HeteroJob is one job for [HeteroMaxMin]: how many GPUs it runs on and
// its throughput on each GPU model (any unit, e.g. iterations per second
// or a speed factor relative to a reference model; 0: it cannot run on
// that model). Throughput[m] is for HeteroCluster.GPUs[m].
type HeteroJob struct {
	ID         string
	GPUs       int
	Throughput []float64
	// Count is how many identical jobs this one stands for (0: one). They
	// share one row of the allocation — each gets Time[j] — and count
	// Count times in the equal share, in the capacity used and in the sum
	// of normalised throughputs: a round's jobs grouped by (type, GPUs)
	// give the same allocation as the jobs one by one, with a program of
	// the groups' size.
	Count int
}

// count is j's Count, at least 1.
func (j *HeteroJob) count() float64 { return float64(max(j.Count, 1)) }

// HeteroCluster is how many GPUs of each model the cluster has.
type HeteroCluster struct {
	Models []string // names, for output
	GPUs   []int    // GPUs[m] of model Models[m]
}

// HeteroAllocation is the share of time each job spends on each model:
// Time[j][m] in [0, 1], Σ_m Time[j][m] ≤ 1, and Σ_j GPUs_j × Time[j][m] ≤
// the model's GPUs. Normalised[j] is job j's effective throughput
// Σ_m Time[j][m] × Throughput[j][m] over its throughput with an equal
// share of the cluster (1: as good as an equal share); MinNormalised is
// the smallest of them.
type HeteroAllocation struct {
	Time          [][]float64
	Normalised    []float64
	MinNormalised float64
}

// Preferred returns the models job j runs on, most time first (ties: lower
// index), leaving out those it gets no time on: the order of models an
// embedder lets the job accept (workload.TaskGroup.Models), or the first
// one it pins it to.
func (a *HeteroAllocation) Preferred(j int) []int {
	var ms []int
	for m, x := range a.Time[j] {
		if x > 1e-6 {
			ms = append(ms, m)
		}
	}
	slices.SortStableFunc(ms, func(p, q int) int {
		switch d := a.Time[j][p] - a.Time[j][q]; {
		case d > 1e-6:
			return -1
		case d < -1e-6:
			return 1
		}
		return 0
	})
	return ms
}

// ErrHetero is the sentinel of HeteroMaxMin's input errors.
var ErrHetero = errors.New("fairshare: bad heterogeneous allocation input")

// HeteroMaxMin is a heterogeneity-aware max-min fair allocation in the
// spirit of Gavel (Narayanan et al., "Heterogeneity-Aware Cluster
// Scheduling Policies for Deep Learning Workloads", OSDI'20, §4.1): it
// chooses each job's share of time on each GPU model so as to maximise the
// smallest normalised effective throughput — a job's throughput under the
// allocation over its throughput with an equal share of every model —
// and then, keeping every job at that minimum, the sum of the normalised
// throughputs (so capacity no one's minimum needs goes where it runs
// fastest). Jobs that run faster on a model get more of it when that
// helps the slowest job. The equal share of job j gives it n-th of each
// model's GPUs (n jobs, Counts included) as time C_m / (n × GPUs_j), scaled down so its
// total time is at most 1. A job that fits no model (more GPUs than any
// model with a positive throughput has) gets no time and normalised
// throughput 0, and is left out of the minimum.
//
// Two linear programs solved by the simplex method (gonum); size (jobs ×
// models) variables and 2 × jobs + models constraints: meant for the tens
// to hundreds of jobs of a scheduling round, as Gavel. Deterministic.
// Errors: mismatched lengths or negative inputs (ErrHetero), or the
// solver's.
func HeteroMaxMin(jobs []HeteroJob, c HeteroCluster) (*HeteroAllocation, error) {
	nm := len(c.GPUs)
	if len(c.Models) != nm {
		return nil, fmt.Errorf("%w: %d model names for %d GPU counts", ErrHetero, len(c.Models), nm)
	}
	for m, g := range c.GPUs {
		if g < 0 {
			return nil, fmt.Errorf("%w: model %s: %d GPUs", ErrHetero, c.Models[m], g)
		}
	}
	a := &HeteroAllocation{Time: make([][]float64, len(jobs)), Normalised: make([]float64, len(jobs))}
	// tp[j][m]: the throughput that counts (0 where j does not fit).
	tp := make([][]float64, len(jobs))
	equal := make([]float64, len(jobs))
	var live []int
	for j, jb := range jobs {
		a.Time[j] = make([]float64, nm)
		if len(jb.Throughput) != nm {
			return nil, fmt.Errorf("%w: job %s: %d throughputs for %d models", ErrHetero, jb.ID, len(jb.Throughput), nm)
		}
		if jb.GPUs <= 0 {
			return nil, fmt.Errorf("%w: job %s: %d GPUs", ErrHetero, jb.ID, jb.GPUs)
		}
		if jb.Count < 0 {
			return nil, fmt.Errorf("%w: job %s: count %d", ErrHetero, jb.ID, jb.Count)
		}
		tp[j] = make([]float64, nm)
		for m, x := range jb.Throughput {
			if x < 0 {
				return nil, fmt.Errorf("%w: job %s: model %s: throughput %g", ErrHetero, jb.ID, c.Models[m], x)
			}
			if jb.GPUs <= c.GPUs[m] {
				tp[j][m] = x
			}
		}
	}
	var n float64
	for j := range jobs {
		n += jobs[j].count()
	}
	for j, jb := range jobs {
		var total float64
		for m := range nm {
			if tp[j][m] > 0 {
				total += float64(c.GPUs[m]) / (n * float64(jb.GPUs))
			}
		}
		scale := 1.0
		if total > 1 {
			scale = 1 / total
		}
		for m := range nm {
			if tp[j][m] > 0 {
				equal[j] += scale * float64(c.GPUs[m]) / (n * float64(jb.GPUs)) * tp[j][m]
			}
		}
		if equal[j] > 0 {
			live = append(live, j)
		}
	}
	if len(live) == 0 {
		return a, nil
	}
	// Variables: x[k][m] for live job k (k*nm+m), then (stage 1) t, then
	// one slack per row.
	nl := len(live)
	nx := nl * nm
	rows := 2*nl + nm
	build := func(stage2 bool, tmin float64) ([]float64, *mat.Dense, []float64) {
		tc := 1 // the t column, stage 1 only
		if stage2 {
			tc = 0
		}
		nv := nx + tc + rows
		A := mat.NewDense(rows, nv, nil)
		b := make([]float64, rows)
		cost := make([]float64, nv)
		r := 0
		for k, j := range live {
			// stage 1: t − Σ_m x tp/E + s = 0; stage 2: Σ_m x tp/E − s = tmin (t unused).
			sign := -1.0
			if stage2 {
				sign = 1
			} else {
				A.Set(r, nx, 1)
			}
			for m := range nm {
				A.Set(r, k*nm+m, sign*tp[j][m]/equal[j])
				if stage2 {
					cost[k*nm+m] -= jobs[j].count() * tp[j][m] / equal[j]
				}
			}
			if stage2 {
				A.Set(r, nx+tc+r, -1)
				b[r] = tmin
			} else {
				A.Set(r, nx+tc+r, 1)
			}
			r++
		}
		for m := range nm {
			for k, j := range live {
				A.Set(r, k*nm+m, jobs[j].count()*float64(jobs[j].GPUs))
			}
			A.Set(r, nx+tc+r, 1)
			b[r] = float64(c.GPUs[m])
			r++
		}
		for k := range live {
			for m := range nm {
				A.Set(r, k*nm+m, 1)
			}
			A.Set(r, nx+tc+r, 1)
			b[r] = 1
			r++
		}
		if !stage2 {
			cost[nx] = -1
		}
		return cost, A, b
	}
	const tol = 1e-10
	cost, A, b := build(false, 0)
	opt, _, err := lp.Simplex(cost, A, b, tol, nil)
	if err != nil {
		return nil, fmt.Errorf("fairshare: HeteroMaxMin: max-min stage: %w", err)
	}
	tstar := -opt
	cost, A, b = build(true, tstar*(1-1e-9))
	_, x, err := lp.Simplex(cost, A, b, tol, nil)
	if err != nil {
		return nil, fmt.Errorf("fairshare: HeteroMaxMin: throughput stage: %w", err)
	}
	a.MinNormalised = -1
	for k, j := range live {
		var eff float64
		for m := range nm {
			v := min(max(x[k*nm+m], 0), 1)
			if tp[j][m] == 0 {
				v = 0 // time where it cannot run gains nothing; free it
			}
			a.Time[j][m] = v
			eff += v * tp[j][m]
		}
		a.Normalised[j] = eff / equal[j]
		if a.MinNormalised < 0 || a.Normalised[j] < a.MinNormalised {
			a.MinNormalised = a.Normalised[j]
		}
	}
	return a, nil
}
