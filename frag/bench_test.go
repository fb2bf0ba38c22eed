package frag

import (
	"math/rand/v2"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// BenchmarkInflation is one paper-style run: the openb default trace
// resampled to 130% of openb-gpu's GPUs (about 10,600 arrivals), placed
// one by one on an empty cluster. It reports the time per arrival.
func BenchmarkInflation(b *testing.B) {
	c := openbGPU(b)
	tasks := openbTasks(b, c, "openb_pod_list_default.csv")
	for _, pol := range PolicyNames() {
		b.Run(pol, func(b *testing.B) {
			var run *InflationRun
			cpu0 := cpuTime()
			for b.Loop() {
				var err error
				if run, err = RunInflation(c, tasks, pol, 42, InflationOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime() - cpu0
			if run.Placed == 0 || run.Arrivals < 10000 {
				b.Fatalf("run placed %d of %d", run.Placed, run.Arrivals)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(run.Arrivals), "ns/task")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(run.Arrivals), "cpu-ns/task")
		})
	}
}

// BenchmarkPick measures one Pick on openb-gpu filled to a given share of
// its GPUs by the paper's sequence (placed with best-fit), for tasks drawn
// from the trace. Each iteration picks for the next task, so the caches
// see the trace's mix of shapes; the ledger does not change.
func BenchmarkPick(b *testing.B) {
	c := openbGPU(b)
	tasks := openbTasks(b, c, "openb_pod_list_default.csv")
	dist, err := Learn(tasks, LearnOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, fill := range []int{0, 50, 80, 95} {
		l := fillLedger(b, c, tasks, fill)
		rng := rand.New(rand.NewPCG(1, 2))
		probe := make([]Task, 1024)
		for i := range probe {
			probe[i] = tasks[rng.IntN(len(tasks))]
		}
		for _, pol := range PolicyNames() {
			b.Run(pol+"/fill="+itoa(fill), func(b *testing.B) {
				p, err := NewPolicy(pol, Options{Distribution: dist, Rand: rand.New(rand.NewPCG(3, 4))})
				if err != nil {
					b.Fatal(err)
				}
				placed := 0
				i := 0
				cpu0 := cpuTime()
				for b.Loop() {
					if _, ok := p.Pick(l, probe[i&1023], Scope{}); ok {
						placed++
					}
					i++
				}
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
				if fill < 95 && placed == 0 {
					b.Fatal("nothing placed")
				}
			})
		}
	}
}

// fillLedger places the paper's arrival sequence with best-fit until fill%
// of the GPUs are allocated.
func fillLedger(tb testing.TB, c *topology.Cluster, tasks []Task, fill int) *topology.Ledger {
	l := topology.NewLedger(c)
	p, err := NewPolicy(BestFit, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	capMilli := int64(c.NumGPUs()) * topology.MilliPerGPU
	var alloc int64
	for _, i := range Arrivals(tasks, 7, 2*capMilli, SamplePaper) {
		if alloc*100 >= int64(fill)*capMilli {
			break
		}
		if cl, ok := p.Pick(l, tasks[i], Scope{}); ok {
			if err := l.Allocate(cl); err != nil {
				tb.Fatal(err)
			}
			alloc += tasks[i].milli()
		}
	}
	return l
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
