package simcli

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// TestVCLoadOf: --vc-load-of gives named VCs a load of their own, the
// others take --vc-load (or keep their times without it); a VC outside
// the VC file and a bad load are errors naming the flag.
func TestVCLoadOf(t *testing.T) {
	dir := t.TempDir()
	vcs, jobs := filepath.Join(dir, "vc.csv"), filepath.Join(dir, "jobs.csv")
	writeTwoVCTrace(t, jobs, vcs)
	offered := func(vcLoad float64, of string) map[string]float64 {
		t.Helper()
		r := defaultRun()
		r.preset, r.traceArg, r.mapping, r.queues, r.vcLoad, r.vcLoadOf = "h100-1k", "csv:"+jobs, "submit=ts,duration=secs,gpus=n,queue=vc", "vc-hard:"+vcs, vcLoad, of
		p, err := prepare(r, func(r runConfig) (*topology.Cluster, error) { return r.loadCluster() })
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for vc, gpus := range map[string]int{"big": 16, "small": 8} {
			var g []trace.Job
			for _, j := range p.lt.jobs {
				if j.Spec.Queue == vc {
					g = append(g, j)
				}
			}
			out[vc] = trace.OfferedLoad(g, gpus)
		}
		return out
	}
	asRecorded := offered(0, "big=0.5")["small"]
	for _, c := range []struct {
		vcLoad     float64
		of         string
		big, small float64
	}{{0.7, "big=0.5", 0.5, 0.7}, {0, "big=0.5, small=1.25", 0.5, 1.25}, {0, "big=0.5", 0.5, asRecorded}} {
		got := offered(c.vcLoad, c.of)
		if math.Abs(got["big"]-c.big) > 1e-3 || math.Abs(got["small"]-c.small) > 1e-3 {
			t.Errorf("--vc-load %g --vc-load-of %q: offered %v, want big %g small %g", c.vcLoad, c.of, got, c.big, c.small)
		}
	}
	base := []string{"run", "--preset", "h100-1k", "--trace", "csv:" + jobs, "--map", "submit=ts,duration=secs,gpus=n,queue=vc", "--no-plots", "--quiet",
		"--queues", "vc-hard:" + vcs, "--out", t.TempDir()}
	if _, _, err := execCmd(t, Options{}, append(base, "--vc-load-of", "big=0.5,small=0.9")...); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"nope=0.5", "big=0", "big=-1", "big=x", "big", "=1", "big=1,big=2", "big=+Inf"} {
		if _, _, err := execCmd(t, Options{}, append(base, "--vc-load-of", bad)...); err == nil || !strings.Contains(err.Error(), "--vc-load-of") {
			t.Errorf("--vc-load-of %q: %v, want an error naming --vc-load-of", bad, err)
		}
	}
}

// FuzzParseVCLoads: --vc-load-of's parser never panics, and what it
// accepts is positive finite loads for non-empty names, read back the
// same from their canonical form.
func FuzzParseVCLoads(f *testing.F) {
	for _, s := range []string{"", "a=1", "6214e9=1.2,ed69ec=0.1", " a = 0.5 , b=2", "a=0", "a=NaN", "a=1e400", "=1", "a", ",", "a=1,a=1", "a=0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseVCLoads(s)
		if err != nil {
			return
		}
		var parts []string
		for name, l := range m {
			if name == "" || !(l > 0) || math.IsInf(l, 0) || strings.ContainsAny(name, "=,") {
				t.Fatalf("%q: accepted %q=%g", s, name, l)
			}
			parts = append(parts, fmt.Sprintf("%s=%v", name, l))
		}
		again, err := parseVCLoads(strings.Join(parts, ","))
		if err != nil || len(again) != len(m) {
			t.Fatalf("%q: canonical form %q: %v %v", s, strings.Join(parts, ","), again, err)
		}
		for name, l := range m {
			if again[name] != l {
				t.Fatalf("%q: %s read back %g, want %g", s, name, again[name], l)
			}
		}
	})
}
