package slurmharness

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/topology"
)

// The evidence of slurmctld.log with DebugFlags=Backfill (the harness
// turns it on for scenario (d)): what sched/backfill planned for each
// pending job in each of its passes, and who started each job.

// BfPlan is one "JobId=N to start at T, end at E on nodes X" line of
// sched/backfill: the start it planned for a pending job in one pass
// (Logged), and the nodes it held for it from Start to End — held whole:
// no other job overlapping that window may use them.
type BfPlan struct {
	Logged     time.Time
	JobID      int
	Start, End time.Time
	Nodes      []string
}

// BfStart is a job start in slurmctld.log: by the main scheduler
// ("sched: Allocate JobId=N NodeList=X") or by backfill ("_start_job:
// Started JobId=N in P on X").
type BfStart struct {
	Logged   time.Time
	JobID    int
	Backfill bool
	Nodes    []string
}

// BfLog is what ParseBackfillLog found.
type BfLog struct {
	Plans  []BfPlan
	Starts []BfStart
	// Ends are when slurmctld logged each job done ("_job_complete:
	// JobId=N done"), by job ID: to the millisecond, where scontrol and
	// sacct give whole seconds.
	Ends map[int]time.Time
	// Passes are the beginnings of backfill's passes
	// ("_attempt_backfill: beginning"), in log order.
	Passes []time.Time
}

var (
	bfPlanRE  = regexp.MustCompile(`^\[([0-9T:.-]+)\] sched/backfill: _dump_job_sched: JobId=(\d+) to start at (\S+), end at (\S+) on nodes (\S+)`)
	bfStartRE = regexp.MustCompile(`^\[([0-9T:.-]+)\] sched/backfill: _start_job: Started JobId=(\d+) in \S+ on (\S+)`)
	mainRE    = regexp.MustCompile(`^\[([0-9T:.-]+)\] sched: Allocate JobId=(\d+) NodeList=(\S+)`)
	doneRE    = regexp.MustCompile(`^\[([0-9T:.-]+)\] _job_complete: JobId=(\d+) done`)
	passRE    = regexp.MustCompile(`^\[([0-9T:.-]+)\] sched/backfill: _attempt_backfill: beginning`)
)

