package benchmarks

import (
	"errors"
	"flag"
	"fmt"
	"sync"
	"testing"
)

// Failures are recorded here as well as reported to testing.B, because
// testing.Benchmark (which runs cases in-process) discards what a failing
// benchmark logs.
var (
	failMu  sync.Mutex
	lastErr string
)

func recordFailure(msg string) {
	failMu.Lock()
	lastErr = msg
	failMu.Unlock()
}

func fatal(b testing.TB, args ...any) {
	b.Helper()
	msg := fmt.Sprint(args...)
	recordFailure(msg)
	b.Fatal(msg)
}

func fatalf(b testing.TB, format string, args ...any) {
	b.Helper()
	msg := fmt.Sprintf(format, args...)
	recordFailure(msg)
	b.Fatal(msg)
}

// Result is the outcome of running one Case in-process.
type Result struct {
	Case Case
	// R is the benchmark's result; R.N is 0 when it failed or was
	// skipped.
	R testing.BenchmarkResult
	// Err is why it failed or was skipped; Skipped tells which.
	Err     error
	Skipped bool
}

var initTesting sync.Once

// Run runs c in this process with testing.Benchmark, for benchtime (a
// duration such as "1s" or a count such as "20x"; "" means c.BenchTime),
// as `go test -bench` would run it, and returns its result. It sets the
// testing package's -test.benchtime flag (registering the testing flags
// first if the program has not), so it must not run concurrently with
// other benchmarks. A case whose data is missing is skipped.
func Run(c Case, benchtime string) Result {
	if ok, msg := c.Available(); !ok {
		return Result{Case: c, Err: errors.New(msg), Skipped: true}
	}
	if benchtime == "" {
		benchtime = c.BenchTime
	}
	if benchtime == "" {
		benchtime = "1s"
	}
	initTesting.Do(testing.Init)
	if err := flag.Set("test.benchtime", benchtime); err != nil {
		return Result{Case: c, Err: fmt.Errorf("benchtime %q: %w", benchtime, err)}
	}
	recordFailure("")
	failed, skipped := false, false
	r := testing.Benchmark(func(b *testing.B) {
		defer func() {
			if b.Failed() {
				failed = true
			}
			if b.Skipped() {
				skipped = true
			}
		}()
		c.F(b)
	})
	res := Result{Case: c, R: r}
	failMu.Lock()
	msg := lastErr
	failMu.Unlock()
	switch {
	case skipped:
		res.Skipped, res.Err = true, errors.New("skipped")
	case failed || r.N == 0:
		if msg == "" {
			msg = "the benchmark failed"
		}
		res.Err = errors.New(msg)
	}
	return res
}
