package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestBenchCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "new.txt")
	var out, errb bytes.Buffer
	// Two fast cases once each: a figure case and one without a target.
	code := run([]string{"bench", "--filter", `^(Ledger/alloc-release/1k|Sim/engine-noop)$`, "--benchtime", "1x", "--out", file, "--quiet"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	if !strings.HasPrefix(s, "name ") || !regexp.MustCompile(`(?m)^Ledger/alloc-release/1k\s+\S+\s+\[\S+–\S+\]\s+1\s+ns/op\s+-`).MatchString(s) ||
		!regexp.MustCompile(`(?m)^Sim/engine-noop\s+\S+\s+\[\S+–\S+\]\s+1\s+events/s\s+≥ 1e\+07\s+(ok|MISSED)$`).MatchString(s) {
		t.Errorf("table:\n%s", s)
	}
	// The file is in go test's benchmark format, as benchstat reads it.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^BenchmarkLedger/alloc-release/1k(-\d+)?\t\s*1\t\s*[\d.]+ ns/op\t\s*\d+ B/op\t\s*\d+ allocs/op$`)
	if !strings.Contains(string(data), "pkg: github.com/gpusched/gpusched/benchmarks\n") || !line.Match(data) ||
		!regexp.MustCompile(`(?m)^BenchmarkSim/engine-noop(-\d+)?\t.* events/s`).Match(data) {
		t.Errorf("benchmark file:\n%s", data)
	}

	// --json: one object per figure, the median of two rounds with its
	// spread.
	out.Reset()
	if code := run([]string{"bench", "--filter", `^Sim/engine-noop$`, "--benchtime", "1x", "--count", "2", "--json", "--quiet"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	sc := bufio.NewScanner(&out)
	n := 0
	for sc.Scan() {
		var f struct {
			Name, Unit, Better string
			Value, Target      float64
			Min, Max           float64
			Runs               int
			OK                 *bool
		}
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		if f.Name != "Sim/engine-noop" || f.Unit != "events/s" || f.Target != 1e7 || f.Better != "higher" || f.Value <= 0 || f.OK == nil ||
			f.Runs != 2 || f.Min > f.Value || f.Value > f.Max {
			t.Errorf("%+v", f)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d JSON lines", n)
	}

	// --list names the cases without running them.
	out.Reset()
	if code := run([]string{"bench", "--list", "--short"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "Schedule/full-10000-pending/10k\t[20x]\t≤ 10 ms/op") || strings.Contains(out.String(), "/100k") {
		t.Errorf("list (exit %d):\n%s", code, out.String())
	}
}

func TestBenchCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--filter", "("}, "--filter"},
		{[]string{"--filter", "no-such-case"}, "no benchmark matches"},
		{[]string{"--benchtime", "fast"}, "--benchtime"},
		{[]string{"--benchtime", "0x"}, "--benchtime"},
		{[]string{"--count", "0"}, "--count"},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"bench"}, c.args...), nil, &out, &errb); code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, errb.String())
		}
	}
	if !validBenchtime("2s") || !validBenchtime("10x") || validBenchtime("x") || validBenchtime("-1s") || validBenchtime("01x") {
		t.Error("validBenchtime")
	}
}
