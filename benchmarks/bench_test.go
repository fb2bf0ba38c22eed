package benchmarks

import (
	"testing"
)

// The go test entry points: one Benchmark function per group, each
// running its cases as sub-benchmarks, so that
//
//	go test -run '^$' -bench . -benchmem ./benchmarks/
//
// prints "BenchmarkLedger/alloc-release/100k-N …", the same names
// `gpusched bench` prints and benchstat compares. With -short, the 100k-GPU
// cases are skipped.

func BenchmarkTopology(b *testing.B) { runGroup(b, "Topology") }
func BenchmarkLedger(b *testing.B)   { runGroup(b, "Ledger") }
func BenchmarkPlace(b *testing.B)    { runGroup(b, "Place") }
func BenchmarkPreempt(b *testing.B)  { runGroup(b, "Preempt") }
func BenchmarkSchedule(b *testing.B) { runGroup(b, "Schedule") }
func BenchmarkSim(b *testing.B)      { runGroup(b, "Sim") }
func BenchmarkLive(b *testing.B)     { runGroup(b, "Live") }

func runGroup(b *testing.B, group string) {
	for _, c := range Cases() {
		if c.Group() != group {
			continue
		}
		b.Run(c.Sub(), func(b *testing.B) {
			if testing.Short() && c.Size == "100k" {
				b.Skip("100k-GPU case skipped in -short mode")
			}
			if ok, msg := c.Available(); !ok {
				b.Skip(msg)
			}
			c.F(b)
		})
	}
}
