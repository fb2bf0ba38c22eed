// Package report writes what a simulation produced: a summary table for
// people, summary.json and CSV time series for tools, and PNG plots
// (allocation over time, queue length, CDFs of queue wait and completion
// time, a bar chart comparing runs).
//
// The JSON and CSV writers are deterministic: the same sim.Result gives
// the same bytes. Floats are written in their shortest exact form.
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
)

// Run is one labelled result, e.g. one policy of a comparison.
type Run struct {
	Label  string
	Result *sim.Result
}

func ff(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// WriteJSON writes v as indented JSON with a trailing newline.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// SampleHeader is the header row of the time-series CSV.
var SampleHeader = []string{"t_seconds", "allocated_gpus", "allocation", "useful_utilisation", "free_gpus", "unusable_gpus", "failed_gpus", "running", "pending", "pending_gpus"}

// WriteSamples writes the time series as CSV, one row per sim.Sample:
// allocation is the allocated share of GPU capacity at the row's time,
// useful_utilisation the useful work over the capacity since the previous
// row (sim.Sample.Utilisation). With per-level stranded
// GPUs measured (sim.Config.StrandedByLevel), one column per level
// follows, "stranded_LEVEL", empty in samples where no GPU job waited.
func WriteSamples(w io.Writer, samples []sim.Sample) error {
	cw := csv.NewWriter(w)
	var levels []string
	for _, s := range samples {
		if len(s.Stranded) > 0 {
			for _, l := range s.Stranded {
				levels = append(levels, l.Level)
			}
			break
		}
	}
	hdr := slices.Clone(SampleHeader)
	for _, l := range levels {
		hdr = append(hdr, "stranded_"+l)
	}
	cw.Write(hdr)
	for _, s := range samples {
		rec := []string{ff(s.Time), ff(s.AllocatedGPUs), ff(s.Allocation), ff(s.Utilisation), strconv.Itoa(s.FreeGPUs), strconv.Itoa(s.UnusableGPUs),
			strconv.Itoa(s.FailedGPUs), strconv.Itoa(s.Running), strconv.Itoa(s.Pending), ff(s.PendingGPUs)}
		for k := range levels {
			v := ""
			if k < len(s.Stranded) {
				v = strconv.Itoa(s.Stranded[k].Stranded)
			}
			rec = append(rec, v)
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// JobHeader is the header row of the per-job CSV.
var JobHeader = []string{"id", "queue", "priority", "gpus", "state", "submit", "start", "end", "duration", "wait", "jct", "preemptions", "fault_stops", "drain_stops", "last_reason", "end_reason", "rho", "waited"}

// WriteJobs writes one row per job as CSV; wait, jct and rho (finish-time
// fairness, sim.JobRecord.Rho) are empty for jobs that never started or
// did not complete. wait is the time to first start, waited the waiting
// time in all (after preemptions too, sim.JobRecord.Waited).
func WriteJobs(w io.Writer, jobs []sim.JobRecord) error {
	cw := csv.NewWriter(w)
	cw.Write(JobHeader)
	for _, j := range jobs {
		wait, jct := "", ""
		if j.Start >= 0 {
			wait = ff(j.Start - j.Submit)
		}
		rho := ""
		if j.State == sim.StateCompleted {
			jct = ff(j.End - j.Submit)
			if j.Rho > 0 {
				rho = ff(j.Rho)
			}
		}
		cw.Write([]string{j.ID, j.Queue, strconv.Itoa(int(j.Priority)), ff(j.GPUs), j.State.String(), ff(j.Submit), ff(j.Start), ff(j.End), ff(j.Duration),
			wait, jct, strconv.Itoa(j.Preemptions), strconv.Itoa(j.FaultStops), strconv.Itoa(j.DrainStops), j.LastReason, j.EndReason, rho, ff(j.Waited)})
	}
	cw.Flush()
	return cw.Error()
}

// QueueHeader is the header row of the per-queue CSV.
var QueueHeader = []string{"queue", "jobs", "completed", "wait_mean", "wait_p50", "wait_p95", "wait_p99", "jct_mean", "jct_p95", "gpu_seconds", "share", "entitlement", "rho_mean", "rho_max"}

// WriteQueues writes the per-queue summary as CSV.
func WriteQueues(w io.Writer, qs []sim.QueueSummary) error {
	cw := csv.NewWriter(w)
	cw.Write(QueueHeader)
	for _, q := range qs {
		cw.Write([]string{q.Name, strconv.Itoa(q.Jobs), strconv.Itoa(q.Completed), ff(q.Wait.Mean), ff(q.Wait.P50), ff(q.Wait.P95), ff(q.Wait.P99),
			ff(q.JCT.Mean), ff(q.JCT.P95), ff(q.GPUSeconds), ff(q.Share), ff(q.Entitlement), ff(q.Rho.Mean), ff(q.Rho.Max)})
	}
	cw.Flush()
	return cw.Error()
}

// Files names what WriteDir writes.
var Files = struct{ Summary, Samples, Jobs, Queues string }{"summary.json", "timeseries.csv", "jobs.csv", "queues.csv"}

// WriteDir writes summary.json, timeseries.csv, jobs.csv and queues.csv
// for one run into dir, creating it, and CycleStatsFile when the run
// recorded the library's cycle statistics.
func WriteDir(dir string, r *sim.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, fn func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("report: %s: %w", name, err)
		}
		return f.Close()
	}
	if err := write(Files.Summary, func(w io.Writer) error { return WriteJSON(w, r.Summary) }); err != nil {
		return err
	}
	if err := write(Files.Samples, func(w io.Writer) error { return WriteSamples(w, r.Samples) }); err != nil {
		return err
	}
	if err := write(Files.Jobs, func(w io.Writer) error { return WriteJobs(w, r.Jobs) }); err != nil {
		return err
	}
	if err := write(Files.Queues, func(w io.Writer) error { return WriteQueues(w, r.Summary.Queues) }); err != nil {
		return err
	}
	if len(r.CycleStats) == 0 {
		return nil
	}
	return write(CycleStatsFile, func(w io.Writer) error { return WriteCycleStats(w, r.CycleStats) })
}

// CycleStatsFile is the file WriteDir writes the library's cycle
// statistics to (sim.Result.CycleStats), when the run recorded them.
const CycleStatsFile = "cyclestats.jsonl"

// WriteCycleStats writes one JSON object a line per cycle: the cycle's
// time as atSeconds beside gpusched.CycleStats's fields, under their Go
// names — the figures an embedder of the same Scheduler exports (a kube
// plugin's /metrics).
func WriteCycleStats(w io.Writer, cycles []sim.CycleStats) error {
	enc := json.NewEncoder(w)
	for i := range cycles {
		line := struct {
			At float64 `json:"atSeconds"`
			gpusched.CycleStats
		}{cycles[i].At.Seconds(), cycles[i].Stats}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

type row struct {
	name string
	f    func(*sim.Summary) string
}

func pct(v float64) string  { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }
func secs(v float64) string { return fmtDur(v) }
func num(v float64) string  { return strconv.FormatFloat(v, 'f', 2, 64) }

// fmtDur renders seconds compactly: 42s, 7.5m, 3.2h, 4.1d.
func fmtDur(s float64) string {
	switch {
	case s < 60:
		return strconv.FormatFloat(s, 'f', 0, 64) + "s"
	case s < 3600:
		return strconv.FormatFloat(s/60, 'f', 1, 64) + "m"
	case s < 86400:
		return strconv.FormatFloat(s/3600, 'f', 1, 64) + "h"
	}
	return strconv.FormatFloat(s/86400, 'f', 1, 64) + "d"
}

var rows = []row{
	{"jobs completed", func(s *sim.Summary) string { return fmt.Sprintf("%d / %d", s.Jobs.Completed, s.Jobs.Total) }},
	{"rejected / failed / unfinished", func(s *sim.Summary) string {
		return fmt.Sprintf("%d / %d / %d", s.Jobs.Rejected, s.Jobs.Failed, s.Jobs.Unfinished)
	}},
	{"not arrived by the horizon", func(s *sim.Summary) string { return strconv.Itoa(s.Jobs.NotArrived) }},
	{"queue wait mean (started jobs)", func(s *sim.Summary) string { return secs(s.Wait.Mean) }},
	{"queue wait p50 / p95 / p99", func(s *sim.Summary) string {
		return secs(s.Wait.P50) + " / " + secs(s.Wait.P95) + " / " + secs(s.Wait.P99)
	}},
	{"total wait mean / p95 (every wait)", func(s *sim.Summary) string { return secs(s.TotalWait.Mean) + " / " + secs(s.TotalWait.P95) }},
	{"still waiting at the end", func(s *sim.Summary) string {
		if s.StillWaiting.Jobs == 0 {
			return "0"
		}
		return fmt.Sprintf("%d, longest so far %s", s.StillWaiting.Jobs, secs(s.StillWaiting.LongestSeconds))
	}},
	{"JCT mean / p95", func(s *sim.Summary) string { return secs(s.JCT.Mean) + " / " + secs(s.JCT.P95) }},
	{"slowdown p50 / p95", func(s *sim.Summary) string { return num(s.Slowdown.P50) + " / " + num(s.Slowdown.P95) }},
	{"makespan", func(s *sim.Summary) string { return secs(s.Makespan) }},
	{"GPU allocation (whole run)", func(s *sim.Summary) string { return pct(s.AllocationRate) }},
	{"GPU allocation (while arriving)", func(s *sim.Summary) string {
		return pct(s.ArrivalAllocation) + " over " + secs(s.ArrivalSpan)
	}},
	{"GPU utilisation (useful)", func(s *sim.Summary) string { return pct(s.Utilisation) }},
	{"load offered / achieved", func(s *sim.Summary) string { return num(s.OfferedLoad) + " / " + num(s.AchievedLoad) }},
	{"allocation / useful while jobs wait", func(s *sim.Summary) string {
		if s.BusyTime == 0 {
			return "- (no job waited)"
		}
		return pct(s.BusyAllocation) + " / " + pct(s.BusyUtilisation) + " over " + secs(s.BusyTime)
	}},
	{"free GPUs unusable (frag.)", func(s *sim.Summary) string {
		return pct(s.Fragmentation.UnusableShareFree) + " of " + num(s.Fragmentation.MeanFreeGPUs)
	}},
	{"free GPUs behind partitions / quotas", func(s *sim.Summary) string { return pct(s.Fragmentation.PartitionedShareFree) }},
	{"top scheduling failure", func(s *sim.Summary) string {
		if len(s.Failures) == 0 || s.Failures[0].JobCycles == 0 {
			return "-"
		}
		return fmt.Sprintf("%s (%d jobs)", s.Failures[0].Reason, s.Failures[0].Jobs)
	}},
	{"queue wait mean by priority", func(s *sim.Summary) string {
		if len(s.Priorities) == 0 {
			return "-"
		}
		parts := make([]string, len(s.Priorities))
		for i, p := range s.Priorities {
			parts[i] = fmt.Sprintf("%d: %s", p.Priority, secs(p.Wait.Mean))
		}
		return strings.Join(parts, ", ")
	}},
	{"preemptions / fault / drain stops", func(s *sim.Summary) string {
		return fmt.Sprintf("%d / %d / %d", s.Preemption.Preemptions, s.Preemption.FaultStops, s.Preemption.DrainStops)
	}},
	{"migrations / GPU-hours lost to them", func(s *sim.Summary) string {
		return fmt.Sprintf("%d / %s", s.Preemption.Migrations, num(s.Preemption.GPUHoursLostMigration))
	}},
	{"shrinks / grows / GPU-hours lost to shrinks", func(s *sim.Summary) string {
		return fmt.Sprintf("%d / %d / %s", s.Preemption.Shrinks, s.Preemption.Grows, num(s.Preemption.GPUHoursLostShrink))
	}},
	{"recoveries requeue / drain / keep / end", func(s *sim.Summary) string {
		r := s.Preemption.Recoveries
		return fmt.Sprintf("%d / %d / %d / %d", r.Requeue, r.Drain, r.Keep, r.End)
	}},
	{"GPU-hours lost (preempt / fail / drain)", func(s *sim.Summary) string {
		return num(s.Preemption.GPUHoursLostPreemption) + " / " + num(s.Preemption.GPUHoursLostFailure) + " / " + num(s.Preemption.GPUHoursLostDrain)
	}},
	{"GPU-hours lost per preemption", func(s *sim.Summary) string {
		if s.Preemption.Preemptions == 0 {
			return "-"
		}
		return num(s.Preemption.GPUHoursLostPreemption / float64(s.Preemption.Preemptions))
	}},
	{"fairness (Jain)", func(s *sim.Summary) string { return num(s.Fairness.JainIndex) }},
	{"fairness per window (Jain mean / min)", func(s *sim.Summary) string {
		if s.Fairness.Windows == 0 {
			return "-"
		}
		return num(s.Fairness.WindowJain) + " / " + num(s.Fairness.WindowJainMin) + " in " + strconv.Itoa(s.Fairness.Windows) + " × " + secs(s.Fairness.WindowSeconds)
	}},
	{"finish-time fairness ρ p50 / p95 / worst queue", func(s *sim.Summary) string {
		return num(s.FinishTimeFairness.P50) + " / " + num(s.FinishTimeFairness.P95) + " / " + num(s.Fairness.MaxQueueRho)
	}},
	{"multi-GPU in NVLink / host / switch", func(s *sim.Summary) string {
		return pct(s.Locality.InFabric) + " / " + pct(s.Locality.InHost) + " / " + pct(s.Locality.InSwitch)
	}},
}

// Definitions says what each row of the summary table (WriteTable, the
// HTML report) measures, by its name; the HTML report prints them.
var Definitions = map[string]string{
	"jobs completed":                                 "jobs that ran to completion / jobs in the trace",
	"rejected / failed / unfinished":                 "jobs the scheduler refused (too large, bad spec) / ended as failed by their recovery / still waiting or running at the horizon",
	"not arrived by the horizon":                     "jobs whose submission lies after --horizon",
	"queue wait mean (started jobs)":                 "mean time from submission to first start, over jobs that started: waits after preemptions are not in it (see total wait)",
	"queue wait p50 / p95 / p99":                     "percentiles of the time to first start",
	"total wait mean / p95 (every wait)":             "time each started job spent waiting in all: before its first start and after every preemption, failure or drain stop until it ran again",
	"still waiting at the end":                       "jobs that never started by the end, and the longest of their waits",
	"JCT mean / p95":                                 "job completion time, submission to end, over completed jobs",
	"slowdown p50 / p95":                             "JCT over the job's duration alone",
	"makespan":                                       "first submission to last end",
	"GPU allocation (whole run)":                     "GPU time held by jobs over the cluster's GPU time, start to end of the run",
	"GPU allocation (while arriving)":                "the same over the span of arrivals only",
	"GPU utilisation (useful)":                       "GPU time that did work jobs kept (not lost to preemptions, failures or overheads) over the cluster's",
	"load offered / achieved":                        "GPU time the arrived jobs ask for over the cluster's during the arrivals (what --load sets) / mean of allocated + waiting GPUs over capacity then",
	"allocation / useful while jobs wait":            "allocation and useful utilisation over the time some job was waiting: how well the scheduler used the cluster when it had a choice",
	"free GPUs unusable (frag.)":                     "share of free GPUs on hosts with too few free GPUs for any waiting job's smallest task (time-averaged, while GPU jobs wait), of the mean free GPUs; GPUs behind partitions are not counted",
	"free GPUs behind partitions / quotas":           "share of free GPUs no waiting job may use at all: another hard VC's hosts, or hosts only jobs held by their queue's quota could use",
	"top scheduling failure":                         "the most frequent reason a job could not start in a cycle, and how many jobs it held back",
	"queue wait mean by priority":                    "mean time to first start per job priority",
	"preemptions / fault / drain stops":              "runs stopped by preemption / by failures / by drains",
	"migrations / GPU-hours lost to them":            "jobs moved to consolidate or make room, and the work they lost",
	"shrinks / grows / GPU-hours lost to shrinks":    "elastic resizes, and the work shrinks lost",
	"recoveries requeue / drain / keep / end":        "the scheduler's recovery actions for jobs hit by failures and drains",
	"GPU-hours lost (preempt / fail / drain)":        "work since the last checkpoint lost by stopped runs (GPUs × time), by cause; a restart also costs --restart-cost (0 unless set)",
	"GPU-hours lost per preemption":                  "work lost since the last checkpoint per preemption, on average. The default model: a preempted job saves its progress at the end of its --grace only if it checkpoints at all (--ckpt-interval) and the grace covers one checkpoint's overhead, and a restart is free unless --restart-cost is set, so without those two flags preemption looks cheaper than on a real cluster",
	"fairness (Jain)":                                "Jain's index of the tenants' GPU time over the whole run (set by the trace more than the policy)",
	"fairness per window (Jain mean / min)":          "per window in which a job waited, Jain's index of each tenant's allocation over its demand-capped fair share; mean and worst",
	"finish-time fairness ρ p50 / p95 / worst queue": "Themis' ρ per job: JCT over its time alone on its fair share of the cluster; percentiles, and the worst queue's mean",
	"multi-GPU in NVLink / host / switch":            "share of multi-GPU jobs placed within one NVLink domain / one host / one switch",
}

// WriteTable writes the summary of each run as a column of a table, one
// metric per row.
func WriteTable(w io.Writer, runs ...Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "metric")
	for _, r := range runs {
		fmt.Fprint(tw, "\t"+r.Label)
	}
	fmt.Fprintln(tw)
	for _, rw := range rows {
		fmt.Fprint(tw, rw.name)
		for _, r := range runs {
			fmt.Fprint(tw, "\t"+rw.f(&r.Result.Summary))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