// ParseBackfillLog reads slurmctld.log lines; times are in loc (slurmctld
// logs local time without a zone). Lines it does not know are skipped; a
// line it knows but cannot read is an error naming its line number.
func ParseBackfillLog(r io.Reader, loc *time.Location) (*BfLog, error) {
	out := &BfLog{Ends: map[int]time.Time{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	const stamp = "2006-01-02T15:04:05.000"
	const sec = "2006-01-02T15:04:05"
	no := 0
	for sc.Scan() {
		no++
		ln := sc.Text()
		if m := bfPlanRE.FindStringSubmatch(ln); m != nil {
			at, e1 := time.ParseInLocation(stamp, m[1], loc)
			id, e2 := strconv.Atoi(m[2])
			st, e3 := time.ParseInLocation(sec, m[3], loc)
			en, e4 := time.ParseInLocation(sec, m[4], loc)
			nodes, e5 := topology.ExpandNames(m[5])
			if err := firstErr(e1, e2, e3, e4, e5); err != nil {
				return nil, fmt.Errorf("slurmctld.log:%d: backfill plan: %v", no, err)
			}
			out.Plans = append(out.Plans, BfPlan{Logged: at, JobID: id, Start: st, End: en, Nodes: nodes})
			continue
		}
		if m := doneRE.FindStringSubmatch(ln); m != nil {
			at, e1 := time.ParseInLocation(stamp, m[1], loc)
			id, e2 := strconv.Atoi(m[2])
			if err := firstErr(e1, e2); err != nil {
				return nil, fmt.Errorf("slurmctld.log:%d: job end: %v", no, err)
			}
			out.Ends[id] = at
			continue
		}
		if m := passRE.FindStringSubmatch(ln); m != nil {
			at, err := time.ParseInLocation(stamp, m[1], loc)
			if err != nil {
				return nil, fmt.Errorf("slurmctld.log:%d: backfill pass: %v", no, err)
			}
			out.Passes = append(out.Passes, at)
			continue
		}
		bf := true
		m := bfStartRE.FindStringSubmatch(ln)
		if m == nil {
			m, bf = mainRE.FindStringSubmatch(ln), false
		}
		if m == nil {
			continue
		}
		at, e1 := time.ParseInLocation(stamp, m[1], loc)
		id, e2 := strconv.Atoi(m[2])
		nodes, e3 := topology.ExpandNames(m[3])
		if err := firstErr(e1, e2, e3); err != nil {
			return nil, fmt.Errorf("slurmctld.log:%d: job start: %v", no, err)
		}
		out.Starts = append(out.Starts, BfStart{Logged: at, JobID: id, Backfill: bf, Nodes: nodes})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("slurmctld.log:%d: %v", no, err)
	}
	return out, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Durations returns how long each job of ids ran by slurmctld's log, to
// the millisecond, counted from the whole second its start was logged in
// (a replay that starts jobs on whole seconds then ends each at the
// millisecond Slurm logged it done when it starts it in the same second as
// Slurm did), for the jobs the log has both for.
func (b *BfLog) Durations(ids map[string]int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, id := range ids {
		st, ok := b.Start(id)
		end, done := b.Ends[id]
		if ok && done && end.After(st.Logged) {
			out[name] = end.Sub(st.Logged.Truncate(time.Second))
		}
	}
	return out
}

// LastPlan returns backfill's last plan for job id logged before t.
func (b *BfLog) LastPlan(id int, t time.Time) (BfPlan, bool) {
	var last BfPlan
	ok := false
	for _, p := range b.Plans {
		if p.Logged.After(t) {
			break
		}
		if p.JobID == id {
			last, ok = p, true
		}
	}
	return last, ok
}

// FirstPlan returns backfill's first plan for job id.
func (b *BfLog) FirstPlan(id int) (BfPlan, bool) {
	for _, p := range b.Plans {
		if p.JobID == id {
			return p, true
		}
	}
	return BfPlan{}, false
}

// Start returns how job id was started.
func (b *BfLog) Start(id int) (BfStart, bool) {
	for _, s := range b.Starts {
		if s.JobID == id {
			return s, true
		}
	}
	return BfStart{}, false
}

// HeldAt returns the plans of backfill's last pass logged at or before t
// (its passes are a second apart here: the plans logged in the last
// second before t) that hold node at t — the pending jobs a job needing
// node then would have delayed — with each holder's own ID.
func (b *BfLog) HeldAt(node string, t time.Time, horizon time.Duration) []BfPlan {
	var last time.Time
	for _, p := range b.Plans {
		if p.Logged.After(t) {
			break
		}
		last = p.Logged
	}
	var out []BfPlan
	for _, p := range b.Plans {
		if p.Logged.After(t) {
			break
		}
		if last.Sub(p.Logged) > 500*time.Millisecond || !slices.Contains(p.Nodes, node) {
			continue
		}
		if p.Start.Before(t.Add(horizon)) && p.End.After(t) {
			out = append(out, p)
		}
	}
	return out
}

// nodeList formats nodes briefly.
func nodeList(nodes []string) string { return strings.Join(nodes, ",") }

// jobEvidence is what slurmctld.log says about one job of scenario (d)
// that started at a different time in Slurm than in gpusched.
type jobEvidence struct {
	Text string // the evidence, in words
	// Held: the node gpusched started the job on was planned whole for
	// another pending job over a window the job would have overlapped.
	Held bool
	// PlannedLater: backfill's last plan for the job before gpusched
	// started it was later than that (Slurm's planned start, not the
	// nodes, held it back).
	PlannedLater bool
}

// traceEvidence reads Slurm's backfill log for each job of scenario (d)
// that started at a different time in Slurm than in gpusched: slurm and
// gs are the starts (offsets from t0), gp gpusched's nodes, ids Slurm's
// job IDs, by job name.
func traceEvidence(b *BfLog, t0 time.Time, jobs []JobSpec, ids map[string]int, slurm, gs map[string]time.Duration, gp map[string][]string) map[string]jobEvidence {
	out := map[string]jobEvidence{}
	name := map[int]string{}
	for n, id := range ids {
		name[id] = n
	}
	label := func(id int) string {
		if n, ok := name[id]; ok {
			return n
		}
		return "job " + strconv.Itoa(id)
	}
	off := func(t time.Time) string { return secs(t.Sub(t0)) }
	for _, j := range jobs {
		id, ok := ids[j.Name]
		if !ok {
			continue
		}
		a, g := slurm[j.Name], gs[j.Name]
		var e jobEvidence
		var parts []string
		if st, ok := b.Start(id); ok {
			by := "the main scheduler"
			if st.Backfill {
				by = "backfill"
			}
			parts = append(parts, fmt.Sprintf("%s started it on %s", by, nodeList(st.Nodes)))
		}
		if g < a {
			at := t0.Add(g)
			if p, ok := b.LastPlan(id, at.Add(time.Second)); ok {
				parts = append(parts, fmt.Sprintf("at %s s backfill's plan for it was %s–%s s on %s", secs(g), off(p.Start), off(p.End), nodeList(p.Nodes)))
				e.PlannedLater = p.Start.After(at.Add(time.Second))
			}
			var held []string
			for _, n := range gp[j.Name] {
				for _, p := range b.HeldAt(n, at.Add(time.Second), j.Limit) {
					if p.JobID != id {
						held = append(held, fmt.Sprintf("%s for %s (%s–%s s)", n, label(p.JobID), off(p.Start), off(p.End)))
					}
				}
			}
			if len(held) > 0 {
				e.Held = true
				parts = append(parts, fmt.Sprintf("the node gpusched used was planned whole for a waiting job over a window this job's %s s limit overlaps: %s", secs(j.Limit), strings.Join(held, "; ")))
			}
		} else if p, ok := b.FirstPlan(id); ok {
			parts = append(parts, fmt.Sprintf("backfill first planned it at %s s (in its pass at %s s) on %s", off(p.Start), off(p.Logged), nodeList(p.Nodes)))
		}
		if len(parts) > 0 {
			e.Text = strings.Join(parts, "; ")
			out[j.Name] = e
		}
	}
	return out
}

// slurmLaterCause names why Slurm started a job later than gpusched, from
// its log evidence e and its last reason.
func slurmLaterCause(e jobEvidence, reason string) string {
	switch {
	case e.Held:
		return "the node gpusched used was planned whole for another waiting job (Slurm plans every waiting job; gpusched's preset reserves for two, holding their hosts whole)"
	case e.PlannedLater:
		return "no node was free for it in Slurm's cluster when gpusched started it, and backfill's plan for it was later (the clusters had split; a whole-node job's plan is also late by the will-run batching of ends, see docs/slurm.md)"
	case e.Text != "":
		return "no node held for another job in Slurm's plan; Slurm's cluster differed (an earlier start or placement differed), last reason " + orDash(reason)
	}
	return "no log evidence, last reason " + orDash(reason)
}

// gpuschedLaterCause names why gpusched started a job later than Slurm,
// from gpusched's reason r (its code).
func gpuschedLaterCause(r string) string {
	switch strings.TrimSpace(r) {
	case "capacity", "fragmentation":
		return r + " (no host had room in gpusched's cluster where Slurm's had: the placements had diverged before; see the first divergence above)"
	case "backfill-window":
		return r + " (gpusched's reservation for an earlier job held the room; Slurm's plan for that job was elsewhere or later)"
	}
	return r
}

// firstPlacementSplit names the first job (by Slurm's start) that Slurm
// and gpusched put on different nodes, the start from which their
// clusters differ, and what the log says of it; "" if none. gs are
// gpusched's starts, as offsets from t0.
func firstPlacementSplit(b *BfLog, jobs []JobSpec, ids map[string]int, sj map[string]JobInfo, gs map[string]time.Duration, gpl map[string]Placement, t0 time.Time) string {
	order := slices.Clone(jobs)
	slices.SortStableFunc(order, func(a, b JobSpec) int { return sj[a.Name].Start.Compare(sj[b.Name].Start) })
	for _, j := range order {
		if slices.Equal(sj[j.Name].Nodes, gpl[j.Name].Nodes) {
			continue
		}
		s := fmt.Sprintf("The placements first differ at %s s: Slurm put %s on %s, gpusched on %s.", secs(sj[j.Name].Start.Sub(t0)), j.Name,
			nodeList(sj[j.Name].Nodes), nodeList(gpl[j.Name].Nodes))
		st, ok := b.Start(ids[j.Name])
		if !ok {
			return s
		}
		// A job on gpusched's node that the replay had ended by then (its
		// whole-second end not after gpusched's start) but that Slurm
		// ended only after placing this one.
		var late []string
		for _, o := range jobs {
			if o.Name == j.Name || !slices.Equal(sj[o.Name].Nodes, gpl[j.Name].Nodes) {
				continue
			}
			end, done := b.Ends[ids[o.Name]]
			ostart := sj[o.Name].Start
			if done && ostart.Before(st.Logged) && end.After(st.Logged) && !sj[o.Name].End.After(t0.Add(gs[j.Name])) {
				late = append(late, fmt.Sprintf("%s (logged done at %s s)", o.Name, strconv.FormatFloat(end.Sub(t0).Seconds(), 'f', 3, 64)))
			}
		}
		if len(late) > 0 {
			return s + fmt.Sprintf(" Slurm placed it at %s s, before %s ended, in the same second; the replay, with times to the second, "+
				"had processed that end first, so %s had room in gpusched and not in Slurm. From then on the two clusters have different holes.",
				strconv.FormatFloat(st.Logged.Sub(t0).Seconds(), 'f', 3, 64), strings.Join(late, "; "), nodeList(gpl[j.Name].Nodes))
		}
		return s + " The log shows no end in the same second on gpusched's node; the cause is not identified. From then on the two clusters have different holes."
	}
	return ""
}

// readBackfillLog parses the cluster's slurmctld.log.
func readBackfillLog(c *Cluster) (*BfLog, error) {
	f, err := os.Open(filepath.Join(c.Run, "log", "slurmctld.log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseBackfillLog(f, time.Local)
}
