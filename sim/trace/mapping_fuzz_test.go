package trace

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzParseMapping: --map never panics; a mapping it accepts names the
// required columns and reads a small CSV and JSON-lines trace with the
// readers' promises kept (valid jobs or ErrMalformed, see drain).
func FuzzParseMapping(f *testing.F) {
	for _, s := range []string{"submit=ts,duration=secs,gpus=n,queue=team", "submit=ts,duration=secs,gpu-milli=n,submit-format=datetime",
		"submit=ts,duration=secs,gpus=n,submit-format=2006-01-02", "submit=ts,duration=secs,gpus=n,duration-unit=1ms", "submit=ts", "=x", "gpus=",
		"submit=ts,duration=secs,gpus=n,tasks=n,cpu=n,memory=n,priority=n,models=n,id=ts", "SUBMIT = ts , DURATION = secs , GPUS = n", "bogus=1", ",,"} {
		f.Add(s)
	}
	const csvData = "ts,secs,n,team\n0,60,1,a\n5,120,2,b\n9,30,0,a\n"
	const jsonData = `{"ts":0,"secs":60,"n":1,"team":"a"}` + "\n" + `{"ts":"x","secs":-1,"n":1e9}` + "\n"
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMapping(s)
		if err != nil {
			if !strings.Contains(err.Error(), "mapping") {
				t.Fatalf("%q: error %v does not name the mapping", s, err)
			}
			return
		}
		if m.Submit == "" || m.Duration == "" || m.GPUs == "" && m.GPUMilli == "" {
			t.Fatalf("%q: accepted without a required column: %+v", s, m)
		}
		if r, err := NewCSV(strings.NewReader(csvData), m, Options{}); err == nil {
			drain(t, r, false, true)
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("%q: %v", s, err)
		}
		r, err := NewJSONL(bytes.NewReader([]byte(jsonData)), m, Options{SkipMalformed: true})
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		drain(t, r, true, true)
	})
}
