package benchmarks

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The suite's names are a contract (the README's table and CI compare
// them): unique, each in a group that has a Benchmark function, sizes and
// units valid.
func TestCases(t *testing.T) {
	groups := []string{"Topology", "Ledger", "Place", "Preempt", "Schedule", "Sim", "Live"} // the Benchmark functions of bench_test.go
	if got := Groups(); !slices.Equal(got, groups) {
		t.Errorf("groups %v, want %v (add a Benchmark function for a new group)", got, groups)
	}
	seen := map[string]bool{}
	figures := 0
	for _, c := range Cases() {
		if seen[c.Name] {
			t.Errorf("duplicate case %s", c.Name)
		}
		seen[c.Name] = true
		if strings.ContainsAny(c.Name, " \t") || c.Sub() == "" {
			t.Errorf("%s: bad name", c.Name)
		}
		if c.Doc == "" || c.F == nil {
			t.Errorf("%s: no doc or function", c.Name)
		}
		if !slices.Contains([]string{"", "1k", "10k", "100k"}, c.Size) {
			t.Errorf("%s: size %q", c.Name, c.Size)
		}
		if n, ok := strings.CutSuffix(c.BenchTime, "x"); ok {
			if n == "" || strings.Trim(n, "0123456789") != "" {
				t.Errorf("%s: benchtime %q", c.Name, c.BenchTime)
			}
		} else if _, err := time.ParseDuration(c.BenchTime); err != nil {
			t.Errorf("%s: benchtime %q", c.Name, c.BenchTime)
		}
		memory := false
		for _, f := range c.Figures {
			figures++
			if f.Unit == "" || f.Issue == 0 || f.Target < 0 {
				t.Errorf("%s: figure %+v", c.Name, f)
			}
			memory = memory || f.Unit == "peak-MiB"
		}
		// A case measuring the process's memory drops the cached fixtures:
		// gpusched bench --count must run it apart from the others.
		if memory != c.OwnHeap {
			t.Errorf("%s: peak-MiB figure %v but OwnHeap %v", c.Name, memory, c.OwnHeap)
		}
	}
	if figures < 20 {
		t.Errorf("only %d figures", figures)
	}
	if n := len(Select(nil, false, false)); n == 0 || n >= len(Cases()) {
		t.Errorf("Select of figure cases: %d of %d", n, len(Cases()))
	}
	for _, c := range Select(regexp.MustCompile("Place"), true, true) {
		if c.Size == "100k" || !strings.HasPrefix(c.Name, "Place/") {
			t.Errorf("Select(Place, short) gave %s", c.Name)
		}
	}
}

// A few small cases run in-process as gpusched bench runs them, so the
// suite cannot rot between benchmark runs.
func TestRunSmallCases(t *testing.T) {
	re := regexp.MustCompile(`^(Ledger/alloc-release/1k|Place/topology/1gpu/1k|Place/fgd/8gpu-host/1k|Preempt/plan-256gpu-tor/1k|Schedule/incremental-1000-pending/1k|Sim/engine-noop)$`)
	cases := Select(re, true, true)
	if len(cases) != 6 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		r := Run(c, "1x")
		if r.Err != nil || r.R.N != 1 {
			t.Errorf("%s: %v (N=%d)", c.Name, r.Err, r.R.N)
		}
		for _, f := range c.Figures {
			if _, ok := f.Value(r.R); !ok {
				t.Errorf("%s: no %s", c.Name, f.Unit)
			}
		}
	}
	// A failing case reports its message.
	bad := Case{Name: "X/fails", BenchTime: "1x", F: func(b *testing.B) { fatalf(b, "broken %d", 7) }}
	if r := Run(bad, ""); r.Err == nil || r.Err.Error() != "broken 7" || r.Skipped {
		t.Errorf("failing case: %+v", r)
	}
	if r := Run(Case{Name: "X/data", Needs: "nothing-here", F: func(*testing.B) {}}, ""); !r.Skipped {
		t.Errorf("case with missing data: %+v", r)
	}
}

func TestFigure(t *testing.T) {
	r := testing.BenchmarkResult{N: 4, T: 8 * time.Microsecond, MemAllocs: 3, MemBytes: 400, Extra: map[string]float64{"events/s": 5e6}}
	for _, c := range []struct {
		unit string
		want float64
	}{
		{"ns/op", 2000}, {"µs/op", 2}, {"ms/op", 0.002}, {"s/op", 2e-6},
		{"allocs/op", 0}, // 3/4 rounds down, as go test prints it
		{"B/op", 100}, {"events/s", 5e6},
	} {
		v, ok := Figure{Unit: c.unit}.Value(r)
		if !ok || v != c.want {
			t.Errorf("%s: %v %v, want %v", c.unit, v, ok, c.want)
		}
	}
	if _, ok := (Figure{Unit: "peak-MiB"}).Value(r); ok {
		t.Error("missing metric found")
	}
	hi := Figure{Unit: "events/s", Target: 1e7, Better: Higher}
	if hi.Met(5e6) || !hi.Met(2e7) || hi.TargetString() != "≥ 1e+07 events/s" {
		t.Errorf("%+v", hi)
	}
	lo := fig("ns/op", 300, 2)
	if !lo.Met(300) || lo.Met(301) || lo.TargetString() != "≤ 300 ns/op" {
		t.Errorf("%+v", lo)
	}
	for v, want := range map[float64]string{0: "0", 43.84: "43.8", 0.0757: "0.0757", 1712.4: "1712", 1.36e7: "1.36e+07", 7.3e-8: "7.3e-08"} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

// Every case with a target has a row in the README's performance table,
// and every row's `bench --filter` selects at least one case.
func TestREADMERows(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, perf, ok := strings.Cut(string(data), "\n## Performance\n")
	if !ok {
		t.Fatal("README has no Performance section")
	}
	perf, _, _ = strings.Cut(perf, "\n## ")
	var filters []*regexp.Regexp
	for _, m := range regexp.MustCompile("`bench --filter ([^`]+)`").FindAllStringSubmatch(perf, -1) {
		re, err := regexp.Compile(m[1])
		if err != nil {
			t.Errorf("README row filter %q: %v", m[1], err)
			continue
		}
		filters = append(filters, re)
	}
	if len(filters) == 0 {
		t.Fatal("no `bench --filter` in the README's Performance section")
	}
	cases := Cases()
	for _, c := range Select(nil, false, false) {
		if !slices.ContainsFunc(filters, func(re *regexp.Regexp) bool { return re.MatchString(c.Name) }) {
			t.Errorf("%s has a target but no README row (`bench --filter …` matching it)", c.Name)
		}
	}
	for _, re := range filters {
		if !slices.ContainsFunc(cases, func(c Case) bool { return re.MatchString(c.Name) }) {
			t.Errorf("README row `bench --filter %s` selects no case", re)
		}
	}
}
