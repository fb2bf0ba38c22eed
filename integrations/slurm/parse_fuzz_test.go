package slurmharness

import (
	"strings"
	"testing"
)

// FuzzParseOutput feeds arbitrary text to the parsers of Slurm's command
// output the harness reads (sshare -P, sprio, squeue and scontrol job
// listings, squeue --start): none may panic, and a parse that succeeds
// never returns more rows than its input has lines.
func FuzzParseOutput(f *testing.F) {
	f.Add("Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins\n" +
		"root|||0.000000|10||1.000000||||cpu=0\n root|root|1|0.5|0|0.000000|0.000000|1.000000|inf||cpu=0\n  a|u|1|0.5|10|1|1|0.5|0.5||cpu=0\n")
	f.Add("  8|1.0000000\n9|0.4545455\n")
	f.Add("Account|User\nroot|")
	f.Add("8|y")
	f.Add("")
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
	})
}
