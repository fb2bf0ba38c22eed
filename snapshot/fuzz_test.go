package snapshot

import (
	"errors"
	"testing"
)

// tinyCluster is an inline cluster of two hosts with two MIG-capable
// GPUs each, in as few bytes as the format allows.
const tinyCluster = `cluster: {spec: {version: 1, name: t, levels: [{name: tor}], accelerators: [{model: A, mig: {slots: 7, profiles: [{name: 1g, size: 1, starts: [0, 1, 2, 3, 4, 5, 6]}, {name: 3g, size: 4, starts: [0]}]}}], templates: [{name: t, cpuMilli: 8000, memoryMiB: 64, accelerator: A, gpus: 2}], switches: [{name: s, level: tor}], hosts: [{name: "h[1-2]", template: t, parent: s}]}}
`

// tinyState is a small state that reaches every part of the loader: the
// tiny cluster, two queues with a quota, a draining GPU, and a running, an
// admitted (MIG), a requeued (shares, with progress and a grace) and a
// pending job.
const tinyState = "now: 2025-01-01T10:00:00Z\n" + tinyCluster + `defaultRuntime: 1h
queues: {root: {children: [{name: a, quotas: [{resource: gpu, nominal: 2}], policy: {backfill: true}}, {name: b}]}}
health: [{gpu: h2/gpu1, state: draining}]
jobs:
- {id: r, queue: a, groups: [{count: 1, gpus: 1}], runtime: 2h, submitted: 2025-01-01T09:00:00Z, state: running, started: 2025-01-01T09:10:00Z, placement: [{host: h1, gpus: [0]}]}
- {id: m, queue: b, groups: [{count: 1, migProfile: 1g}], submitted: 2025-01-01T09:00:00Z, state: admitted, placement: [{host: h1, gpu: 1, mig: 1g, start: 2}]}
- {id: s, queue: b, groups: [{count: 2, gpuMilli: 500}], runtime: 1h, grace: 30s, submitted: 2025-01-01T09:30:00Z, state: requeued, progress: 10m}
- {id: p, queue: a, priority: 5, groups: [{count: 1, gpus: 2}], topology: [{level: tor, required: true}], submitted: 2025-01-01T09:40:00Z}
`

// tinyV5 is a small state with every part version 5 added.
const tinyV5 = "now: 2025-01-01T10:00:00Z\n" + tinyCluster + `queues: {root: {children: [{name: a}]}}
cordoned: [h2]
defrag: {after: 10m, perHour: 2, maxPerJob: 1}
jobs:
- {id: r, queue: a, groups: [{count: 1, gpus: 1}], submitted: 2025-01-01T09:00:00Z, state: running, started: 2025-01-01T09:00:00Z, moves: 1, placement: [{host: h1, gpus: [1]}]}
- {id: g, queue: a, groups: [{count: 1, gpus: 2}], submitted: 2025-01-01T09:10:00Z}
- {id: p, queue: a, priority: 1, groups: [{count: 2, gpus: 2}], submitted: 2025-01-01T09:20:00Z}
nominations: [{job: g, victims: [r], due: 2025-01-01T10:05:00Z, placement: [{host: h1, gpus: [0, 1]}]}]
migrations: [{job: r, to: [{host: h2, gpus: [0]}]}]
defragLog: [{at: 2025-01-01T09:55:00Z, lost: 60000}]
noPlans: [{job: p, priority: 1, quotas: true}]
`

