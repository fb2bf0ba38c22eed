// Package simcli is the `gpusched sim` command: run, compare and sweep
// simulations from the command line. It lives outside package main so
// that it can be tested; cmd/gpusched mounts Command.
package simcli

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/data"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/sim/report"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// runConfig is everything one simulation run needs, as flags set it. Its
// fields are plain values so a sweep can copy it and change one.
type runConfig struct {
	preset, file string
	traceArg     string
	mapping      string
	skipBad      bool
	strict       bool
	maxPerTask   int
	cpuPerGPU    float64
	memPerGPU    int64
	topoLevel    string
	keepCPU      bool
	synLoad      float64
	repeat       int
	arrivalSpan  time.Duration
	policy       string
	queues       string
	gpusPerNode  int
	ordering     string
	backfill     bool
	seed         uint64

	ckptInterval, ckptOverhead, restartCost time.Duration
	gpuMTBF, hostMTBF, torMTBF, repair      time.Duration
	maxRestarts                             int
	drainEvery, drainFor                    time.Duration
	drainGrace, drainKeep                   time.Duration
	preempt                                 string
	preemptPlans                            int
	qosPriority                             string
	highShare                               float64
	highPriority                            int32
	speed                                   bool
	speedHost, speedSwitch, speedLevel      float64
	grace                                   time.Duration
	runtimeEst                              float64
	scheduleEvery, sampleEvery, horizon     time.Duration
	rejectErrors                            bool
	// traceSeed, when set, seeds trace generation and replication instead
	// of seed: a sweep keeps one trace while its runs get their own seeds.
	traceSeed    uint64
	hasTraceSeed bool
	minCycle     time.Duration
	outages      []string
	defaultQueue string
	fragLevels   bool
	cycleStats   bool // --cycle-stats: gpusched.Config.Stats, written to cyclestats.jsonl
	demote       string
	estSigma     float64
	estRound     []time.Duration
	gpuSpeeds    string
	throughput   string        // --throughput-model (throughput.go)
	resizeCost   time.Duration // --resize-cost
	goodputSizer string        // --goodput-sizer
	jobTypes     string        // --job-types (gavel.go)
	gavelAlloc   string        // --gavel-allocator (gavel.go)
	slurm        string        // a Slurm site directory (see slurm.go)
	defrag       defragFlags
	elastic      elasticFlags // (elastic.go)
	starveLimit  float64
	perturb      string // a trace.Perturbation (--perturb)
	vcLoad       float64
	vcLoadOf     string // per-VC loads, VC=LOAD,… (vcload.go)
	// reg holds the registered policies (Options.Registry); nil: none.
	reg *policy.Registry
}

func defaultRun() runConfig {
	return runConfig{preset: "openb", traceArg: "openb:builtin", policy: "topology", queues: "flat", gpusPerNode: 8, seed: 42,
		preempt: "off", highPriority: 10}
}

