// Package trace reads job traces for the simulator: the Alibaba openb pod
// lists (cluster-trace-gpu-v2023), the Philly trace in its processed CSV and
// original JSON forms, the Helios and Acme schemas, and a generic CSV/JSONL
// format with a column mapping. Readers stream from an io.Reader and report
// bad rows with the file, line and field.
package trace

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpusched/gpusched/workload"
)

// Job is one job of a trace as the simulator replays it.
type Job struct {
	// Spec is the job to submit. Spec.ID is unique within a trace;
	// Spec.Queue is the tenant (virtual cluster, user, team) where the
	// trace names one.
	Spec workload.Job
	// Submit is when the job arrives, as an offset from the trace start.
	Submit time.Duration
	// Duration is how long the job runs once placed, at full speed.
	// Zero means the trace does not say (e.g. the openb multigpu lists).
	Duration time.Duration
	// Line is the 1-based line (or record) of the source it came from.
	Line int
	// Type is the job's type: the network it trains (Gavel's job types,
	// e.g. resnet50-bs64), naming a class of the speed table the
	// simulator runs it by (sim.SpeedTable.Classes). Empty: the table's
	// default factors. Set from a trace column (Mapping.Type) or a
	// mapping file (ReadJobTypes, AssignTypes).
	Type string
}

// Reader yields jobs one at a time. Next returns io.EOF after the last job.
// A malformed record yields a *ParseError, unless the reader was told to
// skip bad records, in which case it counts them (see Stats).
type Reader interface {
	Next() (Job, error)
}

// Stats counts what a reader did.
type Stats struct {
	// Read is the number of jobs returned.
	Read int
	// Skipped counts records skipped as malformed, by reason; only
	// non-zero when skipping was asked for.
	Skipped int
	// SkipReasons maps a short reason to its count.
	SkipReasons map[string]int
	// FirstSkip is the first skipped record's error, for reports.
	FirstSkip error
	// Filtered counts well-formed records a reader left out on purpose
	// (a job that never ran, a CPU-only job when only GPU jobs are asked
	// for), by reason in FilterReasons. Unlike Skipped, these are not
	// errors and are counted whatever the skip setting.
	Filtered int
	// FilterReasons maps a short reason to its count.
	FilterReasons map[string]int
	// IgnoredColumns lists, in header order, the columns of a tabular
	// trace that the reader does not know and left unread (a misspelt
	// column silently dropping a constraint would change the result, so
	// readers report them; strict readers reject them instead).
	IgnoredColumns []string
}

// Filter records a record left out on purpose.
func (s *Stats) Filter(reason string) {
	s.Filtered++
	if s.FilterReasons == nil {
		s.FilterReasons = map[string]int{}
	}
	s.FilterReasons[reason]++
}

// Skip records a skipped record.
func (s *Stats) Skip(reason string, err error) {
	s.Skipped++
	if s.SkipReasons == nil {
		s.SkipReasons = map[string]int{}
	}
	s.SkipReasons[reason]++
	if s.FirstSkip == nil {
		s.FirstSkip = err
	}
}

// ErrMalformed is the sentinel every *ParseError unwraps to.
var ErrMalformed = errors.New("malformed trace record")

// ParseError names the file, line and field of a bad record.
type ParseError struct {
	File  string // may be empty when reading an unnamed stream
	Line  int
	Field string // column or key; empty for whole-record problems
	Msg   string
}

// Error returns "FILE:LINE: field FIELD: MSG".
func (e *ParseError) Error() string {
	s := fmt.Sprintf("%s:%d: ", e.File, e.Line)
	if e.File == "" {
		s = fmt.Sprintf("line %d: ", e.Line)
	}
	if e.Field != "" {
		s += "field " + e.Field + ": "
	}
	return s + e.Msg
}

// Unwrap returns ErrMalformed.
func (e *ParseError) Unwrap() error { return ErrMalformed }
