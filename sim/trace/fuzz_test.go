package trace

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// drain reads r to the end and checks what every reader promises: jobs
// that validate, *ParseError (never a panic) for bad records, and no
// error in skip mode except a stream-ending one. It gives up after limit
// records.
func drain(t *testing.T, r Reader, skip, streamErrOK bool) {
	for range 10000 {
		j, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not unwrap to ErrMalformed", err)
			}
			if skip && !streamErrOK {
				t.Fatalf("skip mode returned %v", err)
			}
			return
		}
		if verr := j.Spec.Validate(); verr != nil {
			t.Fatalf("reader returned an invalid job: %v", verr)
		}
		if j.Duration <= 0 {
			t.Fatalf("job %s has duration %v", j.Spec.ID, j.Duration)
		}
	}
}

func seeds(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
}

func FuzzPhillyCSV(f *testing.F) {
	seeds(f, "philly_sample.csv")
	f.Add([]byte("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,1e300,1,1,a\n"), true)
	f.Fuzz(func(t *testing.T, b []byte, skip bool) {
		r, err := NewPhillyCSV(bytes.NewReader(b), Options{SkipMalformed: skip})
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatal(err)
			}
			return
		}
		drain(t, r, skip, true) // a CSV syntax error can end the stream
	})
}

func FuzzPhillyJSON(f *testing.F) {
	seeds(f, "philly_cluster_job_log.json")
	f.Add([]byte(`{"jobid":"a","vc":"v","submitted_time":"2017-10-07 01:00:00","attempts":[]}`), false)
	f.Fuzz(func(t *testing.T, b []byte, skip bool) {
		drain(t, NewPhillyJSON(bytes.NewReader(b), Options{SkipMalformed: skip}), skip, true)
	})
}

func FuzzSlurmCSV(f *testing.F) {
	seeds(f, "helios_cluster_log.csv", "acme_trace_seren.csv", "acme_trace_kalos.csv")
	f.Fuzz(func(t *testing.T, b []byte, skip bool) {
		for _, mk := range []func(io.Reader, Options) (*SlurmCSV, error){NewHeliosCSV, NewAcmeCSV} {
			r, err := mk(bytes.NewReader(b), Options{SkipMalformed: skip})
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatal(err)
				}
				continue
			}
			drain(t, r, skip, true)
		}
	})
}

func FuzzGeneric(f *testing.F) {
	seeds(f, "generic.csv", "generic.jsonl")
	m, err := ParseMapping("id=name,submit=arrive,duration=secs,gpus=gpus,gpu-milli=share,queue=team,priority=prio,models=model")
	if err != nil {
		f.Fatal(err)
	}
	m2, _ := ParseMapping("id=name,submit=arrive,duration=secs,gpus=gpus,queue=team,submit-format=datetime")
	f.Fuzz(func(t *testing.T, b []byte, skip bool) {
		for _, mm := range []Mapping{m, m2} {
			if r, err := NewCSV(bytes.NewReader(b), mm, Options{SkipMalformed: skip}); err == nil {
				drain(t, r, skip, true)
			} else if !errors.Is(err, ErrMalformed) {
				t.Fatal(err)
			}
			r, err := NewJSONL(bytes.NewReader(b), mm, Options{SkipMalformed: skip})
			if err != nil {
				t.Fatal(err)
			}
			drain(t, r, skip, true) // an over-long line ends the stream
		}
	})
}

func FuzzReadVCs(f *testing.F) {
	f.Add([]byte("vc,node num\na,1\nb,2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		vcs, err := ReadVCs(bytes.NewReader(b), 8, Options{})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		for _, v := range vcs {
			if v.Name == "" || v.Nodes < 0 || v.GPUs != 8*v.Nodes {
				t.Fatalf("bad VC %+v", v)
			}
		}
	})
}
