package slurmharness

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseOutput feeds arbitrary text to the parsers of Slurm's command
// output the harness reads (sshare -P, sprio, squeue and scontrol job
// listings, squeue --start, slurmctld.log's backfill lines): none may panic, and a parse that succeeds
// never returns more rows than its input has lines.
func FuzzParseOutput(f *testing.F) {
	f.Add("Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins\n" +
		"root|||0.000000|10||1.000000||||cpu=0\n root|root|1|0.5|0|0.000000|0.000000|1.000000|inf||cpu=0\n  a|u|1|0.5|10|1|1|0.5|0.5||cpu=0\n")
	f.Add("  8|1.0000000\n9|0.4545455\n")
	f.Add("Account|User\nroot|")
	f.Add("8|y")
	f.Add("")
	f.Add("[2026-12-01T21:10:03.627] sched/backfill: _dump_job_sched: JobId=101 to start at 2026-12-01T21:11:00, end at 2026-12-01T21:13:00 on nodes node[01-02,07] in partition gpu\n" +
		"[2026-12-01T21:10:06.001] sched: Allocate JobId=101 NodeList=node07 #CPUs=4 Partition=gpu\n" +
		"[2026-12-01T21:10:06.002] sched/backfill: _start_job: Started JobId=102 in gpu on node02\n")
	f.Add("[2026-12-01T21:10:03.627] sched/backfill: _dump_job_sched: JobId=1 to start at 2026-13-01T21:11:00, end at x on nodes node[9-1] in partition gpu")
	f.Fuzz(func(t *testing.T, out string) {
		lines := strings.Count(out, "\n") + 1
		if rows, err := ParseSshare(out); err == nil && len(rows) > lines {
			t.Fatalf("ParseSshare: %d rows from %d lines", len(rows), lines)
		}
		if m, err := ParseSprio(out); err == nil && len(m) > lines {
			t.Fatalf("ParseSprio: %d jobs from %d lines", len(m), lines)
		}
		if jobs, err := ParseJobs(out); err == nil && len(jobs) > lines {
			t.Fatalf("ParseJobs: %d jobs from %d lines", len(jobs), lines)
		}
		if m, err := ParseStarts(out); err == nil && len(m) > lines {
			t.Fatalf("ParseStarts: %d starts from %d lines", len(m), lines)
		}
		if b, err := ParseBackfillLog(strings.NewReader(out), time.UTC); err == nil && len(b.Plans)+len(b.Starts) > lines {
			t.Fatalf("ParseBackfillLog: %d records from %d lines", len(b.Plans)+len(b.Starts), lines)
		}
	})
}
