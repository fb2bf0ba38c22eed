package benchmarks

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/simcli"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// DataDir is where cases that need data from outside the repository (the
// Philly trace) look for it: the directory holding philly/philly.csv.
// Empty means the environment variable GPUSCHED_DATA, else ../shared/data
// or ../../shared/data relative to the working directory (the repository
// root or a package directory of a checkout beside ../shared).
var DataDir string

// SyntheticJobs is the number of jobs of the Sim/synthetic-1m case; 0 means
// the environment variable GPUSCHED_BENCH_JOBS, else 1,000,000.
var SyntheticJobs int

// simCases: the simulator (issue 6) and the README's first command
// (issue 7).
func simCases() []Case {
	mem := fig("peak-MiB", 4096, 6)
	return []Case{
		{
			Name: "Sim/engine-noop", BenchTime: "1s",
			Doc:     "the discrete-event engine firing no-op events (4,096 pending at random times): events per second",
			Figures: []Figure{{Unit: "events/s", Target: 10e6, Better: Higher, Issue: 6}},
			F:       benchEngine,
		},
		{
			Name: "Sim/openb-inflation-fgd", BenchTime: "5x",
			Doc:     "one paper-style run: the embedded openb default trace (8,152 tasks) resampled to 130% of openb-gpu's 6,212 GPUs, placed one by one with FGD, seed 42",
			Figures: []Figure{fig("s/op", 2, 6)},
			F:       benchInflation,
		},
		{
			Name: "Sim/philly", BenchTime: "1x", Needs: "philly",
			Doc:     "the full Philly trace (82,247 jobs) on the 2,816-GPU Philly cluster, one queue per virtual cluster (philly_vc.csv), through the root Scheduler",
			Figures: []Figure{fig("s/op", 10, 6)},
			F:       benchPhilly,
		},
		{
			Name: "Sim/synthetic-1m/100k", Size: "100k", BenchTime: "1x", OwnHeap: true,
			Doc:     "a synthetic trace of 1M jobs (Philly-like sizes, 4 tenants, 90% offered load) on h100-100k through the root Scheduler; peak-MiB is the most memory the Go runtime held from the OS during the run (cached fixtures dropped first)",
			Figures: []Figure{fig("s/op", 60, 6), mem},
			F:       benchSynthetic,
		},
		{
			Name: "Sim/default-command", BenchTime: "1x",
			Doc:     "`gpusched sim` with no arguments: three policies on the built-in openb default, table and plots written",
			Figures: []Figure{fig("s/op", 60, 7)},
			F:       benchDefaultCommand,
		},
	}
}

func noop(time.Duration) {}

