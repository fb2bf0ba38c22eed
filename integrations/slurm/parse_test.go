package slurmharness

import (
	"strings"
	"testing"
	"time"
)

// TestParseJobs reads scontrol -d show job output as Slurm 22.05 prints it.
func TestParseJobs(t *testing.T) {
	const out = `JobId=5 JobName=big
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   JobState=RUNNING Reason=None Dependency=(null)
   SubmitTime=2026-12-01T15:07:33 EligibleTime=2026-12-01T15:07:33
   StartTime=2026-12-01T15:07:34 EndTime=2026-12-01T15:09:34 Deadline=N/A
   NodeList=node[05-07] BatchHost=node05
     Nodes=node[05-06] CPU_IDs=0-15 Mem=128000 GRES=gpu:h100:8(IDX:0-7)
     Nodes=node07 CPU_IDs=0-3 Mem=8000 GRES=gpu:h100:2(IDX:1,3)

JobId=6 JobName=waiting
   JobState=PENDING Reason=Resources Dependency=(null)
   StartTime=Unknown EndTime=Unknown
   NodeList=(null)
`
	jobs, err := ParseJobs(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs", len(jobs))
	}
	j := jobs[0]
	if j.ID != 5 || j.Name != "big" || j.State != "RUNNING" || strings.Join(j.Nodes, ",") != "node05,node06,node07" {
		t.Errorf("job 5: %+v", j)
	}
	if fmtPlacement(Placement{Nodes: j.Nodes, GPUs: j.GPUs}) != "node05:0,1,2,3,4,5,6,7 node06:0,1,2,3,4,5,6,7 node07:1,3" {
		t.Errorf("GPUs %v", j.GPUs)
	}
	if j.End.Sub(j.Start) != 2*time.Minute || j.Eligible.IsZero() {
		t.Errorf("times %v %v %v", j.Eligible, j.Start, j.End)
	}
	if w := jobs[1]; w.State != "PENDING" || len(w.Nodes) != 0 || !w.Start.IsZero() {
		t.Errorf("job 6: %+v", w)
	}
	if _, err := ParseJobs("JobId=x\n"); err == nil {
		t.Error("bad job id accepted")
	}
	if _, err := ParseJobs("JobId=1\n Nodes=n1 GRES=gpu:1(IDX:3-1)\n"); err == nil {
		t.Error("bad IDX accepted")
	}
	st, err := ParseStarts("12 2026-12-01T15:23:39\n13 N/A\n")
	if err != nil || st[12].IsZero() || !st[13].IsZero() {
		t.Errorf("starts %v %v", st, err)
	}
}

// TestModelRunBackfill: gpusched's replay of scenario (b) with every job
// running its whole limit — the plan the report compares with squeue --start.
func TestModelRunBackfill(t *testing.T) {
	m, err := LoadModel(siteDir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	at, err := runOffsets(m, BackfillJobs(), nil, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	// r3 ends at 60 s: p2 and p3 (r3's nodes and b2's); r1 and r2 end at
	// 120 s: p1, w1 and w2 (w1 may not take b1's node at 60 s: p1 needs it
	// at 120 s). b1, b2, b3 backfill at 0: they end by the reservations.
	want := map[string]time.Duration{"r1-h100-3x8": 0, "r2-h100-4x8": 0, "r3-a100-6x4": 0, "b1-h100-8": 0, "b2-a100-1": 0, "b3-a100-4": 0,
		"p2-a100-4x4": time.Minute, "p3-a100-3x4": time.Minute, "p1-h100-4x8": 2 * time.Minute, "w1-h100-8": 2 * time.Minute, "w2-h100-2x8": 2 * time.Minute}
	for k, v := range want {
		if at[k] != v {
			t.Errorf("%s starts at %v, want %v", k, at[k], v)
		}
	}
}

// TestParseBackfillLog: backfill plans (nodes expanded), starts by the
// main scheduler and by backfill; a known line that does not parse names
// its line number.
func TestParseBackfillLog(t *testing.T) {
	log := "[2026-12-01T21:10:03.600] sched/backfill: _attempt_backfill: beginning\n" +
		"[2026-12-01T21:10:03.627] sched/backfill: _dump_job_sched: JobId=101 to start at 2026-12-01T21:11:00, end at 2026-12-01T21:13:00 on nodes node[01-02,07] in partition gpu\n" +
		"[2026-12-01T21:10:06.001] sched: Allocate JobId=101 NodeList=node07 #CPUs=4 Partition=gpu\n" +
		"[2026-12-01T21:10:06.002] sched/backfill: _start_job: Started JobId=102 in gpu on node02\n"
	b, err := ParseBackfillLog(strings.NewReader(log), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Plans) != 1 || b.Plans[0].JobID != 101 || strings.Join(b.Plans[0].Nodes, ",") != "node01,node02,node07" ||
		b.Plans[0].Start.Format(time.TimeOnly) != "21:11:00" || b.Plans[0].End.Sub(b.Plans[0].Start) != 2*time.Minute {
		t.Errorf("plans: %+v", b.Plans)
	}
	if st, ok := b.Start(101); !ok || st.Backfill || st.Nodes[0] != "node07" {
		t.Errorf("start of 101: %+v", st)
	}
	if st, ok := b.Start(102); !ok || !st.Backfill {
		t.Errorf("start of 102: %+v", st)
	}
	if len(b.Passes) != 1 || b.Passes[0].Format("15:04:05.000") != "21:10:03.600" {
		t.Errorf("passes: %v", b.Passes)
	}
	if held := b.HeldAt("node02", b.Plans[0].Logged.Add(time.Second), 2*time.Minute); len(held) != 1 {
		t.Errorf("node02 held by %v, want job 101's plan", held)
	}
	_, err = ParseBackfillLog(strings.NewReader("x\n[2026-12-01T21:10:03.627] sched/backfill: _dump_job_sched: JobId=1 to start at 2026-13-01T21:11:00, end at 2026-12-01T21:13:00 on nodes n1 in partition gpu\n"), time.UTC)
	if err == nil || !strings.Contains(err.Error(), "slurmctld.log:2:") {
		t.Errorf("bad month: %v", err)
	}
}
