// Package slurmharness runs a real Slurm (Debian's slurmctld and slurmd,
// started with -D on this host) beside gpusched on the same imported site
// configuration, feeds both the same scenarios and compares what they do.
//
// It is its own Go module so that the root module's go test ./... never
// starts daemons: the conformance test (TestConformance) runs from
// .ci/run's Slurm step, which installs the packages first, and skips with a
// message wherever slurmctld, slurmd or munged are not installed.
//
// Determinism: every scenario submits its jobs while the partition is DOWN
// and then sets it UP in one step, so Slurm sees the whole queue in one
// scheduling pass (placements, GPU indices and pending order repeat from
// run to run).
package slurmharness
