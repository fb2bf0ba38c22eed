//go:build linux

package gang

import "syscall"

// threadCPU returns the CPU time the calling OS thread has used, in
// nanoseconds (getrusage RUSAGE_THREAD), or -1 if unavailable. Benchmarks
// lock their goroutine to a thread and report CPU time per op beside wall
// time, which other processes on a shared machine inflate.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
