package slurmharness

import (
	"fmt"
	"math/rand/v2"
	"time"
)

func job(name string, nodes, gpus int, typ string, limit time.Duration) JobSpec {
	cpus := 2 * gpus
	if cpus == 0 {
		cpus = 1
	}
	return JobSpec{Name: name, Nodes: nodes, GPUs: gpus, Type: typ, CPUs: cpus, MemMiB: 8000 * int64(max(gpus, 1)), Limit: limit, Sleep: limit}
}

// PlacementJobs is scenario (a): a mix of single-GPU, partial-node, whole-
// node and multi-node jobs of both GPU types that fits the conformance site
// (8 nodes × 8 h100, 8 nodes × 4 a100) all at once, in submission order.
func PlacementJobs() []JobSpec {
	const l = 10 * time.Minute
	return []JobSpec{
		job("a01-h100-2x8", 2, 8, "h100", l),
		job("a02-h100-1", 1, 1, "h100", l),
		job("a03-a100-3x4", 3, 4, "a100", l),
		job("a04-h100-4", 1, 4, "h100", l),
		job("a05-a100-2", 1, 2, "a100", l),
		job("a06-h100-2", 1, 2, "h100", l),
		job("a07-h100-8", 1, 8, "h100", l),
		job("a08-a100-1", 1, 1, "a100", l),
		job("a09-h100-3", 1, 3, "h100", l),
		job("a10-a100-4", 1, 4, "a100", l),
		job("a11-h100-1", 1, 1, "h100", l),
		job("a12-a100-2x4", 2, 4, "a100", l),
		job("a13-h100-2", 1, 2, "h100", l),
		job("a14-a100-1", 1, 1, "a100", l),
		job("a15-h100-2x8", 2, 8, "h100", l),
		job("a16-h100-1", 1, 1, "h100", l),
		job("a17-a100-2", 1, 2, "a100", l),
		job("a18-h100-4", 1, 4, "h100", l),
	}
}

// BackfillJobs is scenario (b): running jobs with known time limits (r*)
// fill most of the site; the head jobs (p*) wait for them with
// reservations; short jobs (b*) fit in the holes before the reservations
// and backfill, longer ones (w*) would delay a reservation and wait. Every
// job runs 2 s less than its limit, so every job has started after about
// 2 minutes of real time.
func BackfillJobs() []JobSpec {
	m := time.Minute
	jobs := []JobSpec{
		job("r1-h100-3x8", 3, 8, "h100", 2*m),
		job("r2-h100-4x8", 4, 8, "h100", 2*m),
		job("r3-a100-6x4", 6, 4, "a100", 1*m),
		job("p1-h100-4x8", 4, 8, "h100", 1*m),
		job("p2-a100-4x4", 4, 4, "a100", 1*m),
		job("b1-h100-8", 1, 8, "h100", 1*m),
		job("w1-h100-8", 1, 8, "h100", 2*m),
		job("b2-a100-1", 1, 1, "a100", 1*m),
		job("b3-a100-4", 1, 4, "a100", 2*m),
		job("p3-a100-3x4", 3, 4, "a100", 1*m),
		job("w2-h100-2x8", 2, 8, "h100", 1*m),
	}
	for i := range jobs {
		jobs[i].Sleep = jobs[i].Limit - 2*time.Second
	}
	return jobs
}

// TraceJobs is scenario (d): n jobs arriving over span, each running
// 10–120 s on one node: 1 GPU (60%), 2 GPUs (25%), half a node (10%) or a
// whole node (5%), h100 twice as often as a100 (as their GPU counts), drawn
// from seed. Time limits are whole minutes above the run time, as users give them.
func TraceJobs(n int, span time.Duration, seed uint64) []JobSpec {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var out []JobSpec
	for i := range n {
		run := time.Duration(10+r.IntN(111)) * time.Second
		limit := (run/time.Minute + 1) * time.Minute
		typ, per := "h100", 8
		if r.IntN(3) == 0 { // the a100 half has a third of the GPUs
			typ, per = "a100", 4
		}
		var j JobSpec
		switch k := r.IntN(20); {
		case k < 12:
			j = job("", 1, 1, typ, limit)
		case k < 17:
			j = job("", 1, 2, typ, limit)
		case k < 19:
			j = job("", 1, per/2, typ, limit)
		default:
			j = job("", 1, per, typ, limit)
		}
		j.Name = fmt.Sprintf("d%03d-%s-%dx%d", i, typ, j.Nodes, j.GPUs)
		j.Sleep = run
		j.Arrive = time.Duration(i) * span / time.Duration(n)
		j.Arrive += time.Duration(r.IntN(int(span/time.Duration(n)/time.Second)+1)) * time.Second
		j.Arrive = j.Arrive.Truncate(time.Second)
		out = append(out, j)
	}
	return out
}
