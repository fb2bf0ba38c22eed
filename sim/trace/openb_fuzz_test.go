package trace

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzOpenB feeds arbitrary input to the openb reader in every mode
// (skipping or not, QoS priorities or not): it must never panic or loop,
// every job it returns must be a valid one-task job with a non-negative
// duration (and a mapped priority), and every error must be a *ParseError
// naming a line.
func FuzzOpenB(f *testing.F) {
	f.Add(openbHeader + "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n")
	f.Add(openbHeader + "p1,6000,12288,1,460,V100M16|V100M32,LS,Running,427061,12902960,427061\np2,8000,30517,0,0,,BE,Running,1,2,1\n")
	f.Add("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nm0,32000,65536,4,1000\nm1,4000.0,2048,1,230\n")
	f.Add("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nm0,-1,65536,4,1000\n\"m1,4000\n")
	f.Add(openbHeader + "x,1000,1024,2,500,,LS,Running,100,99,100\n")
	f.Add("\ufeffname,num_gpu,gpu_milli,memory_mib,cpu_milli,extra\na,8,1000,1,1,z\n")
	f.Add(openbHeader + "q0,1,1,1,1000,,Guaranteed,Running,0,1,0\nq1,1,1,1,1000,,ls,Running,0,1,0\nq2,1,1,1,1000,,XX,Running,0,1,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		for mode := range 4 {
			skip, qos := mode&1 != 0, mode&2 != 0
			opt := OpenBOptions{SkipMalformed: skip}
			if qos {
				opt.QoSPriority = OpenBQoSPriorities
			}
			o, err := NewOpenB(strings.NewReader(in), opt)
			if err != nil {
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("header error %v is not a *ParseError", err)
				}
				continue
			}
			for n := 0; ; n++ {
				if n > len(in)+1 {
					t.Fatalf("more results than input lines")
				}
				j, err := o.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					var pe *ParseError
					if !errors.As(err, &pe) || pe.Line < 1 {
						t.Fatalf("row error %v is not a *ParseError with a line", err)
					}
					if skip {
						t.Fatalf("error %v in skip mode", err)
					}
					continue
				}
				if err := j.Spec.Validate(); err != nil {
					t.Fatalf("invalid job %+v: %v", j.Spec, err)
				}
				if len(j.Spec.Groups) != 1 || j.Spec.Groups[0].Count != 1 || j.Duration < 0 || j.Submit < 0 {
					t.Fatalf("odd job %+v", j)
				}
				if p := j.Spec.Priority; (!qos && p != 0) || p < 0 || p > 3 {
					t.Fatalf("job %+v: priority %d with qos mapping %v", j.Spec, p, qos)
				}
			}
		}
	})
}
