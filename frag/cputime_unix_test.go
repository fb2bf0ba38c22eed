//go:build unix

package frag

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used. Benchmarks report it
// beside wall time because shared machines inflate the latter.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