// bind registers the run flags on fs; with cluster, --preset and --file
// too.
func (r *runConfig) bind(fs *pflag.FlagSet, cluster bool) {
	if cluster {
		fs.StringVar(&r.preset, "preset", r.preset, "cluster preset ("+strings.Join(topology.PresetNames(), ", ")+"), or philly (352 hosts × 8 GPUs, the Philly trace's cluster)")
		fs.StringVar(&r.file, "file", r.file, "cluster file (YAML or JSON); overrides --preset")
	}
	fs.StringVar(&r.traceArg, "trace", r.traceArg, "trace as KIND:PATH; KIND is openb, philly, philly-json, helios, acme, csv, jsonl or synthetic (PATH = number of jobs); openb:builtin is the embedded default")
	fs.StringVar(&r.mapping, "map", r.mapping, "column mapping for csv/jsonl traces, e.g. submit=ts,duration=secs,gpus=n,queue=team")
	fs.BoolVar(&r.skipBad, "skip-bad", r.skipBad, "skip malformed trace records (counted and reported) instead of stopping at the first")
	fs.BoolVar(&r.strict, "strict", r.strict, "reject trace columns the reader does not know")
	fs.IntVar(&r.maxPerTask, "max-gpus-per-task", r.maxPerTask, "most GPUs one task (host) takes when splitting a job's GPUs into tasks (0: 8)")
	fs.Float64Var(&r.cpuPerGPU, "cpu-per-gpu", r.cpuPerGPU, "cores per GPU for traces without CPU demand")
	fs.Int64Var(&r.memPerGPU, "mem-per-gpu", r.memPerGPU, "memory MiB per GPU for traces without memory demand")
	fs.StringVar(&r.topoLevel, "prefer-level", r.topoLevel, "topology level multi-task jobs prefer to stay within (e.g. tor); empty: none")
	fs.BoolVar(&r.keepCPU, "keep-cpu-only", r.keepCPU, "keep jobs that request no GPU")
	fs.Float64Var(&r.synLoad, "load", r.synLoad, "offered load (1 = 100% of the cluster's GPUs): a synthetic trace is generated at it (0: 0.9); a recorded trace has its arrival times scaled to it (0: replayed as recorded)")
	fs.StringVar(&r.perturb, "perturb", r.perturb, "vary a recorded trace by the seed, so that --seeds replications differ: a comma-separated list of bootstrap (resample the jobs with replacement), jitter=DURATION (move each arrival by up to ± DURATION), window=DURATION (keep a random window of arrivals this long); empty: replay as recorded (with a deterministic placer every seed then gives the same run)")
	fs.Float64Var(&r.vcLoad, "vc-load", r.vcLoad, "with --queues vc:PATH or vc-hard:PATH, scale each VC's arrivals on their own so that its jobs offer this load on its own GPUs (nodes × --gpus-per-node; trace.ScaleToLoadPerQueue), instead of one --load factor for the whole trace (0: off)")
	fs.StringVar(&r.vcLoadOf, "vc-load-of", r.vcLoadOf, vcLoadOfHelp)
	fs.IntVar(&r.repeat, "repeat", r.repeat, "replay k out-of-phase copies of a recorded trace at once (k times its load; 0 or 1: one)")
	fs.DurationVar(&r.arrivalSpan, "arrival-span", r.arrivalSpan, "scale a recorded trace's arrival times so they span this long (0: as recorded; see also --load)")
	fs.StringVar(&r.policy, "policy", r.policy, policyHelp(r.reg))
	fs.StringVar(&r.queues, "queues", r.queues, "queue setup: flat (one queue per tenant, no quota), single (one queue), vc:PATH (one queue per VC of a philly_vc.csv-style file, guaranteed nodes × --gpus-per-node GPUs, idle GPUs lent to other VCs), vc-hard:PATH (the same VCs as hard partitions: each owns its nodes, in the file's order, and its jobs run only there, as on Philly), or config:PATH (a queue tree in YAML or JSON, the queue package's Config)")
	fs.StringVar(&r.defaultQueue, "default-queue", r.defaultQueue, "with --queues config:PATH, the leaf for trace tenants that name no leaf (empty: such jobs are rejected)")
	fs.IntVar(&r.gpusPerNode, "gpus-per-node", r.gpusPerNode, "GPUs per node in a VC file")
	fs.StringVar(&r.ordering, "ordering", r.ordering, orderingHelp+registeredOrderings(r.reg))
	fs.Float64Var(&r.starveLimit, "starve-limit", r.starveLimit, "with --demote or --ordering las:…, Tiresias' starvation guard (its STARVELIMIT): a demoted job that has waited this many times its last run since that run ended goes back to the top level, its attained service counted from zero (0: off)")
	fs.StringVar(&r.gpuSpeeds, "gpu-speeds", r.gpuSpeeds, "per-GPU-model speed factors: a table file (sim.ReadSpeedTable's YAML) or gavel (the embedded table from Gavel's published K80/P100/V100 throughputs); a job runs at its slowest GPU's factor for its type (--job-types)")
	fs.StringVar(&r.throughput, "throughput-model", r.throughput, throughputHelp)
	fs.StringVar(&r.goodputSizer, "goodput-sizer", r.goodputSizer, goodputSizerHelp+registeredSizers(r.reg))
	fs.StringVar(&r.jobTypes, "job-types", r.jobTypes, jobTypesHelp)
	fs.StringVar(&r.gavelAlloc, "gavel-allocator", r.gavelAlloc, gavelAllocHelp+registeredAllocators(r.reg))
	fs.StringVar(&r.demote, "demote", r.demote, "lower jobs' priority as they attain service, needing no durations: las:H1,H2,… (Tiresias' 2D-LAS, thresholds in GPU-hours) or slice:LEASE (Gandiva-style time slicing, e.g. slice:10m), or a registered demotion; it turns on --preempt queue when --preempt is off, so a job of a higher level preempts one of a lower level")
	fs.BoolVar(&r.backfill, "backfill", r.backfill, "EASY backfill in every queue (runtime estimates: see --runtime-estimate)")
	fs.Uint64Var(&r.seed, "seed", r.seed, "seed of the random models and placers")
	fs.DurationVar(&r.ckptInterval, "ckpt-interval", r.ckptInterval, "checkpoint interval of jobs (0: they do not checkpoint)")
	fs.DurationVar(&r.ckptOverhead, "ckpt-overhead", r.ckptOverhead, "pause per checkpoint")
	fs.DurationVar(&r.restartCost, "restart-cost", r.restartCost, "reload time after a stop")
	fs.DurationVar(&r.resizeCost, "resize-cost", r.resizeCost, "pause of an elastic job at each shrink or grow before it runs at its new size (Pollux's simulator: 30s; 0: free)")
	fs.DurationVar(&r.gpuMTBF, "gpu-mtbf", r.gpuMTBF, "mean time between failures of one GPU (0: none)")
	fs.DurationVar(&r.hostMTBF, "host-mtbf", r.hostMTBF, "mean time between failures of one host (0: none)")
	fs.DurationVar(&r.torMTBF, "tor-mtbf", r.torMTBF, "mean time between outages of one ToR switch (0: none)")
	fs.DurationVar(&r.repair, "repair-time", r.repair, "time a failed part stays out (0: 1h)")
	fs.IntVar(&r.maxRestarts, "max-restarts", r.maxRestarts, "the Scheduler ends a job stopped by failures more often than this as failed (0: never)")
	fs.StringArrayVar(&r.outages, "outage", r.outages, "a scheduled failure, level=gpu|host|tor|…,for=DUR[,every=DUR][,at=DUR][,name=NAME] (e.g. level=tor,every=168h,for=4h: lose a random ToR for 4 h every week); repeatable")
	fs.DurationVar(&r.drainEvery, "drain-every", r.drainEvery, "mean time between host drains for maintenance (0: none)")
	fs.DurationVar(&r.drainFor, "drain-for", r.drainFor, "how long a drain lasts")
	fs.DurationVar(&r.drainGrace, "drain-grace", r.drainGrace, "time a job on a drained host gets to checkpoint before the Scheduler's recovery stops and requeues it (0: 2m)")
	fs.DurationVar(&r.drainKeep, "drain-keep", r.drainKeep, "let a job on a drained host run on when its runtime estimate ends within this (needs --runtime-estimate; 0: drain every job)")
	fs.BoolVar(&r.speed, "speed", r.speed, "slow gangs spread beyond one NVLink domain (see --speed-*)")
	fs.Float64Var(&r.speedHost, "speed-host", r.speedHost, "speed of a gang within one host but several NVLink domains (0: 0.95)")
	fs.Float64Var(&r.speedSwitch, "speed-switch", r.speedSwitch, "speed of a gang across hosts of one switch (0: 0.85)")
	fs.Float64Var(&r.speedLevel, "speed-level", r.speedLevel, "factor per further network level (0: 0.9)")
	fs.StringVar(&r.preempt, "preempt", r.preempt, "preemption by the Scheduler's planner (gang- and topology-aware, least work lost since checkpoints): off; reclaim (a queue within its guarantee takes back GPUs other queues borrow); queue (reclaim, and higher priority preempts lower within a queue; --preempt alone); cluster (reclaim, and higher priority preempts lower in any queue); fair (queue, and a queue below its fair share preempts borrowing queues above theirs, as Kueue's fair sharing)")
	fs.Lookup("preempt").NoOptDefVal = "queue"
	fs.IntVar(&r.preemptPlans, "preempt-plans", r.preemptPlans, "most preemption plans per scheduling cycle, each a pass over the running jobs (0: 8); fewer run faster on large, busy clusters")
	fs.DurationVar(&r.grace, "grace", r.grace, "time a preempted job gets to checkpoint before it stops (0: 2m)")
	fs.StringVar(&r.qosPriority, "qos-priority", r.qosPriority, "openb traces: job priorities from the qos column, as default (Guaranteed 3, LS 2, Burstable 1, BE 0) or CLASS=N,… (empty: every job priority 0)")
	fs.Float64Var(&r.highShare, "high-priority-share", r.highShare, "synthetic traces: the share (0..1) of jobs with priority --high-priority, the rest 0")
	fs.Int32Var(&r.highPriority, "high-priority", r.highPriority, "the priority of --high-priority-share jobs")
	fs.Float64Var(&r.runtimeEst, "runtime-estimate", r.runtimeEst, "give jobs runtime estimates of this factor × their true duration (0: none)")
	fs.Float64Var(&r.estSigma, "estimate-sigma", r.estSigma, "with --runtime-estimate, multiply each estimate by a log-normal factor exp(σ·Z) of this σ (0: none)")
	fs.DurationSliceVar(&r.estRound, "estimate-round", r.estRound, "with --runtime-estimate, round estimates up to the first of these values at or above them, as users pick round limits (e.g. 1h,4h,24h,48h)")
	fs.DurationVar(&r.scheduleEvery, "schedule-every", r.scheduleEvery, "also run a scheduling cycle at this period (0: only on events)")
	fs.DurationVar(&r.sampleEvery, "sample-every", r.sampleEvery, "time-series period (0: span of arrivals / 500)")
	fs.DurationVar(&r.horizon, "horizon", r.horizon, "stop at this simulated time (0: when every job has ended)")
	fs.DurationVar(&r.minCycle, "min-cycle-interval", r.minCycle, "at most one event-triggered scheduling cycle per this interval (0: one per event time)")
	fs.BoolVar(&r.fragLevels, "frag-levels", r.fragLevels, "also measure stranded free GPUs per topology level at every sample (slower on large clusters)")
	fs.BoolVar(&r.cycleStats, "cycle-stats", r.cycleStats, "also record the library's statistics of every scheduling cycle (gpusched.Config.Stats: pending by queue and reason, queue GPUs, admissions, preemptions, stranded GPUs per level — what an embedder exports) and write them to "+report.CycleStatsFile)
	fs.StringVar(&r.slurm, "slurm", r.slurm, "a Slurm site directory (slurm.conf, topology.conf or topology.yaml, gres.conf, assoc.txt): its cluster, its associations as queues with Fair Tree, and the Slurm-like preset's ordering and backfill")
	r.defrag.bind(fs)
	r.elastic.bind(fs)
	fs.BoolVar(&r.rejectErrors, "reject-errors", r.rejectErrors, "stop with an error when a job is rejected (too large, bad spec) instead of counting it")
}

