package trace

import (
	"strings"
	"testing"
)

// TestPerturbHugeDurations: --perturb with durations near time.Duration's
// limit is an error naming the perturbation, not a panic (jitter=2562047h
// made rand.Int64N's bound overflow to a negative number).
func TestPerturbHugeDurations(t *testing.T) {
	jobs := perturbJobs(10)
	for _, s := range []string{"jitter=2562047h", "jitter=2562047h47m16.854775807s", "window=2562047h,jitter=1500000h", "bootstrap,jitter=1300000h"} {
		p, err := ParsePerturbation(s)
		if err == nil {
			_, err = Perturb(jobs, p, 1)
		}
		if err == nil || !strings.Contains(err.Error(), "perturbation") {
			t.Errorf("%q: %v, want an error naming the perturbation", s, err)
		}
	}
	if _, err := Perturb(jobs, Perturbation{Jitter: 1 << 62}, 1); err == nil {
		t.Error("Perturb took a jitter of 1<<62 ns")
	}
}

// FuzzPerturbation: ParsePerturbation never panics; what it accepts
// reads back from its String form, and Perturb applies it to a small
// trace without panicking, keeping IDs and durations, sorted,, arrivals not
// before the first.
func FuzzPerturbation(f *testing.F) {
	for _, s := range []string{"", "none", "bootstrap", "jitter=10m", "window=1h", "bootstrap,jitter=5m,window=2h", " jitter = 1s ",
		"jitter=-1m", "window=abc", "shuffle", "jitter=2562047h", "window=0s,bootstrap", ",,", "jitter=1ns"} {
		f.Add(s, uint64(1))
	}
	jobs := perturbJobs(12)
	f.Fuzz(func(t *testing.T, s string, seed uint64) {
		p, err := ParsePerturbation(s)
		if err != nil {
			if !strings.Contains(err.Error(), "perturbation") {
				t.Fatalf("%q: error %v does not name the perturbation", s, err)
			}
			return
		}
		if q, err := ParsePerturbation(p.String()); err != nil || q != p {
			t.Fatalf("%q: String %q reads back as %+v, %v; want %+v", s, p.String(), q, err, p)
		}
		out, err := Perturb(jobs, p, seed)
		if err != nil {
			return
		}
		for i, j := range out {
			if j.Spec.ID == "" || j.Duration <= 0 {
				t.Fatalf("%q: job %d lost its ID or duration: %+v", s, i, j)
			}
			if j.Submit < jobs[0].Submit || i > 0 && j.Submit < out[i-1].Submit {
				t.Fatalf("%q: job %d at %v: before the first arrival or out of order", s, i, j.Submit)
			}
		}
		if p.Window == 0 && len(out) != len(jobs) {
			t.Fatalf("%q: %d jobs of %d without a window", s, len(out), len(jobs))
		}
	})
}
