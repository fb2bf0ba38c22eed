package simcli

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
)

// TestHeliosPhillyDirection checks the direction and rough size of the
// Helios artifact's FIFO → SJF result on Philly with hard virtual
// clusters (Hu et al., SC'21: mean JCT 86,072 s → 34,272 s, mean queueing
// 56,531 s → 4,731 s; 11 hard VCs, 8-GPU nodes, consolidated placement,
// no backfill, no preemption) on the first 20,000 jobs of our philly.csv,
// their arrivals compressed to an offered load of 0.9 so that the VCs
// queue as Helios' do (see docs/research-policies.md for the full trace
// and the differences). Measured: FIFO mean JCT 9.0 h, wait 6.2 h; SJF
// 4.4 h and 1.6 h.
func TestHeliosPhillyDirection(t *testing.T) {
	const full, vcs = "../../../shared/data/philly/philly.csv", "../../../shared/data/philly/philly_vc.csv"
	if _, err := os.Stat(full); err != nil {
		t.Skip("../shared/data/philly not present: ", err)
	}
	if testing.Short() || raceEnabled {
		t.Skip("two replays of 20,000 Philly jobs take about ten seconds each")
	}
	// The first 20,000 jobs (and the header).
	in, err := os.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	sub := filepath.Join(t.TempDir(), "philly20k.csv")
	out, err := os.Create(sub)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 0; n <= 20000 && sc.Scan(); n++ {
		out.WriteString(sc.Text() + "\n")
	}
	if err := out.Close(); err != nil || sc.Err() != nil {
		t.Fatal(err, sc.Err())
	}
	run := func(ordering ...string) (jct, wait float64) {
		dir := t.TempDir()
		args := append([]string{"run", "--preset", "philly", "--trace", "philly:" + sub, "--queues", "vc-hard:" + vcs, "--policy", "best-fit",
			"--load", "0.9", "--min-cycle-interval", "1m", "--quiet", "--no-plots", "--out", dir}, ordering...)
		if _, errs, err := execCmd(t, Options{}, args...); err != nil {
			t.Fatalf("%v %s", err, errs)
		}
		s := readSummary(t, filepath.Join(dir, "summary.json"))
		if s.Jobs.Completed != s.Jobs.Total {
			t.Fatalf("%v: jobs %+v", ordering, s.Jobs)
		}
		return s.JCT.Mean, s.Wait.Mean
	}
	fifoJCT, fifoWait := run("--ordering", "strict-fifo")
	sjfJCT, sjfWait := run("--ordering", "shortest-first", "--runtime-estimate", "1")
	t.Logf("mean JCT FIFO %.0f s, SJF %.0f s (Helios 86,072 → 34,272); mean wait %.0f s → %.0f s (Helios 56,531 → 4,731)", fifoJCT, sjfJCT, fifoWait, sjfWait)
	if !(sjfJCT < 0.7*fifoJCT) || !(sjfWait < 0.5*fifoWait) {
		t.Errorf("SJF does not cut mean JCT by 30%% and mean wait by half: JCT %.0f → %.0f s, wait %.0f → %.0f s", fifoJCT, sjfJCT, fifoWait, sjfWait)
	}
}
