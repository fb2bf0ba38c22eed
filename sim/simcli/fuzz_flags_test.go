package simcli

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseSeedsNearMax: seeds at the top of uint64 parse and end (the
// loop over a range counted past 2^64−1, wrapped to 0 and never ended).
func TestParseSeedsNearMax(t *testing.T) {
	done := make(chan []uint64, 1)
	errs := make(chan error, 1)
	go func() {
		s, err := parseSeeds("18446744073709551614-18446744073709551615,7")
		errs <- err
		done <- s
	}()
	select {
	case err := <-errs:
		if s := <-done; err != nil || !slices.Equal(s, []uint64{math.MaxUint64 - 1, math.MaxUint64, 7}) {
			t.Errorf("parseSeeds: %v, %v", s, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parseSeeds of a range ending at 2^64−1 did not end")
	}
}

// FuzzSeedsFlag: --seeds never panics or hangs; what it accepts is
// distinct seeds, at most 10000 per comma-separated part.
func FuzzSeedsFlag(f *testing.F) {
	for _, s := range []string{"42", "42-51", "1,5,9", "1-3,2-4", "", ",", "5-1", "0-9999", "0-10000", "18446744073709551615", "18446744073709551610-18446744073709551615", "-", "1-", "a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seeds, err := parseSeeds(s)
		if err != nil {
			return
		}
		if len(seeds) == 0 || len(seeds) > 10000*(strings.Count(s, ",")+1) {
			t.Fatalf("%q: %d seeds", s, len(seeds))
		}
		sorted := slices.Clone(seeds)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != len(seeds) {
			t.Fatalf("%q: repeated seeds %v", s, seeds)
		}
	})
}

// FuzzOrderingsFlag: --orderings (and --ordering, --demote) never panic:
// each spec splitSpecs yields is non-empty, and parseOrdering either
// accepts it or names the flag in its error.
func FuzzOrderingsFlag(f *testing.F) {
	for _, s := range []string{"fifo,sjf,srtf,las:1,8,themis", "strict-fifo,priority-aging", "las:0.5,2,slice:10m", "slice:0", "las:", "las:-1",
		"las:2,1", "las:1e308", "exec:", "exec:python3 p.py", "themis,,fifo", ":", "las:1,.5", "slice:1h,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, spec := range splitSpecs(s) {
			if spec == "" {
				t.Fatalf("%q: an empty spec", s)
			}
			if strings.HasPrefix(spec, "exec:") {
				continue // would start a process
			}
			if _, err := parseOrdering(spec, nil); err != nil && !strings.Contains(err.Error(), "--ordering") && !strings.Contains(err.Error(), "--demote") {
				t.Fatalf("%q: error %v names no flag", spec, err)
			}
			if _, err := parseDemote(spec, nil); err != nil && !strings.Contains(err.Error(), "--demote") {
				t.Fatalf("%q: --demote error %v does not name it", spec, err)
			}
		}
	})
}

// FuzzSweepFlags: --param, --shard, --qos-priority, --outage and
// --save-state never panic, and what they accept holds together.
func FuzzSweepFlags(f *testing.F) {
	for _, s := range []string{"policy=best-fit,topology", "--load=0.5,0.9", "demote=las:1,8,slice:10m", "=1", "x=", "0/1", "1/3", "3/3", "-1/2", "default",
		"Guaranteed=3,LS=2", "LS=99999999999", "level=tor,for=4h,every=168h", "level=host,for=0s", "for=1h", "90m,2h", "1h,60m", "-1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := parseParam(s); err == nil && (p.name == "" || len(p.values) == 0) {
			t.Fatalf("--param %q: %+v", s, p)
		}
		if i, n, err := parseShard(s); err == nil && !(0 <= i && i < n) {
			t.Fatalf("--shard %q: %d/%d", s, i, n)
		}
		if m, err := parseQoS(s); err == nil {
			for k := range m {
				if k == "" {
					t.Fatalf("--qos-priority %q: an empty class", s)
				}
			}
		}
		if o, err := parseOutage(s); err == nil && (o.Level == "" || o.For <= 0) {
			t.Fatalf("--outage %q: %+v", s, o)
		}
		if ats, err := parseSaveState([]string{s}, 0); err == nil {
			for _, d := range ats {
				if d < 0 {
					t.Fatalf("--save-state %q: %v", s, d)
				}
			}
		}
	})
}
