package slurmharness

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readCaptured reads scenario (c)'s outputs as a real Slurm 22.05 printed
// them (testdata/fairshare/captured, saved with GPUSCHED_SLURM_KEEP).
func readCaptured(t *testing.T) (share, prio, assoc string, probes []Probe) {
	t.Helper()
	dir := filepath.Join(fsDir, "captured")
	read := func(n string) string {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, ln := range strings.Split(strings.TrimSpace(read("probes.txt")), "\n") {
		f := strings.Fields(ln)
		id, err := strconv.Atoi(f[0])
		if err != nil || len(f) != 3 {
			t.Fatalf("probes.txt: %q", ln)
		}
		probes = append(probes, Probe{ID: id, Account: f[1], User: f[2]})
	}
	return read("sshare.txt"), read("sprio.txt"), read("assoc.txt"), probes
}

// TestFairTreeCaptured runs scenario (c)'s comparison, without Slurm, on
// what a real Slurm reported: the same factors, Level FS and job order.
func TestFairTreeCaptured(t *testing.T) {
	share, prio, assoc, probes := readCaptured(t)
	s := &Scenario{}
	fillFairTree(t, s, share, prio, assoc, probes)
	for _, d := range s.Disagreements {
		t.Error(d)
	}
	if !s.Met || s.Total != 22 {
		t.Errorf("met %v, %d of %d agree; notes %q", s.Met, s.Agree, s.Total, s.Notes)
	}
}

func TestParseSshareSprio(t *testing.T) {
	rows, err := ParseSshare("Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins\n" +
		"root|||0.000000|10||1.000000||||cpu=0\n root|root|1|0.5|0|0.000000|0.000000|1.000000|inf||cpu=0\n  a|u|1|0.5|10|1|1|0.5|0.5||cpu=0\n")
	if err != nil || len(rows) != 3 || rows[2].Depth != 2 || rows[2].Name() != "a:u" || rows[2].RawUsage != 10 || rows[1].LevelFS <= 1e300 {
		t.Fatalf("%+v %v", rows, err)
	}
	for _, bad := range []string{"", "Account|User\nroot|", "Account|User|RawUsage|EffectvUsage|FairShare|LevelFS\nroot||x|1|1|1"} {
		if _, err := ParseSshare(bad); err == nil {
			t.Errorf("ParseSshare(%q): no error", bad)
		}
	}
	m, err := ParseSprio("  8|1.0000000\n9|0.4545455\n")
	if err != nil || m[8] != 1 || m[9] != 0.4545455 {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"x|1", "8 1", "8|y"} {
		if _, err := ParseSprio(bad); err == nil {
			t.Errorf("ParseSprio(%q): no error", bad)
		}
	}
}