// FuzzLoad feeds arbitrary bytes to the loader: it must return a state or
// an *Error, never panic; a loaded state must schedule.
//
// Its speed comes from small seeds on a tiny inline cluster, and
// MaxHosts: each input that loads costs a fraction of a millisecond, and
// each that the fuzzer keeps can be minimised within seconds (Go's
// minimiser tries every removal of a run of bytes: quadratic in the
// input's length, so a seed of a few kilobytes kept the workers minimising
// for the full minute -fuzzminimizetime allows, running no new inputs).
func FuzzLoad(f *testing.F) {
	const now = "now: 2025-01-01T10:00:00Z\n"
	const q = "queues: {root: {children: [{name: a}]}}\n"
	job := func(j string) {
		f.Add([]byte(now + tinyCluster + q + "jobs:\n- {id: j, queue: a, submitted: 2025-01-01T09:00:00Z, " + j + "}\n"))
	}
	// One job of each kind and state.
	job("groups: [{count: 1, gpus: 1}], state: running, started: 2025-01-01T09:10:00Z, placement: [{host: h1, gpus: [0]}]")
	job("groups: [{count: 1, migProfile: 1g}], state: admitted, placement: [{host: h2, gpu: 1, mig: 1g, start: 2}]")
	job("groups: [{count: 2, gpuMilli: 500}], runtime: 1h, grace: 30s, state: requeued, progress: 10m")
	job("groups: [{count: 1, gpus: 2}], priority: 5, topology: [{level: tor, required: true}]")
	// Hostile values: a negative GPU and a MIG start out of range, an
	// unknown profile, a share of a whole GPU, a negative grace.
	job("groups: [{count: 1, migProfile: 1g}], state: admitted, placement: [{host: h1, gpu: -1, mig: 1g, start: 99}]")
	job("groups: [{count: 1, migProfile: 7g}], state: admitted, placement: [{host: h1, gpu: 0, mig: 7g, start: -3}]")
	job("groups: [{count: 1, gpuMilli: 1000}], state: running, started: 2025-01-01T09:10:00Z, placement: [{host: h1, gpu: 0, milli: 1000}]")
	job("groups: [{count: 1, gpus: 1}], grace: -30s")
	// Bad times: started after now, submitted after now, started before
	// submitted.
	job("groups: [{count: 1, gpus: 1}], state: running, started: 2025-01-01T11:10:00Z, placement: [{host: h1, gpus: [0]}]")
	f.Add([]byte(now + tinyCluster + q + "jobs: [{id: j, queue: a, submitted: 2025-01-02T09:00:00Z, groups: [{count: 1}]}]\n"))
	job("groups: [{count: 1, gpus: 1}], state: running, started: 2025-01-01T08:10:00Z, placement: [{host: h1, gpus: [0]}]")
	// Health, a quota, a generated cluster with fgd, JSON.
	f.Add([]byte(now + tinyCluster + "queues: {root: {children: [{name: a, quotas: [{resource: gpu, nominal: 2}]}]}}\nhealth: [{gpu: h2/gpu1, state: draining}, {host: h1, state: failed}]\njobs: []\n"))
	f.Add([]byte(now + "cluster: {machine: dgx-a100, hosts: 2}\nplacer: fgd\nworkload: [{gpus: 1, weight: 0.5}, {gpuMilli: 500, weight: 0.5}]\n" + q + "jobs: []\n"))
	f.Add([]byte(`{"now": "2025-01-01T00:00:00Z", "cluster": {"machine": "dgx-a100"}, "queues": {"root": {"children": [{"name": "q"}]}}, "jobs": [{"id": "j", "queue": "q", "groups": [{"count": 1, "gpus": 2}], "submitted": "2025-01-01T00:00:00Z", "state": "running", "started": "2025-01-01T00:00:00Z", "placement": [{"host": "dgx-a100-1", "gpus": [0, 1]}]}]}`))
	// Version 5: cordons, defragmentation with a move in flight (its
	// gang's nomination, its destination, the budget's log, a job's
	// moves) and a preemption verdict.
	f.Add([]byte(tinyV5))
	// Version 6: consolidation with its state, a refused stop in force,
	// a placement domain.
	f.Add([]byte(tinyV6))
	// Version 7: a verdict with the hosts changed since.
	f.Add([]byte(tinyV7))
	// Version 9: faults not yet planned, a recovery in flight.
	f.Add([]byte(tinyV9))
	f.Add([]byte(now + tinyCluster + q + "leaving: [{host: h1}, {host: h2, template: t}]\njobs: [{id: j, queue: a, groups: [{count: 1, gpus: 1}], submitted: 2025-01-01T09:00:00Z, state: running, started: 2025-01-01T09:00:00Z, placement: [{host: h1, gpus: [0]}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 {
			return // yaml's cost, not the loader's; MaxBytes is tested apart
		}
		l, err := Load(data, "fuzz", Options{NoPreemption: true, MaxHosts: 8})
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("%T %v", err, err)
			}
			return
		}
		l.Scheduler.Schedule(l.State.Now)
	})
}

// tinyV9 is a small state with the parts version 9 added: faults not
// yet planned (of a host, a ToR, a GPU) and a recovery in flight.
const tinyV9 = "now: 2025-01-01T10:00:00Z\n" + tinyCluster + "queues: {root: {children: [{name: a}]}}\n" +
	"health: [{host: h1, state: failed}]\nfaults: [{host: h1, state: failed}, {domain: s, state: draining}, {gpu: h2/gpu0, state: healthy}]\n" +
	"recovering: [{job: j, action: requeue}]\n" +
	"jobs: [{id: j, queue: a, groups: [{count: 1, gpus: 1}], submitted: 2025-01-01T09:00:00Z, state: running, started: 2025-01-01T09:00:00Z, placement: [{host: h1, gpus: [0]}]}]\n"

// TestTinyV9Loads: FuzzLoad's version 9 seed loads with its faults and
// its recovery in flight: the first cycle recovers no job again.
func TestTinyV9Loads(t *testing.T) {
	l, err := Load([]byte(tinyV9), "tiny", Options{NoPreemption: true, MaxHosts: 8})
	if err != nil {
		t.Fatal(err)
	}
	rs := l.Scheduler.RecoveryState([]string{"j"})
	if len(rs.Faults) != 3 || len(rs.InFlight) != 1 {
		t.Fatalf("recovery state %+v", rs)
	}
	if d := l.Scheduler.Schedule(l.State.Now); len(d.Recoveries) != 0 {
		t.Errorf("decision:\n%s", d.Format(l.Cluster))
	}
}

// TestTinyStateLoads: the fuzz seed is a valid state (so the fuzzer starts
// from one), and every one of its parts is restored.
func TestTinyStateLoads(t *testing.T) {
	l, err := Load([]byte(tinyState), "tiny", Options{NoPreemption: true, MaxHosts: 8})
	if err != nil {
		t.Fatal(err)
	}
	if l.Scheduler.Len() != 4 || l.Cluster.NumGPUs() != 4 || len(l.State.Health) != 1 {
		t.Fatalf("%d jobs, %d GPUs", l.Scheduler.Len(), l.Cluster.NumGPUs())
	}
	if d := l.Scheduler.Schedule(l.State.Now); len(d.Pending)+len(d.Bindings) != 2 {
		t.Errorf("decision:\n%s", d.Format(l.Cluster))
	}
}

// BenchmarkLoadTiny is the cost of one FuzzLoad input that loads.
func BenchmarkLoadTiny(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		l, err := Load([]byte(tinyState), "tiny", Options{NoPreemption: true, MaxHosts: 8})
		if err != nil {
			b.Fatal(err)
		}
		l.Scheduler.Schedule(l.State.Now)
	}
}