// check rejects settings no run can use rather than ignore them, naming
// the flag: a factor of the speed model outside (0, 1], or given while
// the speed model is off (unless swept has "speed": a sweep may turn it
// on); a negative --repeat; --map for a trace kind that has no mapping.
func (r *runConfig) check(swept map[string]bool) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"speed-host", r.speedHost}, {"speed-switch", r.speedSwitch}, {"speed-level", r.speedLevel}} {
		if f.v == 0 {
			continue
		}
		if !(f.v > 0 && f.v <= 1) {
			return fmt.Errorf("--%s %g: want a speed factor in (0, 1] (0: the default)", f.name, f.v)
		}
		if !r.speed && !swept["speed"] {
			return fmt.Errorf("--%s %g needs --speed: it is a factor of the speed model, which is off", f.name, f.v)
		}
	}
	if r.repeat < 0 {
		return fmt.Errorf("--repeat %d: want the number of copies of the trace, 0 or 1 for one", r.repeat)
	}
	if e, _, err := r.effective(); err != nil {
		return err
	} else if _, err := parseDemote(e.demote, r.reg); err != nil {
		return err
	} else if strings.HasPrefix(e.demote, "slice:") && r.ckptInterval == 0 && !swept["ckpt-interval"] {
		return fmt.Errorf("--demote %s without --ckpt-interval: jobs never checkpoint, so each one longer than a lease restarts from zero at every lease's end and never finishes", e.demote)
	} else if r.starveLimit < 0 || (r.starveLimit > 0 && e.demote == "" && !swept["demote"] && !swept["ordering"]) {
		return fmt.Errorf("--starve-limit %g: want ≥ 0, with --demote or --ordering las:…", r.starveLimit)
	}
	if err := r.defrag.check(r.preempt, swept); err != nil {
		return err
	}
	if err := r.checkThroughput(swept); err != nil { // (throughput.go)
		return err
	}
	if err := r.elastic.check(r.preempt, swept); err != nil {
		return err
	}
	if r.mapping != "" {
		if kind, _, _ := strings.Cut(r.traceArg, ":"); kind != "csv" && kind != "jsonl" {
			return fmt.Errorf("--map applies to csv and jsonl traces, not %s (--trace %s)", kind, r.traceArg)
		}
	}
	return nil
}

