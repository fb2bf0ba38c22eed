package main

import (
	"bytes"
	"strings"
	"testing"
)

// fakeMeasure returns a measure function that serves synthetic samples,
// no benchmark run: each call is one measurement pass (the first, then
// the confirmation); slow[k] is the factor by which the working tree is
// slower than the base in pass k, for every case of the groups asked for.
// It records the groups each pass measured.
func fakeMeasure(slow []float64, passes *[][]string) measureFunc {
	return func(gs []group, rounds int) ([]string, [2]map[string][]float64, map[string]int, error) {
		k := len(*passes)
		var benches []string
		samples := [2]map[string][]float64{{}, {}}
		from := map[string]int{}
		var order []string
		for gi, g := range gs {
			benches = append(benches, g.bench)
			name := strings.Trim(g.bench, "^$")
			order = append(order, name)
			from[name] = gi
			for r := range rounds {
				jitter := 1 + 0.01*float64(r%3) // ±1%: an idle machine's noise
				samples[0][name] = append(samples[0][name], 1000*jitter)
				samples[1][name] = append(samples[1][name], 1000*jitter*slow[k])
			}
		}
		*passes = append(*passes, benches)
		return order, samples, from, nil
	}
}

// The guard fails on an injected slowdown: a working tree 30% slower than
// its base in both passes (the measurement and its confirmation) fails
// with the table printed; the same case within the tolerance passes; a
// slowdown in the first pass that the confirmation does not repeat (a
// burst of load) passes; only the regressed cases are measured again.
func TestDecideInjectedSlowdown(t *testing.T) {
	gs := []group{{bench: "^Fast$", benchtime: "1x"}, {bench: "^Slow$", benchtime: "1x"}}
	for _, c := range []struct {
		name      string
		slowFirst float64 // the factor of the first pass for ^Slow$
		slowAgain float64 // and of the confirmation
		code      int
		passes    int
		want      string
	}{
		{"injected slowdown", 1.3, 1.3, 1, 2, "benchguard: FAIL: regressed twice: Slow"},
		{"within tolerance", 1.05, 1.05, 0, 1, "benchguard: ok"},
		{"a burst of load, not repeated", 1.3, 1.0, 0, 2, "did not repeat: noise"},
		{"faster", 0.7, 0.7, 0, 1, "faster"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var passes [][]string
			fake := fakeMeasure([]float64{c.slowFirst, c.slowAgain}, &passes)
			// Only ^Slow$ changes; ^Fast$ is the same on both sides.
			measure := func(g []group, rounds int) ([]string, [2]map[string][]float64, map[string]int, error) {
				order, s, from, err := fake(g, rounds)
				if f, ok := s[0]["Fast"]; ok {
					s[1]["Fast"] = append([]float64(nil), f...)
				}
				return order, s, from, err
			}
			var out bytes.Buffer
			code, err := decide(&out, gs, 5, 0.10, 0.05, measure)
			if err != nil {
				t.Fatal(err)
			}
			if code != c.code || len(passes) != c.passes || !strings.Contains(out.String(), c.want) {
				t.Errorf("exit %d (want %d), %d passes (want %d), output:\n%s", code, c.code, len(passes), c.passes, out.String())
			}
			if !strings.Contains(out.String(), "new/base") {
				t.Errorf("no table:\n%s", out.String())
			}
			// The confirmation measures the regressed case's group alone.
			if len(passes) == 2 && (len(passes[1]) != 1 || passes[1][0] != "^Slow$") {
				t.Errorf("confirmation measured %v", passes[1])
			}
		})
	}
}