func benchEngine(b *testing.B) {
	e := sim.NewEngine()
	rng := rand.New(rand.NewPCG(1, 2))
	const window = 4096
	offs := make([]time.Duration, window)
	for i := range offs {
		offs[i] = time.Duration(rng.IntN(1_000_000))
		e.Schedule(offs[i], noop)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Step()
		e.Schedule(e.Now()+offs[i%window], noop)
	}
	b.StopTimer()
	if e.Fired() != uint64(b.N) {
		fatalf(b, "fired %d, want %d", e.Fired(), b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// openbTasks returns openb-gpu and the tasks of the embedded openb default
// trace.
func openbTasks(b testing.TB) (*topology.Cluster, []frag.Task) {
	c := preset(b, "openb-gpu")
	tasks := cached(b, "openb-tasks", func() ([]frag.Task, error) {
		var tasks []frag.Task
		for _, j := range openbJobs(b) {
			for gi := range j.Spec.Groups {
				g := &j.Spec.Groups[gi]
				t, err := frag.TaskFor(c, g)
				if err != nil {
					return nil, err
				}
				for range g.Count {
					tasks = append(tasks, t)
				}
			}
		}
		return tasks, nil
	})
	return c, tasks
}

func benchInflation(b *testing.B) {
	c, tasks := openbTasks(b)
	b.ReportAllocs()
	var run *frag.InflationRun
	for b.Loop() {
		var err error
		if run, err = frag.RunInflation(c, tasks, frag.FGD, 42, frag.InflationOptions{}); err != nil {
			fatal(b, err)
		}
	}
	if run.Arrivals < 10000 || run.Placed == 0 {
		fatalf(b, "placed %d of %d", run.Placed, run.Arrivals)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(run.Arrivals), "ns/task")
	b.ReportMetric(run.Unallocated[100], "u100-%")
}

// phillyPaths finds philly.csv and philly_vc.csv (see DataDir).
func phillyPaths() ([2]string, error) {
	dirs := []string{DataDir}
	if DataDir == "" {
		dirs = []string{os.Getenv("GPUSCHED_DATA"), filepath.Join("..", "shared", "data"), filepath.Join("..", "..", "shared", "data")}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := [2]string{filepath.Join(d, "philly", "philly.csv"), filepath.Join(d, "philly", "philly_vc.csv")}
		if _, err := os.Stat(p[0]); err != nil {
			continue
		}
		if _, err := os.Stat(p[1]); err != nil {
			continue
		}
		return p, nil
	}
	return [2]string{}, errors.New("the Philly trace (philly/philly.csv, philly/philly_vc.csv) is not in ../shared/data; set GPUSCHED_DATA or --data to the directory that holds philly/")
}

type phillyFixture struct {
	c    *topology.Cluster
	jobs []trace.Job
	vcs  []trace.VC
}

func philly(b testing.TB) *phillyFixture {
	return cached(b, "philly", func() (*phillyFixture, error) {
		p, err := phillyPaths()
		if err != nil {
			return nil, err
		}
		read := func(path string, fn func(io.Reader) error) error {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			return fn(f)
		}
		f := &phillyFixture{}
		if err := read(p[0], func(r io.Reader) error {
			pr, err := trace.NewPhillyCSV(r, trace.Options{})
			if err != nil {
				return err
			}
			f.jobs, err = trace.Collect(pr)
			return err
		}); err != nil {
			return nil, err
		}
		if err := read(p[1], func(r io.Reader) (err error) {
			f.vcs, err = trace.ReadVCs(r, 8, trace.Options{})
			return err
		}); err != nil {
			return nil, err
		}
		spec, err := sim.PhillyCluster.Spec()
		if err != nil {
			return nil, err
		}
		f.c, err = topology.Build(spec)
		return f, err
	})
}

func benchPhilly(b *testing.B) {
	if ok, msg := (&Case{Needs: "philly"}).Available(); !ok {
		b.Skip(msg)
	}
	f := philly(b)
	qs := rootsched.VCQueues(f.vcs, rootsched.Tenants(f.jobs), queue.Policy{})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		js := append([]trace.Job(nil), f.jobs...)
		s, err := rootsched.New(gpusched.Config{Cluster: f.c, Queues: qs})
		if err != nil {
			fatal(b, err)
		}
		b.StartTimer()
		sm, err := sim.New(sim.Config{Cluster: f.c, Scheduler: s, Tenants: rootsched.VCTenants(f.vcs)}, js)
		if err != nil {
			fatal(b, err)
		}
		res, err := sm.Run()
		if err != nil {
			fatal(b, err)
		}
		if res.Summary.Jobs.Completed != len(f.jobs) {
			fatalf(b, "%+v", res.Summary.Jobs)
		}
	}
}

// syntheticJobs is the job count of Sim/synthetic-1m (see SyntheticJobs).
func syntheticJobs() int {
	if SyntheticJobs > 0 {
		return SyntheticJobs
	}
	if n, err := strconv.Atoi(os.Getenv("GPUSCHED_BENCH_JOBS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// heldMemory is the memory the Go runtime holds from the operating system
// now (mapped, less what it released back): close to the process's
// resident size.
func heldMemory(s []metrics.Sample) uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

func benchSynthetic(b *testing.B) {
	DropFixtures() // what other cases cached is not the simulation's memory
	c, err := topology.LoadPreset("h100-100k")
	if err != nil {
		fatal(b, err)
	}
	tenants := []trace.Weighted[string]{{Value: "pretrain", Weight: 1}, {Value: "finetune", Weight: 2}, {Value: "eval", Weight: 3}, {Value: "research", Weight: 4}}
	syn := trace.Synthetic{Seed: 1, Jobs: syntheticJobs(), Queues: tenants}
	syn.MeanInterarrival = syn.InterarrivalFor(c.NumGPUs(), 0.9)
	names := []string{"eval", "finetune", "pretrain", "research"}
	ms := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	var peak uint64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r, err := trace.NewSynthetic(syn)
		if err != nil {
			fatal(b, err)
		}
		jobs, err := trace.Collect(r)
		if err != nil {
			fatal(b, err)
		}
		s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues(names, queue.Policy{})})
		if err != nil {
			fatal(b, err)
		}
		runtime.GC()
		debug.FreeOSMemory()
		peak = max(peak, heldMemory(ms))
		every := max(syn.Jobs/200, 1)
		b.StartTimer()
		sm, err := sim.New(sim.Config{Cluster: c, Scheduler: s, SampleEvery: time.Hour, Progress: func(done, _ int) {
			if done%every == 0 {
				peak = max(peak, heldMemory(ms))
			}
		}}, jobs)
		if err != nil {
			fatal(b, err)
		}
		res, err := sm.Run()
		if err != nil {
			fatal(b, err)
		}
		b.StopTimer()
		peak = max(peak, heldMemory(ms))
		if res.Summary.Jobs.Completed != syn.Jobs {
			fatalf(b, "%+v", res.Summary.Jobs)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(syn.Jobs), "jobs")
}

func benchDefaultCommand(b *testing.B) {
	for b.Loop() {
		dir, err := os.MkdirTemp("", "gpusched-bench-")
		if err != nil {
			fatal(b, err)
		}
		defer os.RemoveAll(dir)
		cmd := simcli.Command(simcli.Options{})
		cmd.SetArgs([]string{"--out", dir, "--quiet"})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err != nil {
			fatal(b, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
			if m, _ := filepath.Glob(filepath.Join(dir, "*", "summary.json")); len(m) == 0 {
				fatalf(b, "no summary.json under %s", dir)
			}
		}
	}
}
