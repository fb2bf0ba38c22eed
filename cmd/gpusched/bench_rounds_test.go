package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/benchmarks"
)

// fakeResult is a successful run of c whose time per op is ns.
func fakeResult(c benchmarks.Case, ns int64) benchmarks.Result {
	return benchmarks.Result{Case: c, R: testing.BenchmarkResult{N: 1, T: time.Duration(ns)}}
}

// --count N runs N interleaved rounds: every case once per round, in
// order; a case that fails or is skipped leaves the later rounds; the
// cases that need the heap to themselves (OwnHeap) run after the others'
// rounds, in rounds of their own, so the others' cached fixtures are
// built once, not once per round.
func TestBenchRoundsInterleaved(t *testing.T) {
	cases := []benchmarks.Case{
		{Name: "A"},
		{Name: "Mem", OwnHeap: true},
		{Name: "B"},
		{Name: "Fails"},
		{Name: "Skipped"},
		{Name: "Mem2", OwnHeap: true},
	}
	var calls []string
	rounds := map[string][]int{}
	res := benchRounds(cases, 3, func(c benchmarks.Case, round int) benchmarks.Result {
		calls = append(calls, c.Name)
		rounds[c.Name] = append(rounds[c.Name], round)
		switch {
		case c.Name == "Fails" && round == 2:
			return benchmarks.Result{Case: c, Err: errors.New("boom")}
		case c.Name == "Skipped":
			return benchmarks.Result{Case: c, Err: errors.New("no data"), Skipped: true}
		}
		return fakeResult(c, 10)
	})
	want := []string{
		"A", "B", "Fails", "Skipped", // round 1
		"A", "B", "Fails", // round 2: Skipped left
		"A", "B", // round 3: Fails left
		"Mem", "Mem2", "Mem", "Mem2", "Mem", "Mem2", // the OwnHeap cases' rounds
	}
	if !slices.Equal(calls, want) {
		t.Errorf("call order\n got %v\nwant %v", calls, want)
	}
	if !slices.Equal(rounds["A"], []int{1, 2, 3}) || !slices.Equal(rounds["Mem2"], []int{1, 2, 3}) {
		t.Errorf("rounds %v", rounds)
	}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d", len(res), len(want))
	}
	for i, r := range res {
		if r.Case.Name != want[i] {
			t.Errorf("result %d is %s, want %s", i, r.Case.Name, want[i])
		}
	}
	// One round: each case once, the order of the selection but OwnHeap last.
	calls = nil
	benchRounds(cases[:3], 1, func(c benchmarks.Case, _ int) benchmarks.Result {
		calls = append(calls, c.Name)
		return fakeResult(c, 1)
	})
	if !slices.Equal(calls, []string{"A", "B", "Mem"}) {
		t.Errorf("one round: %v", calls)
	}
}

// Each figure carries its spread: the median of the runs, their smallest
// and largest, and how many there were, in the JSON (new fields beside the
// old ones) and in the table.
func TestBenchFiguresCarrySpread(t *testing.T) {
	c := benchmarks.Case{Name: "X/y", Figures: []benchmarks.Figure{{Unit: "µs/op", Target: 2, Issue: 29}}}
	other := benchmarks.Case{Name: "Other", Figures: []benchmarks.Figure{{Unit: "ns/op", Target: 1, Issue: 29}}}
	// Interleaved: X/y, Other, X/y, Other, X/y; one failed run of X/y
	// counts for nothing.
	results := []benchmarks.Result{
		fakeResult(c, 3000), fakeResult(other, 7),
		fakeResult(c, 1000), fakeResult(other, 9),
		{Case: c, Err: errors.New("flaky")},
		fakeResult(c, 6000),
	}
	figs, missed := collectFigures(results)
	if len(figs) != 2 || missed != 2 {
		t.Fatalf("figures %+v, missed %d", figs, missed)
	}
	x := figs[0]
	if x.Name != "X/y" || x.Value != 3 || x.Min != 1 || x.Max != 6 || x.Runs != 3 || x.OK {
		t.Errorf("X/y: %+v", x)
	}
	if o := figs[1]; o.Name != "Other" || o.Value != 8 || o.Min != 7 || o.Max != 9 || o.Runs != 2 {
		t.Errorf("Other: %+v", o)
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(x); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	// The fields of before are all there, unchanged; min, max and runs
	// are new.
	for k, v := range map[string]any{"name": "X/y", "value": 3.0, "unit": "µs/op", "target": 2.0, "better": "lower", "ok": false, "issue": 29.0, "min": 1.0, "max": 6.0, "runs": 3.0} {
		if m[k] != v {
			t.Errorf("JSON %s = %v, want %v (%s)", k, m[k], v, buf.String())
		}
	}
	var out bytes.Buffer
	printBenchTable(&out, results, figs)
	if !regexp.MustCompile(`(?m)^X/y\s+3\s+\[1–6\]\s+3\s+µs/op\s+≤ 2\s+MISSED$`).MatchString(out.String()) ||
		!regexp.MustCompile(`(?m)^Other\s+8\s+\[7–9\]\s+2\s+ns/op`).MatchString(out.String()) ||
		!strings.HasPrefix(out.String(), "name ") || !strings.Contains(strings.SplitN(out.String(), "\n", 2)[0], "[min–max]") {
		t.Errorf("table:\n%s", out.String())
	}
}
