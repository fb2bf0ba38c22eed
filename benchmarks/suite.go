package benchmarks

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Case is one benchmark of the suite.
type Case struct {
	// Name is the benchmark's name without the "Benchmark" prefix, as go
	// test prints it: the group, then sub-benchmark names separated by
	// "/", e.g. "Ledger/alloc-release/100k" (go test -bench prints
	// "BenchmarkLedger/alloc-release/100k-N"). Names are stable: CI
	// compares them across commits.
	Name string
	// Doc says in one line what is measured.
	Doc string
	// Size is the cluster size the case runs at: "1k", "10k", "100k"
	// (GPUs), or "" for cases with their own fixed cluster.
	Size string
	// Figures are the README performance-table figures the case produces,
	// each with its target; none for cases that only sweep sizes or
	// policies.
	Figures []Figure
	// BenchTime is the -benchtime gpusched bench uses by default: "1s"
	// for fast operations, "Nx" for cases whose fixture is rebuilt for
	// every operation or whose operation takes seconds.
	BenchTime string
	// Needs names data the case reads from outside the repository (see
	// DataDir): "philly". Empty when everything is built in.
	Needs string
	// OwnHeap marks a case that measures the process's memory: it drops
	// the cached fixtures first (DropFixtures), so that what other cases
	// built is not counted. gpusched bench --count runs such cases after
	// the rounds of all the others, lest those rebuild their fixtures
	// every round.
	OwnHeap bool
	// F is the benchmark function.
	F func(b *testing.B)
}

// Group returns the part of the name before the first "/": the go test
// benchmark function is "Benchmark" + Group.
func (c *Case) Group() string {
	g, _, _ := strings.Cut(c.Name, "/")
	return g
}

// Sub returns the part of the name after the group: the sub-benchmark
// name passed to b.Run.
func (c *Case) Sub() string {
	_, s, _ := strings.Cut(c.Name, "/")
	return s
}

// Available reports whether the data the case needs is present, with a
// message when it is not.
func (c *Case) Available() (bool, string) {
	switch c.Needs {
	case "":
		return true, ""
	case "philly":
		if _, err := phillyPaths(); err != nil {
			return false, err.Error()
		}
		return true, ""
	}
	return false, "needs " + c.Needs
}

// Better says which way a figure should go.
type Better uint8

const (
	// Lower is better: times, allocations, memory.
	Lower Better = iota
	// Higher is better: rates such as events per second.
	Higher
)

// String returns "lower" or "higher".
func (b Better) String() string {
	if b == Higher {
		return "higher"
	}
	return "lower"
}

// Figure is one number of the README's performance table: a metric of a
// Case, in Unit, with its target.
type Figure struct {
	// Unit is the unit the figure is reported in. Times are derived from
	// the benchmark's ns/op: "ns/op", "µs/op", "ms/op" or "s/op";
	// "allocs/op" and "B/op" come from -benchmem; any other unit is a
	// metric the benchmark reports with b.ReportMetric (e.g. "events/s",
	// "peak-MiB").
	Unit string
	// Target is the bound the figure must meet, in Unit; Better says
	// whether it is an upper (Lower) or lower (Higher) bound.
	Target float64
	Better Better
	// Issue is the project issue the target comes from.
	Issue int
	// Note qualifies the figure where the measured case differs from the
	// issue's wording (e.g. a variant of an infeasible fixture).
	Note string
}

// TargetString renders the bound: "≤ 300 ns/op", "≥ 1e+07 events/s".
func (f Figure) TargetString() string {
	op := "≤"
	if f.Better == Higher {
		op = "≥"
	}
	return fmt.Sprintf("%s %s %s", op, formatValue(f.Target), f.Unit)
}

// Value extracts the figure from a benchmark result; ok is false when the
// result lacks the metric (it was not run, or without -benchmem).
func (f Figure) Value(r testing.BenchmarkResult) (v float64, ok bool) {
	if r.N == 0 {
		return 0, false
	}
	ns := float64(r.T.Nanoseconds()) / float64(r.N)
	switch f.Unit {
	case "ns/op":
		return ns, true
	case "µs/op", "us/op":
		return ns / 1e3, true
	case "ms/op":
		return ns / 1e6, true
	case "s/op":
		return ns / 1e9, true
	case "allocs/op": // rounded down as go test prints it
		return float64(r.AllocsPerOp()), true
	case "B/op":
		return float64(r.AllocedBytesPerOp()), true
	}
	v, ok = r.Extra[f.Unit]
	return v, ok
}

// Met reports whether v meets the target.
func (f Figure) Met(v float64) bool {
	if f.Better == Higher {
		return v >= f.Target
	}
	return v <= f.Target
}

// formatValue prints a number compactly: about three significant digits,
// integers and numbers from 100 up without decimals, 1e7 and more with an
// exponent.
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e7:
		return fmt.Sprintf("%.3g", v)
	case v == math.Trunc(v) || a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// FormatValue renders a measured value the way the bench table prints it.
func FormatValue(v float64) string { return formatValue(v) }

// Cases returns every benchmark of the suite, in the order the README's
// performance table lists them: topology and ledger, placement, preemption,
// scheduling cycles, simulator. The slice is new on every call; the Cases'
// functions share cached fixtures.
func Cases() []Case {
	var cs []Case
	cs = append(cs, topologyCases()...)
	cs = append(cs, ledgerCases()...)
	cs = append(cs, placeCases()...)
	cs = append(cs, preemptCases()...)
	cs = append(cs, scheduleCases()...)
	cs = append(cs, simCases()...)
	cs = append(cs, liveCases()...)
	cs = append(cs, defragCases()...)
	return cs
}

// Groups returns the groups of Cases in order: the go test benchmark
// functions are "Benchmark" + each.
func Groups() []string {
	var gs []string
	for _, c := range Cases() {
		if g := c.Group(); !slices.Contains(gs, g) {
			gs = append(gs, g)
		}
	}
	return gs
}

// Select returns the cases whose name matches re (nil matches all),
// leaving out 100k-GPU cases when short is set, and cases without
// figures unless all is set.
func Select(re *regexp.Regexp, short, all bool) []Case {
	var out []Case
	for _, c := range Cases() {
		if re != nil && !re.MatchString(c.Name) {
			continue
		}
		if short && c.Size == "100k" {
			continue
		}
		if !all && len(c.Figures) == 0 {
			continue
		}
		out = append(out, c)
	}
	return out
}

// sizes are the cluster sizes of the sweeps: presets of dgx-h100 hosts,
// 32 per ToR, 16 ToRs per spine.
var sizes = []struct{ name, preset string }{
	{"1k", "h100-1k"},
	{"10k", "h100-10k"},
	{"100k", "h100-100k"},
}

// fig is shorthand for a figure with a lower-is-better target.
func fig(unit string, target float64, issue int) Figure {
	return Figure{Unit: unit, Target: target, Issue: issue}
}
