package slurmharness

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	siteDir   = "testdata/site"
	partition = "gpu"
)

// TestConformance starts a real Slurm here (slurmctld and 16 slurmd with
// -D), runs each scenario in it and in gpusched on the imported site, and
// compares. With GPUSCHED_SLURM_REPORT=PATH it writes the report there
// (.ci/run's Slurm step writes docs/slurm-conformance.md). The mini trace
// (d) runs in real time (about 5 minutes); GPUSCHED_SLURM_SKIP_TRACE=1
// leaves it out.
func TestConformance(t *testing.T) {
	if ok, miss := Installed(); !ok {
		t.Skipf("Slurm is not installed (%s not on PATH); install Debian's slurmctld slurmd slurm-client munge (as .ci/run's Slurm step does) to run the conformance harness", miss)
	}
	if os.Geteuid() != 0 {
		t.Skip("the Slurm conformance harness needs root: slurmd runs the jobs and the fake GPUs are made with mknod")
	}
	began := time.Now()
	// Stop before go test's -timeout would (its panic skips every
	// cleanup; scripts/slurm-reaper.sh still stops the daemons then).
	deadline := began.Add(9*time.Minute + 30*time.Second)
	if dl, ok := t.Deadline(); ok && dl.Add(-20*time.Second).Before(deadline) {
		deadline = dl.Add(-20 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	// slurmctld logs its backfill plans (DebugFlags=Backfill): scenario
	// (d) reads them as Slurm's evidence. GPUSCHED_SLURM_DEBUGFLAGS sets
	// other flags (e.g. Backfill,BackfillMap), "none" none.
	if os.Getenv("GPUSCHED_SLURM_DEBUGFLAGS") == "" {
		t.Setenv("GPUSCHED_SLURM_DEBUGFLAGS", "Backfill")
	}
	run, err := os.MkdirTemp("", "gpusched-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(run)
	// (c)'s jobs run as other users (sbatch --uid): they must reach the
	// spool directory below run, which MkdirTemp made 0700.
	if err := os.Chmod(run, 0o755); err != nil {
		t.Fatal(err)
	}
	scripts, _ := filepath.Abs("scripts")
	site, _ := filepath.Abs(siteDir)
	extra, noAcct := "", ""
	if ok, miss := AccountingInstalled(); ok {
		extra, _ = filepath.Abs(fsDir)
	} else {
		noAcct = fmt.Sprintf("slurmdbd or MariaDB is not installed (%s not on PATH); install Debian's slurmdbd mariadb-server (as .ci/run's Slurm step does) to run it", miss)
		t.Logf("scenario (c) skipped: %s", noAcct)
	}
	c, err := Start(ctx, scripts, run, site, extra)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if extra != "" {
		if err := setupFairTree(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	m, err := LoadModel(siteDir)
	if err != nil {
		t.Fatal(err)
	}
	var built <-chan error
	if wanted("e") {
		built = buildGpusched(ctx, run) // for (e), while (a)–(d) run
	}
	ver, _ := c.Cmd(ctx, "scontrol", "--version")
	rep := &Report{SlurmVersion: strings.TrimSpace(ver), Site: "integrations/slurm/" + siteDir}
	for _, w := range m.Site.Warnings {
		rep.Warnings = append(rep.Warnings, strings.ReplaceAll(w.String(), site+"/", ""))
	}
	up := time.Since(began)

	if wanted("a") {
		rep.Scenarios = append(rep.Scenarios, scenarioPlacement(ctx, t, c, m))
	}
	if wanted("b") {
		rep.Scenarios = append(rep.Scenarios, scenarioBackfill(ctx, t, c, m))
	}
	// (c) builds its usage history on its own node while (d) runs.
	var fs *fairTreeRun
	if extra != "" {
		if fs, err = startFairTree(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	var trace *Scenario
	if os.Getenv("GPUSCHED_SLURM_SKIP_TRACE") == "" && wanted("d") {
		trace = scenarioTrace(ctx, t, c, m)
	} else {
		trace = &Scenario{Key: "(d)", Title: "real-time mini trace", Target: "≥ 90% within tolerance", Skipped: "GPUSCHED_SLURM_SKIP_TRACE was set"}
	}
	if fs != nil {
		rep.Scenarios = append(rep.Scenarios, finishFairTree(ctx, t, c, fs))
	} else {
		rep.Scenarios = append(rep.Scenarios, &Scenario{Key: "(c)", Title: "Fair Tree ranking", Target: "identical ranking", Skipped: noAcct})
	}
	rep.Scenarios = append(rep.Scenarios, trace)
	if wanted("e") {
		rep.Scenarios = append(rep.Scenarios, scenarioArray(ctx, t, c, built))
	}
	if dir := os.Getenv("GPUSCHED_SLURM_KEEP"); dir != "" {
		// slurmctld's log, for investigation runs (GPUSCHED_SLURM_DEBUGFLAGS).
		if b, err := os.ReadFile(filepath.Join(run, "log", "slurmctld.log")); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "slurmctld.log"), b, 0o644)
		}
	}
	rep.Timing = fmt.Sprintf("This run: Slurm up in %.0f s, all scenarios %.0f s (on the machine that generated this file).",
		up.Seconds(), time.Since(began).Seconds())
	if p := os.Getenv("GPUSCHED_SLURM_REPORT"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.Write(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range rep.Scenarios {
		t.Logf("%s %s: %d of %d (%.0f%%), target %s, met %v %s", s.Key, s.Title, s.Agree, s.Total, s.Percent(), s.Target, s.Met, s.Skipped)
	}
}

// wanted reports whether scenario key (a, b, d or e) runs: all of them
// unless GPUSCHED_SLURM_ONLY lists the keys to run (investigation runs,
// e.g. GPUSCHED_SLURM_ONLY=d).
func wanted(key string) bool {
	only := os.Getenv("GPUSCHED_SLURM_ONLY")
	return only == "" || slices.Contains(strings.Split(only, ","), key)
}

// submitDownUp submits jobs while the partition is DOWN, then sets it UP:
// Slurm sees the whole queue in one scheduling pass. begin gives each job's
// earliest start (zero: none). It returns Slurm's job ID per job name.
func submitDownUp(ctx context.Context, t *testing.T, c *Cluster, jobs []JobSpec, begin func(JobSpec) time.Time) map[string]int {
	t.Helper()
	if err := c.SetPartition(ctx, partition, "DOWN"); err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, j := range jobs {
		var b time.Time
		if begin != nil {
			b = begin(j)
		}
		id, err := c.Submit(ctx, j, b)
		if err != nil {
			t.Fatal(err)
		}
		ids[j.Name] = id
	}
	if err := c.SetPartition(ctx, partition, "UP"); err != nil {
		t.Fatal(err)
	}
	return ids
}

func byName(jobs []JobInfo) map[string]JobInfo {
	m := map[string]JobInfo{}
	for _, j := range jobs {
		m[j.Name] = j
	}
	return m
}

func leafOf(m *Model, node string) string {
	c, err := m.Site.Cluster()
	if err != nil {
		return "?"
	}
	h, ok := c.HostByName(node)
	if !ok {
		return "?"
	}
	return c.DomainName(c.Host(h).Parent)
}

func fmtPlacement(p Placement) string {
	var parts []string
	for _, n := range p.Nodes {
		parts = append(parts, n+":"+intList(p.GPUs[n]))
	}
	if len(parts) == 0 {
		return "(pending)"
	}
	return strings.Join(parts, " ")
}

func intList(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}

func scenarioPlacement(ctx context.Context, t *testing.T, c *Cluster, m *Model) *Scenario {
	jobs := PlacementJobs()
	s := &Scenario{Key: "(a)", Title: "placement under topology/tree", Target: "≥ 95% same nodes",
		Setup: fmt.Sprintf("%d jobs (single GPUs, partial nodes, whole nodes, 2–3-node gangs of both GPU types) submitted with the "+
			"partition DOWN, then UP; all fit at once. A job agrees when Slurm and gpusched give it the same node set; the GPU "+
			"indices (Slurm's IDX from `scontrol -d show job`) are compared too.", len(jobs)),
		Header: []string{"job", "Slurm (node:GPU IDX)", "gpusched", "same nodes", "same GPUs"}}
	submitDownUp(ctx, t, c, jobs, nil)
	time.Sleep(4 * time.Second)
	got, err := c.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sj := byName(got)
	g, err := m.Place(jobs, time.Unix(1_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	sameGPUs := 0
	for _, j := range jobs {
		info := sj[j.Name]
		sp := Placement{Nodes: info.Nodes, GPUs: info.GPUs}
		if info.State != "RUNNING" {
			sp = Placement{}
		}
		gp := g[j.Name]
		nodesOK := slices.Equal(sp.Nodes, gp.Nodes)
		gpusOK := nodesOK && fmtPlacement(sp) == fmtPlacement(gp)
		if nodesOK {
			s.Agree++
		}
		if gpusOK {
			sameGPUs++
		}
		s.Total++
		s.Rows = append(s.Rows, []string{j.Name, fmtPlacement(sp), fmtPlacement(gp), yesNo(nodesOK), yesNo(gpusOK)})
		if !nodesOK || !gpusOK {
			s.Disagreements = append(s.Disagreements, explainPlacement(m, j, sp, gp, nodesOK))
		}
	}
	s.Met = s.Percent() >= 95
	s.Notes = append(s.Notes, fmt.Sprintf("Same GPU indices as well: %d of %d jobs.", sameGPUs, len(jobs)))
	if err := c.CancelAll(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// explainPlacement says how a placement differs, from the site's topology.
func explainPlacement(m *Model, j JobSpec, sp, gp Placement, nodesOK bool) string {
	if len(sp.Nodes) == 0 || len(gp.Nodes) == 0 {
		return fmt.Sprintf("%s: started in only one of them (Slurm %s, gpusched %s): an earlier job's different placement left a different hole.", j.Name, fmtPlacement(sp), fmtPlacement(gp))
	}
	if nodesOK {
		return fmt.Sprintf("%s: same node, different GPUs (Slurm %s, gpusched %s): Slurm picks the cores first and then GPUs bound to them (gres.conf Cores), gpusched picks the GPUs by best fit over NUMA nodes.", j.Name, fmtPlacement(sp), fmtPlacement(gp))
	}
	var sl, gl []string
	for _, n := range sp.Nodes {
		sl = append(sl, leafOf(m, n))
	}
	for _, n := range gp.Nodes {
		gl = append(gl, leafOf(m, n))
	}
	slices.Sort(sl)
	slices.Sort(gl)
	if slices.Equal(slices.Compact(sl), slices.Compact(gl)) {
		return fmt.Sprintf("%s: same switch (%s), different nodes (Slurm %s, gpusched %s): inside a switch Slurm takes nodes in index order among those that fit, gpusched the host with the fewest free GPUs that fits (best fit).", j.Name, strings.Join(slices.Compact(sl), ","), fmtPlacement(sp), fmtPlacement(gp))
	}
	return fmt.Sprintf("%s: different switches (Slurm %s under %s, gpusched %s under %s): Slurm's best-fit leaf counts free nodes, gpusched's free GPUs.", j.Name, fmtPlacement(sp), strings.Join(slices.Compact(sl), ","), fmtPlacement(gp), strings.Join(slices.Compact(gl), ","))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

func scenarioBackfill(ctx context.Context, t *testing.T, c *Cluster, m *Model) *Scenario {
	jobs := BackfillJobs()
	const tol = 2 * time.Second
	s := &Scenario{Key: "(b)", Title: "backfill", Target: "identical start order",
		Setup: "Running jobs with known time limits (r*) fill most of the site; the jobs behind them wait for reservations (p*); " +
			"short jobs that end before those reservations backfill (b*), longer ones wait (w*); every job runs 2 s less than its limit. " +
			"After the first backfill pass, Slurm's `squeue --start` predicts each waiting job's start from the running jobs' limits; " +
			"gpusched's plan replays the same jobs with each running for its whole limit. Then Slurm runs them for real; gpusched " +
			"replays them with the run times Slurm measured. Times are seconds after the first start; a job agrees when its real " +
			"start in Slurm and in gpusched's replay are within 2 s.",
		Header: []string{"job", "Slurm predicted", "gpusched plan", "Slurm actual", "gpusched replay", "agree"}}
	submitDownUp(ctx, t, c, jobs, nil)
	time.Sleep(4 * time.Second)
	got, err := c.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	starts, err := c.Starts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sj := byName(got)
	var t0 time.Time
	for _, j := range got {
		if j.State == "RUNNING" && (t0.IsZero() || j.Start.Before(t0)) {
			t0 = j.Start
		}
	}
	predicted := map[string]time.Duration{}
	for _, j := range jobs {
		info := sj[j.Name]
		switch {
		case info.State == "RUNNING":
			predicted[j.Name] = info.Start.Sub(t0)
		case !starts[info.ID].IsZero():
			predicted[j.Name] = starts[info.ID].Sub(t0)
		default:
			predicted[j.Name] = -1
		}
	}
	now := time.Unix(1_000_000, 0)
	plan, err := runOffsets(m, jobs, nil, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Let Slurm run them: wait until every job has started.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if got, err = c.Jobs(ctx); err != nil {
			t.Fatal(err)
		}
		waiting := 0
		for _, j := range got {
			if j.State == "PENDING" {
				waiting++
			}
		}
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backfill: %d jobs still wait after 5 minutes", waiting)
		}
		time.Sleep(time.Second)
	}
	sj = byName(got)
	actual := map[string]time.Duration{}
	dur := map[string]time.Duration{}
	for _, j := range jobs {
		info := sj[j.Name]
		actual[j.Name] = info.Start.Sub(t0)
		dur[j.Name] = j.Sleep
		if !info.End.IsZero() && info.State != "RUNNING" {
			dur[j.Name] = info.End.Sub(info.Start)
		}
	}
	replay, err := runOffsets(m, jobs, dur, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	predAgree := 0
	for _, j := range jobs {
		a, b := actual[j.Name], replay[j.Name]
		ok := (a - b).Abs() <= tol
		if ok {
			s.Agree++
		} else {
			s.Disagreements = append(s.Disagreements, fmt.Sprintf("%s: Slurm started it at %s s, gpusched's replay at %s s.", j.Name, secs(a), secs(b)))
		}
		if p := predicted[j.Name]; p >= 0 && (p-plan[j.Name]).Abs() <= tol {
			predAgree++
		} else {
			why := "Slurm's prediction and its real start differ too"
			if (actual[j.Name] - replay[j.Name]).Abs() <= tol {
				why = fmt.Sprintf("Slurm then really started it at %s s, as gpusched planned: `squeue --start` was later than what Slurm did", secs(actual[j.Name]))
			}
			s.Notes = append(s.Notes, fmt.Sprintf("Prediction differs for %s: `squeue --start` %s s, gpusched's plan %s s; %s.", j.Name, secs(predicted[j.Name]), secs(plan[j.Name]), why))
		}
		s.Total++
		s.Rows = append(s.Rows, []string{j.Name, secs(predicted[j.Name]), secs(plan[j.Name]), secs(a), secs(b), yesNo(ok)})
	}
	so, gorder := startOrder(actual, tol), startOrder(replay, tol)
	s.Met = slices.Equal(so, gorder)
	s.Notes = append(s.Notes, fmt.Sprintf("Predicted starts (`squeue --start` against gpusched's plan) agree for %d of %d jobs.", predAgree, len(jobs)),
		"Real start order, jobs starting within 2 s of each other grouped:\n\n- Slurm: "+strings.Join(so, " → ")+"\n- gpusched: "+strings.Join(gorder, " → "))
	if err := c.CancelAll(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// runOffsets replays jobs in gpusched (Model.Run) and returns each job's
// start as an offset from now.
func runOffsets(m *Model, jobs []JobSpec, dur map[string]time.Duration, now time.Time, interval time.Duration) (map[string]time.Duration, error) {
	st, _, err := m.Run(jobs, dur, now, interval)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Duration{}
	for k, v := range st {
		out[k] = v.Sub(now)
	}
	return out, nil
}

// startOrder groups job names by start time (starts within tol of the
// group's first are one group), groups in time order, names sorted.
func startOrder(at map[string]time.Duration, tol time.Duration) []string {
	names := slices.Sorted(maps.Keys(at))
	slices.SortStableFunc(names, func(a, b string) int { return int(at[a] - at[b]) })
	var out []string
	var group []string
	var first time.Duration
	for _, n := range names {
		if len(group) > 0 && at[n]-first > tol {
			slices.Sort(group)
			out = append(out, "{"+strings.Join(group, " ")+"}")
			group = nil
		}
		if len(group) == 0 {
			first = at[n]
		}
		group = append(group, n)
	}
	if len(group) > 0 {
		slices.Sort(group)
		out = append(out, "{"+strings.Join(group, " ")+"}")
	}
	return out
}

func scenarioTrace(ctx context.Context, t *testing.T, c *Cluster, m *Model) *Scenario {
	const n, span = 150, 120 * time.Second
	interval := m.Site.Conf.Scheduler().SchedInterval
	bf := m.Site.Conf.Scheduler().BfInterval
	tol := interval + 2*time.Second
	jobs := TraceJobs(n, span, 7)
	s := &Scenario{Key: "(d)", Title: "real-time mini trace", Target: "≥ 90% within tolerance",
		Setup: fmt.Sprintf("%d jobs of 10–120 s (1 GPU to a whole node) arriving over %v (`sbatch --begin`), run in real "+
			"time by Slurm; gpusched replays the same arrivals (Slurm's EligibleTime) with each job running as long as it ran in Slurm, "+
			"calling Schedule at every arrival and end and every %v (sched_interval). A job agrees when its start, in seconds after the "+
			"first arrival, is within %v (the scheduling interval + 2 s) of Slurm's.", n, span, interval, tol)}
	t0 := time.Now().Add(15 * time.Second).Truncate(time.Second)
	submitDownUp(ctx, t, c, jobs, func(j JobSpec) time.Time { return t0.Add(j.Arrive) })
	deadline := t0.Add(span + 6*time.Minute)
	var got []JobInfo
	slurmWhy := map[string]string{} // the last reason Slurm gave while a job waited
	for {
		var err error
		if got, err = c.Jobs(ctx); err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, j := range got {
			if j.State == "PENDING" && j.Reason != "BeginTime" && j.Reason != "None" {
				slurmWhy[j.Name] = j.Reason
			}
			if strings.HasPrefix(j.Name, "d") && (j.State == "COMPLETED" || j.State == "TIMEOUT" || j.State == "FAILED") {
				done++
			}
		}
		if done >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mini trace: %d of %d jobs done by the deadline", done, n)
		}
		time.Sleep(time.Second)
	}
	sj := byName(got)
	dur := map[string]time.Duration{}
	replay := slices.Clone(jobs)
	for i, j := range replay {
		info := sj[j.Name]
		dur[j.Name] = info.End.Sub(info.Start)
		replay[i].Arrive = info.Eligible.Sub(t0)
	}
	if dir := os.Getenv("GPUSCHED_SLURM_KEEP"); dir != "" {
		saveTrace(t, filepath.Join(dir, "trace-d.json"), replay, dur, sj, t0)
	}
	// gpusched replays on Slurm's wall clock (t0).
	now := t0
	gs, gpl, gwhy, err := m.RunWhy(replay, dur, now, interval)
	if err != nil {
		t.Fatal(err)
	}
	// Slurm's own evidence: slurmctld.log with DebugFlags=Backfill.
	var ev map[string]jobEvidence
	var evNote string
	bl, err := readBackfillLog(c)
	if err != nil {
		evNote = fmt.Sprintf("slurmctld.log was not usable as evidence: %v.", err)
	} else if len(bl.Plans) == 0 {
		evNote = "slurmctld.log holds no backfill plans (DebugFlags=Backfill was off), so the disagreements are explained from gpusched's side and Slurm's last reason only."
	} else {
		ids, sst, gst, gnodes := map[string]int{}, map[string]time.Duration{}, map[string]time.Duration{}, map[string][]string{}
		for _, j := range replay {
			ids[j.Name] = sj[j.Name].ID
			sst[j.Name] = sj[j.Name].Start.Sub(t0)
			gst[j.Name] = gs[j.Name].Sub(now)
			gnodes[j.Name] = gpl[j.Name].Nodes
		}
		ev = traceEvidence(bl, t0, replay, ids, sst, gst, gnodes)
		evNote = fmt.Sprintf("Evidence from Slurm: slurmctld.log with DebugFlags=Backfill, %d backfill plans (\"JobId=N to start at T, end at E on nodes X\": "+
			"sched/backfill plans every pending job in priority order each pass and keeps the planned nodes whole for that window in its node-space map, "+
			"so no later job overlapping the window may use them) and %d job starts (by the main scheduler or by backfill).", len(bl.Plans), len(bl.Starts))
		if first := firstPlacementSplit(bl, replay, ids, sj, gst, gpl, t0); first != "" {
			evNote += " " + first
		}
		evNote += " " + passNote(t, m, replay, ids, bl, t0)
	}
	var waits []time.Duration
	late := 0
	causes := map[string]int{}
	for _, j := range replay {
		info := sj[j.Name]
		a := info.Start.Sub(t0)
		b := gs[j.Name].Sub(now)
		waits = append(waits, a-j.Arrive)
		s.Total++
		if (a - b).Abs() <= tol {
			s.Agree++
			continue
		}
		why := ""
		if b < a {
			late++
			cause := slurmLaterCause(ev[j.Name], slurmWhy[j.Name])
			causes["Slurm kept it waiting longer: "+cause]++
			why = "Slurm kept it waiting (last reason " + orDash(slurmWhy[j.Name]) + ")"
			if slurmWhy[j.Name] == "Priority" {
				why += fmt.Sprintf(": Slurm's main scheduler stops at the first waiting job of the partition, so this one could only start in a backfill pass (every %v here)", bf)
			}
		} else {
			r, _, _ := strings.Cut(reasonAt(gwhy[j.Name], now.Add(a)), ":")
			causes["gpusched kept it waiting longer: "+gpuschedLaterCause(r)]++
			why = "gpusched kept it waiting: " + reasonAt(gwhy[j.Name], now.Add(a))
		}
		if e := ev[j.Name]; e.Text != "" {
			why += "; Slurm's log: " + e.Text
		}
		s.Disagreements = append(s.Disagreements, fmt.Sprintf("%s (arrived %s s): Slurm started it at %s s, gpusched at %s s; %s.", j.Name, secs(j.Arrive), secs(a), secs(b), why))
	}
	s.Met = s.Percent() >= 90
	var cs []string
	for _, k := range slices.Sorted(maps.Keys(causes)) {
		cs = append(cs, fmt.Sprintf("%s: %d", k, causes[k]))
	}
	if evNote != "" {
		s.Notes = append(s.Notes, evNote)
	}
	if len(cs) > 0 {
		s.Notes = append(s.Notes, "Disagreements by cause — "+strings.Join(cs, "; ")+". `backfill-window` is gpusched's "+
			"backfill refusing a job because its placement would take resources the reservation's shadow holds (jobs "+
			"still running at the reserved time by their estimates) and finding no placement around them either (the preset's "+
			"BackfillAround, as Slurm's backfill places a job): then Slurm's reservation was elsewhere or later. Once one start differs, "+
			"the jobs after it see a different cluster, so disagreements come in runs.")
	}
	// What-ifs on the same run: the preset without placement around
	// reservations, and with other reservation depths (Config.ReserveDepth;
	// 1 is EASY).
	agreeWith := func(mm Model) int {
		st, _, err := mm.Run(replay, dur, now, interval)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, j := range replay {
			if (sj[j.Name].Start.Sub(t0) - st[j.Name].Sub(now)).Abs() <= tol {
				k++
			}
		}
		return k
	}
	noAround := *m
	noAround.NoBackfillAround = true
	noTree := *m
	noTree.NoTreeNodeOrder = true
	arrFirst := *m
	arrFirst.ArrivalsFirst = true
	noWhole := *m
	noWhole.NoWholeHosts = true
	whatIf := []string{fmt.Sprintf("without BackfillAround (the placer's first choice only) %d", agreeWith(noAround)),
		fmt.Sprintf("without TreeNodeOrder (one-node jobs by gang's topology best fit over GPUs) %d", agreeWith(noTree)),
		fmt.Sprintf("without ReserveWholeHosts (reservations hold only their GPUs, cores and memory) %d", agreeWith(noWhole)),
		fmt.Sprintf("arrivals before same-second ends %d", agreeWith(arrFirst))}
	best, bestDepth := s.Agree, m.Preset.ReserveDepth
	for _, d := range []int{1, 2, 3, 4, 8, 16} {
		if d == m.Preset.ReserveDepth {
			continue
		}
		deep := *m
		deep.ReserveDepth = d
		k := agreeWith(deep)
		whatIf = append(whatIf, fmt.Sprintf("ReserveDepth %d %d", d, k))
		if k > best {
			best, bestDepth = k, d
		}
	}
	verdict := fmt.Sprintf("no other depth brings gpusched closer to Slurm on this run than the preset's ReserveDepth %d", m.Preset.ReserveDepth)
	if bestDepth != m.Preset.ReserveDepth {
		verdict = fmt.Sprintf("ReserveDepth %d would agree on %d jobs on this run (the preset's %d is chosen over all the captured runs in testdata/trace-d-*.json, see docs/slurm.md)", bestDepth, best, m.Preset.ReserveDepth)
	}
	s.Notes = append(s.Notes, fmt.Sprintf("The same run replayed by gpusched with other settings, jobs within tolerance (the preset: %d): %s; %s.",
		s.Agree, strings.Join(whatIf, "; "), verdict))
	// Slurm against itself: this run's starts against the runs saved in
	// testdata (the same trace, the same site).
	if paths, runs, err := loadCaptured(); err != nil {
		t.Errorf("captured runs: %v", err)
	} else if len(runs) > 0 {
		live := map[string]time.Duration{}
		for _, j := range replay {
			live[j.Name] = sj[j.Name].Start.Sub(t0)
		}
		var self []string
		for i, r := range runs {
			self = append(self, fmt.Sprintf("%s %d", filepath.Base(paths[i]), sameStarts(live, r, tol)))
		}
		s.Notes = append(s.Notes, fmt.Sprintf("Slurm against itself: this run's starts against the earlier runs of the same trace saved in "+
			"integrations/slurm/testdata, jobs within %v: %s (of %d). Slurm does not repeat its own starts to this tolerance (job ends move by up to a "+
			"second with the host's load, and a different end order changes which waiting job fits where), so a model of it cannot be expected to "+
			"agree with one run on more jobs than Slurm's runs agree with each other.", tol, strings.Join(self, ", "), len(replay)))
	}
	slices.Sort(waits)
	s.Notes = append(s.Notes, fmt.Sprintf("Slurm's waits: median %s s, p95 %s s, max %s s. Of the disagreeing jobs, gpusched started %d earlier than Slurm.",
		secs(waits[len(waits)/2]), secs(waits[len(waits)*95/100]), secs(waits[len(waits)-1]), late))
	return s
}

// buildGpusched builds the CLI into run/gpusched in the background; the
// channel gives the build's error (nil on success).
func buildGpusched(ctx context.Context, run string) <-chan error {
	done := make(chan error, 1)
	go func() {
		root, _ := filepath.Abs("../..")
		build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(run, "gpusched"), "./cmd/gpusched")
		build.Dir = root
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			done <- fmt.Errorf("go build gpusched: %v\n%s", err, out)
			return
		}
		done <- nil
	}()
	return done
}

func scenarioArray(ctx context.Context, t *testing.T, c *Cluster, built <-chan error) *Scenario {
	s := &Scenario{Key: "(e)", Title: "sweep as a Slurm job array", Target: "merged CSV = unsharded, byte for byte", Total: 1,
		Setup: "`deploy/slurm/sweep.sbatch` runs `gpusched sim sweep --shard i/4` as a 4-task job array on the local Slurm; " +
			"`gpusched sim sweep merge` joins the four CSVs, which must equal the unsharded sweep's sweep.csv byte for byte."}
	root, _ := filepath.Abs("../..")
	bin := filepath.Join(c.Run, "gpusched")
	if err := <-built; err != nil {
		t.Fatal(err)
	}
	args := []string{"--preset", "h100-1k", "--trace", "synthetic:300", "--param", "policy=topology,best-fit,first-fit,worst-fit", "--param", "load=0.8,1.2", "--parallel", "1"}
	whole := filepath.Join(c.Run, "sweep-whole")
	cmd := exec.CommandContext(ctx, bin, append([]string{"sim", "sweep", "--quiet", "--out", whole}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unsharded sweep: %v\n%s", err, out)
	}
	sharded := filepath.Join(c.Run, "sweep-array")
	sbatch := filepath.Join(root, "deploy", "slurm", "sweep.sbatch")
	out, err := c.Cmd(ctx, "sbatch", append([]string{"--parsable", "--array=0-3", "--export=ALL,GPUSCHED=" + bin, "-o", filepath.Join(c.Run, "array-%a.out"), sbatch, sharded}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(strings.Split(out, ";")[0])
	for {
		q, err := c.Cmd(ctx, "squeue", "-h", "-j", id, "-o", "%i")
		if err != nil || strings.TrimSpace(q) == "" {
			break
		}
		time.Sleep(time.Second)
	}
	files, _ := filepath.Glob(filepath.Join(sharded, "sweep-*-of-4.csv"))
	merged := filepath.Join(c.Run, "merged.csv")
	if out, err := exec.CommandContext(ctx, bin, append([]string{"sim", "sweep", "merge", "--points", "8", "--out", merged}, files...)...).CombinedOutput(); err != nil {
		logs, _ := filepath.Glob(filepath.Join(c.Run, "array-*.out"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, b)
		}
		t.Fatalf("merge: %v\n%s", err, out)
	}
	a, _ := os.ReadFile(filepath.Join(whole, "sweep.csv"))
	b, _ := os.ReadFile(merged)
	if string(a) != string(b) || len(a) == 0 {
		t.Errorf("merged array CSV differs from the unsharded sweep:\n%s\nvs\n%s", b, a)
	} else {
		s.Agree, s.Met = 1, true
	}
	s.Notes = append(s.Notes, fmt.Sprintf("%d shard files, %d bytes merged, identical: %v.", len(files), len(b), s.Met))
	return s
}

// tracedJob is one job of scenario (d) as Slurm ran it, saved with
// GPUSCHED_SLURM_KEEP=DIR for replays without Slurm.
type tracedJob struct {
	Spec       JobSpec
	Duration   time.Duration
	SlurmStart time.Duration
	Nodes      []string
	// JobID is Slurm's job ID and T0 the wall-clock time SlurmStart counts
	// from (the first arrival), so that slurmctld.log can be read against
	// the run (absent from the first captures).
	JobID int       `json:",omitempty"`
	T0    time.Time `json:",omitzero"`
}

func saveTrace(t *testing.T, path string, jobs []JobSpec, dur map[string]time.Duration, sj map[string]JobInfo, t0 time.Time) {
	var out []tracedJob
	for _, j := range jobs {
		out = append(out, tracedJob{Spec: j, Duration: dur[j.Name], SlurmStart: sj[j.Name].Start.Sub(t0), Nodes: sj[j.Name].Nodes, JobID: sj[j.Name].ID, T0: t0})
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Logf("GPUSCHED_SLURM_KEEP: %v", err)
	}
}

// reasonAt is gpusched's reason at the last cycle at or before at.
func reasonAt(ws []Wait, at time.Time) string {
	r := "no reason recorded"
	for _, w := range ws {
		if w.At.After(at) {
			break
		}
		r = w.Reason
	}
	if len(r) > 220 {
		r = r[:220] + "…"
	}
	return r
}

// passNote compares gpusched with Slurm decision by decision on this run
// (Model.ComparePasses), with the preset and with every waiting job
// planned.
func passNote(t *testing.T, m *Model, jobs []JobSpec, ids map[string]int, bl *BfLog, t0 time.Time) string {
	if len(bl.Passes) == 0 {
		return "slurmctld.log logged no backfill pass beginnings, so the decision-by-decision comparison was not run."
	}
	a, err := m.ComparePasses(jobs, ids, bl, t0)
	if err != nil {
		t.Errorf("ComparePasses: %v", err)
		return fmt.Sprintf("The decision-by-decision comparison failed: %v.", err)
	}
	every := *m
	every.ReserveDepth = len(jobs)
	e, err := every.ComparePasses(jobs, ids, bl, t0)
	if err != nil {
		t.Errorf("ComparePasses: %v", err)
		return fmt.Sprintf("The decision-by-decision comparison failed: %v.", err)
	}
	return fmt.Sprintf("Decision by decision (no earlier split carried over): given the cluster as Slurm had it at each of its %d backfill passes "+
		"with jobs waiting, one gpusched cycle starts %d jobs in the same pass as Slurm (%d on the same node); %d jobs Slurm's backfill started "+
		"there were kept waiting by gpusched, and %d jobs gpusched started before Slurm did (each job counted at the first pass where one of "+
		"the two started it). With every waiting job planned (ReserveDepth %d, as Slurm's backfill plans): %d the same, %d started by Slurm "+
		"only, %d by gpusched first.", a.Passes, a.Both, a.SameNode, a.SlurmOnly, a.GpuschedOnly, every.ReserveDepth, e.Both, e.SlurmOnly, e.GpuschedOnly)
}