// set changes one setting by its flag name, for sweeps.
func (r *runConfig) set(name, value string) error {
	fs := pflag.NewFlagSet("sweep", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	r.bind(fs, true)
	if fs.Lookup(name) == nil {
		return fmt.Errorf("sweep: unknown parameter %q (use a flag name of `gpusched sim run`, e.g. policy, gpu-mtbf, seed)", name)
	}
	if err := fs.Set(name, value); err != nil {
		return fmt.Errorf("sweep: %s=%s: %w", name, value, err)
	}
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// dataSeed is the seed of trace generation and replication.
func (r *runConfig) dataSeed() uint64 {
	if r.hasTraceSeed {
		return r.traceSeed
	}
	return r.seed
}

// loadCluster loads the cluster of the run.
func (r *runConfig) loadCluster() (*topology.Cluster, error) {
	if r.slurm != "" {
		return r.slurmCluster()
	}
	if r.file != "" {
		return topology.LoadFile(r.file)
	}
	switch r.preset {
	case "":
		return nil, errors.New("no cluster: give --preset or --file")
	case sim.PhillyCluster.Name:
		sp, err := sim.PhillyCluster.Spec()
		if err != nil {
			return nil, err
		}
		return topology.Build(sp)
	}
	return topology.LoadPreset(r.preset)
}

// loadedTrace is a trace read into memory with what the reader counted.
type loadedTrace struct {
	name  string
	jobs  []trace.Job
	stats trace.Stats
}

func (r *runConfig) traceOptions(file string) (trace.Options, error) {
	o := trace.Options{File: file, SkipMalformed: r.skipBad, Strict: r.strict, KeepCPUOnly: r.keepCPU,
		Shape: trace.Shape{MaxGPUsPerTask: r.maxPerTask, CPUMilliPerGPU: int64(r.cpuPerGPU * 1000), MemoryMiBPerGPU: r.memPerGPU}}
	if r.maxPerTask < 0 || r.cpuPerGPU < 0 || r.memPerGPU < 0 {
		return o, errors.New("--max-gpus-per-task, --cpu-per-gpu and --mem-per-gpu must not be negative")
	}
	if r.topoLevel != "" {
		o.Shape.Topology = []workload.Constraint{{Level: r.topoLevel}}
	}
	return o, nil
}

// loadTrace reads the trace the run names. capacity is the cluster's GPU
// count, for synthetic traces' offered load.
func (r *runConfig) loadTrace(capacity int) (*loadedTrace, error) {
	kind, path, ok := strings.Cut(r.traceArg, ":")
	if !ok || path == "" {
		if r.traceArg == "openb" {
			kind, path = "openb", "builtin"
		} else {
			return nil, fmt.Errorf("--trace %q: want KIND:PATH (e.g. philly:philly.csv, openb:builtin, synthetic:10000)", r.traceArg)
		}
	}
	lt := &loadedTrace{name: r.traceArg}
	o, err := r.traceOptions(filepath.Base(path))
	if err != nil {
		return nil, err
	}
	if r.highShare != 0 && kind != "synthetic" {
		return nil, fmt.Errorf("--high-priority-share applies to synthetic traces, not %s", kind)
	}
	qos, err := parseQoS(r.qosPriority)
	if err != nil {
		return nil, err
	}
	if qos != nil && kind != "openb" {
		return nil, fmt.Errorf("--qos-priority applies to openb traces, not %s", kind)
	}
	ob := trace.OpenBOptions{File: o.File, SkipMalformed: r.skipBad, Strict: r.strict, QoSPriority: qos}
	if kind == "synthetic" {
		n, err := strconv.Atoi(path)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--trace synthetic:%s: want a number of jobs", path)
		}
		syn := trace.Synthetic{Seed: r.dataSeed(), Jobs: n, Shape: o.Shape,
			Queues:     []trace.Weighted[string]{{Value: "pretrain", Weight: 1}, {Value: "finetune", Weight: 2}, {Value: "eval", Weight: 3}, {Value: "research", Weight: 4}},
			Priorities: trace.HighPriority(r.highShare, r.highPriority)}
		load := r.synLoad
		if load == 0 {
			load = 0.9
		}
		if !(load > 0) {
			return nil, fmt.Errorf("--load %g: want > 0", r.synLoad)
		}
		syn.MeanInterarrival = syn.InterarrivalFor(capacity, load)
		sr, err := trace.NewSynthetic(syn)
		if err != nil {
			return nil, err
		}
		if lt.jobs, err = trace.Collect(sr); err != nil {
			return nil, err
		}
		lt.stats = sr.Stats()
		// The mean interarrival offers load in expectation only: a
		// heavy-tailed sample's GPU time falls short of its mean (1.17 for
		// 1.5 on 300 jobs). Scaling the arrivals makes the trace offer
		// exactly load over its arrival span, as --load does for a recorded
		// trace (summary.json's offeredLoad).
		if len(lt.jobs) > 1 {
			if _, err := trace.ScaleToLoad(lt.jobs, capacity, load); err != nil {
				return nil, fmt.Errorf("--load %g: %w", load, err)
			}
		}
		return lt, nil
	}
	if kind == "openb" && path == "builtin" {
		ob.File = data.OpenBDefaultName
		jobs, st, err := trace.ReadOpenB(data.OpenBDefault(), ob)
		lt.name = "openb:" + data.OpenBDefaultName
		lt.jobs, lt.stats = jobs, st
		if err != nil {
			return nil, err
		}
		return lt, checkTimed(lt)
	}
	f, err := openInput("--trace", path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rd trace.StatsReader
	switch kind {
	case "openb":
		jobs, st, err := trace.ReadOpenB(f, ob)
		if err != nil {
			return nil, err
		}
		lt.jobs, lt.stats = jobs, st
		return lt, checkTimed(lt)
	case "philly":
		rd, err = trace.NewPhillyCSV(f, o)
	case "philly-json":
		rd = trace.NewPhillyJSON(f, o)
	case "helios":
		rd, err = trace.NewHeliosCSV(f, o)
	case "acme":
		rd, err = trace.NewAcmeCSV(f, o)
	case "csv", "jsonl":
		m, merr := trace.ParseMapping(r.mapping)
		if merr != nil {
			return nil, fmt.Errorf("--map: %w", merr)
		}
		if kind == "csv" {
			rd, err = trace.NewCSV(f, m, o)
		} else {
			rd, err = trace.NewJSONL(f, m, o)
		}
	default:
		return nil, fmt.Errorf("--trace: unknown kind %q (openb, philly, philly-json, helios, acme, csv, jsonl, synthetic)", kind)
	}
	if err != nil {
		return nil, err
	}
	lt.jobs, err = trace.Collect(rd)
	lt.stats = rd.Stats()
	return lt, err
}

// checkTimed refuses time-based replay of a trace without times (the
// openb multigpu lists): it is for the inflation experiment.
func checkTimed(lt *loadedTrace) error {
	for i := range lt.jobs {
		if lt.jobs[i].Duration > 0 {
			return nil
		}
	}
	if len(lt.jobs) == 0 {
		return nil
	}
	return fmt.Errorf("trace %s has no durations (an openb multigpu list?): replay it with `gpusched sim compare --inflation`", lt.name)
}

// replayable drops jobs of unknown duration (zero), which a time-based
// replay cannot run, and counts them.
func replayable(lt *loadedTrace) {
	kept := lt.jobs[:0]
	for _, j := range lt.jobs {
		if j.Duration > 0 {
			kept = append(kept, j)
		} else {
			lt.stats.Filter("no duration")
		}
	}
	lt.jobs = kept
}

// queueSetup builds the queue tree and the fairness entitlements.
func (r *runConfig) queueSetup(jobs []trace.Job) (queue.Config, []sim.Tenant, map[string]string, error) {
	if r.slurm != "" && (r.queues == "flat" || r.queues == "") {
		return r.slurmQueues(jobs)
	}
	p := queue.Policy{Ordering: queue.Ordering(r.ordering), Backfill: r.backfill}
	tenants := rootsched.Tenants(jobs)
	qm := map[string]string{"": "default"} // jobs without a tenant
	switch {
	case r.queues == "flat" || r.queues == "":
		return rootsched.FlatQueues(tenants, p), nil, qm, nil
	case r.queues == "single":
		for _, t := range tenants {
			qm[t] = "default"
		}
		return rootsched.FlatQueues([]string{"default"}, p), nil, qm, nil
	case strings.HasPrefix(r.queues, hardVCPrefix):
		return queue.Config{}, nil, nil, nil // hardVCQueues, with the partitioned cluster
	case strings.HasPrefix(r.queues, "vc:"):
		path := strings.TrimPrefix(r.queues, "vc:")
		f, err := openInput("--queues", path)
		if err != nil {
			return queue.Config{}, nil, nil, err
		}
		defer f.Close()
		vcs, err := trace.ReadVCs(f, r.gpusPerNode, trace.Options{File: filepath.Base(path)})
		if err != nil {
			return queue.Config{}, nil, nil, err
		}
		return rootsched.VCQueues(vcs, tenants, p), rootsched.VCTenants(vcs), qm, nil
	}
	if path, ok := strings.CutPrefix(r.queues, "config:"); ok {
		return r.queueFile(path, tenants, qm)
	}
	return queue.Config{}, nil, nil, fmt.Errorf("--queues %q: want flat, single, vc:PATH or config:PATH", r.queues)
}

// queueFile reads a queue tree and maps tenants that are not leaves to
// --default-queue. Fairness entitlements are the leaves' nominal GPU
// quotas, when any leaf has one.
func (r *runConfig) queueFile(path string, tenants []string, qm map[string]string) (queue.Config, []sim.Tenant, map[string]string, error) {
	b, err := readInput("--queues", path)
	if err != nil {
		return queue.Config{}, nil, nil, err
	}
	var cfg queue.Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return queue.Config{}, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var leaves []queue.Node
	var walk func(n queue.Node)
	walk = func(n queue.Node) {
		if len(n.Children) == 0 {
			leaves = append(leaves, n)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(cfg.Root)
	isLeaf := map[string]bool{}
	var ents []sim.Tenant
	for _, l := range leaves {
		isLeaf[l.Name] = true
		for _, q := range l.Quotas {
			if q.Resource == queue.ResourceGPU && q.Nominal > 0 {
				ents = append(ents, sim.Tenant{Name: l.Name, GPUs: int(q.Nominal)})
			}
		}
	}
	if r.defaultQueue != "" && !isLeaf[r.defaultQueue] {
		return queue.Config{}, nil, nil, fmt.Errorf("--default-queue %q is not a leaf of %s", r.defaultQueue, path)
	}
	delete(qm, "")
	for _, t := range tenants {
		if !isLeaf[t] && r.defaultQueue != "" {
			qm[t] = r.defaultQueue
		}
	}
	if !isLeaf["default"] && r.defaultQueue != "" {
		qm[""] = r.defaultQueue
	}
	return cfg, ents, qm, nil
}

// parseQoS parses --qos-priority: empty (none), "default", or
// CLASS=N,….
func parseQoS(s string) (map[string]int32, error) {
	switch strings.TrimSpace(s) {
	case "":
		return nil, nil
	case "default":
		return trace.OpenBQoSPriorities, nil
	}
	m := map[string]int32{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		p, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if !ok || strings.TrimSpace(k) == "" || err != nil {
			return nil, fmt.Errorf("--qos-priority %q: %q is not CLASS=PRIORITY (or use default)", s, kv)
		}
		m[strings.TrimSpace(k)] = int32(p)
	}
	return m, nil
}

// preemptor builds the Preemptor --preempt asks for; nil for off.
func (r *runConfig) preemptor() (gpusched.Preemptor, error) {
	mode := r.preempt
	switch mode {
	case "none", "false":
		mode = "off"
	case "true":
		mode = "queue"
	case "any":
		mode = "cluster"
	}
	p, err := rootsched.Preemptor(mode, r.grace, r.preemptPlans, r.defrag.planner)
	if err != nil {
		return nil, fmt.Errorf("--preempt %q: want one of %s, and --preempt-plans ≥ 0: %w", r.preempt, strings.Join(rootsched.PreemptModes, ", "), err)
	}
	return p, nil
}

// schedConfig is the Scheduler configuration of the run, less cluster,
// queues and placer.
func (r *runConfig) schedConfig() (gpusched.Config, error) {
	p, err := r.preemptor()
	if err != nil {
		return gpusched.Config{}, err
	}
	if r.maxRestarts < 0 || r.drainGrace < 0 || r.drainKeep < 0 {
		return gpusched.Config{}, errors.New("--max-restarts, --drain-grace and --drain-keep must not be negative")
	}
	cfg := gpusched.Config{Preemptor: p, MaxRestarts: r.maxRestarts, DrainGrace: r.drainGrace, DrainKeep: r.drainKeep, Seed: r.seed, Defrag: r.defrag.config(), Elastic: r.elastic.config(), Stats: r.cycleStats}
	if r.slurm != "" {
		if err := r.slurmBackfill(&cfg); err != nil {
			return gpusched.Config{}, err
		}
	}
	return cfg, nil
}

// parseOutage parses level=…,for=…[,every=…][,at=…][,name=…].
func parseOutage(s string) (sim.Outage, error) {
	var o sim.Outage
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return o, fmt.Errorf("--outage %q: %q is not key=value", s, kv)
		}
		var err error
		switch k {
		case "level":
			o.Level = v
		case "name":
			o.Name = v
		case "at":
			o.At, err = time.ParseDuration(v)
		case "every":
			o.Every, err = time.ParseDuration(v)
		case "for":
			o.For, err = time.ParseDuration(v)
		default:
			return o, fmt.Errorf("--outage %q: unknown key %q (level, name, at, every, for)", s, k)
		}
		if err != nil {
			return o, fmt.Errorf("--outage %q: %s: %w", s, k, err)
		}
	}
	if o.Level == "" || o.For <= 0 {
		return o, fmt.Errorf("--outage %q: level and a positive for= are required", s)
	}
	return o, nil
}

// simConfig turns the model flags into a sim.Config (without cluster and
// scheduler).
func (r *runConfig) simConfig() (sim.Config, error) {
	speeds, err := readGPUSpeeds(r.gpuSpeeds)
	if err != nil {
		return sim.Config{}, err
	}
	var outs []sim.Outage
	for _, s := range r.outages {
		o, err := parseOutage(s)
		if err != nil {
			return sim.Config{}, err
		}
		outs = append(outs, o)
	}
	return sim.Config{
		Outages:          outs,
		Seed:             r.seed,
		Checkpoint:       sim.CheckpointModel{Interval: r.ckptInterval, Overhead: r.ckptOverhead, RestartCost: r.restartCost, ResizeCost: r.resizeCost},
		Failures:         sim.FailureModel{GPUMTBF: r.gpuMTBF, HostMTBF: r.hostMTBF, ToRMTBF: r.torMTBF, RepairTime: r.repair},
		Drain:            sim.DrainModel{MeanInterval: r.drainEvery, Duration: r.drainFor},
		Speed:            sim.SpeedModel{Enabled: r.speed, SameHost: r.speedHost, SameSwitch: r.speedSwitch, PerLevel: r.speedLevel},
		Preemption:       sim.PreemptionModel{Grace: r.grace},
		RuntimeEstimate:  r.runtimeEst,
		EstimateError:    sim.EstimateError{Sigma: r.estSigma, RoundUp: r.estRound},
		ScheduleEvery:    r.scheduleEvery,
		SampleEvery:      r.sampleEvery,
		Horizon:          r.horizon,
		RejectErrors:     r.rejectErrors,
		MinCycleInterval: r.minCycle,
		StrandedByLevel:  r.fragLevels,
		GPUSpeeds:        speeds,
		Elastic:          r.elastic.share,
	}, nil
}

func workers(n int) int {
	if n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}
