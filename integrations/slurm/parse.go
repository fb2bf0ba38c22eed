package slurmharness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	slurmconf "github.com/gpusched/gpusched/importers/slurm"
	"github.com/gpusched/gpusched/topology"
)

// JobSpec is one job of a scenario, as both Slurm and gpusched get it:
// Nodes nodes, each with GPUs GPUs (of Type, or any), CPUs cores and
// MemMiB memory; a time limit (whole minutes in Slurm) and the time the
// job really runs (sleep).
type JobSpec struct {
	Name   string
	Nodes  int
	GPUs   int
	Type   string
	CPUs   int
	MemMiB int64
	Limit  time.Duration
	Sleep  time.Duration
	Arrive time.Duration // since the scenario's start (the mini trace)
}

// JobInfo is what scontrol -d show job says about one job.
type JobInfo struct {
	ID         int
	Name       string
	State      string
	Reason     string // why it waits (Resources, Priority, BeginTime…), or None
	Submit     time.Time
	Eligible   time.Time
	Start, End time.Time // zero when unknown
	// GPUs are the GPU indices (Slurm's IDX) per node, for running jobs.
	GPUs map[string][]int
	// Nodes are the allocated nodes, sorted.
	Nodes []string
}

// ParseJobs parses the output of scontrol -d show job (records separated
// by blank lines; the detail lines "Nodes=… CPU_IDs=… GRES=gpu:t:n(IDX:…)").
func ParseJobs(out string) ([]JobInfo, error) {
	var jobs []JobInfo
	var cur *JobInfo
	for _, ln := range strings.Split(out, "\n") {
		f := strings.Fields(ln)
		if len(f) == 0 {
			continue
		}
		if strings.HasPrefix(f[0], "JobId=") {
			id, err := strconv.Atoi(strings.TrimPrefix(f[0], "JobId="))
			if err != nil {
				return nil, fmt.Errorf("scontrol: bad %q", f[0])
			}
			jobs = append(jobs, JobInfo{ID: id, GPUs: map[string][]int{}})
			cur = &jobs[len(jobs)-1]
		}
		if cur == nil {
			continue
		}
		detail := strings.HasPrefix(f[0], "Nodes=")
		var nodes []string
		for _, kv := range f {
			k, v, _ := strings.Cut(kv, "=")
			switch {
			case k == "JobName":
				cur.Name = v
			case k == "JobState":
				cur.State = v
			case k == "Reason":
				cur.Reason = v
			case k == "SubmitTime":
				cur.Submit = parseTime(v)
			case k == "EligibleTime":
				cur.Eligible = parseTime(v)
			case k == "StartTime":
				cur.Start = parseTime(v)
			case k == "EndTime":
				cur.End = parseTime(v)
			case k == "NodeList" && v != "" && v != "(null)":
				ns, err := topology.ExpandNames(v)
				if err != nil {
					return nil, fmt.Errorf("scontrol: NodeList %q: %v", v, err)
				}
				cur.Nodes = ns
				slices.Sort(cur.Nodes)
			case detail && k == "Nodes":
				ns, err := topology.ExpandNames(v)
				if err != nil {
					return nil, fmt.Errorf("scontrol: Nodes %q: %v", v, err)
				}
				nodes = ns
			case detail && k == "GRES":
				idx, err := gresIndices(v)
				if err != nil {
					return nil, err
				}
				for _, n := range nodes {
					cur.GPUs[n] = append(cur.GPUs[n], idx...)
				}
			}
		}
	}
	return jobs, nil
}

// gresIndices parses "gpu:h100:2(IDX:0-1),gpu:a100:1(IDX:3)" into indices.
func gresIndices(v string) ([]int, error) {
	var out []int
	for {
		i := strings.Index(v, "(IDX:")
		if i < 0 {
			return out, nil
		}
		v = v[i+5:]
		j := strings.IndexByte(v, ')')
		if j < 0 {
			return nil, fmt.Errorf("scontrol: unterminated IDX in %q", v)
		}
		idx, err := slurmconf.ParseList(v[:j])
		if err != nil {
			return nil, fmt.Errorf("scontrol: bad IDX %q: %v", v[:j], err)
		}
		out = append(out, idx...)
		v = v[j:]
	}
}

func parseTime(v string) time.Time {
	t, err := time.ParseInLocation("2006-01-02T15:04:05", v, time.Local)
	if err != nil {
		return time.Time{}
	}
	return t
}

// ParseStarts parses "squeue --start -h -o '%i %S'" lines: job ID and the
// expected start (N/A when Slurm has none).
func ParseStarts(out string) (map[int]time.Time, error) {
	m := map[int]time.Time{}
	for _, ln := range strings.Split(out, "\n") {
		f := strings.Fields(ln)
		if len(f) != 2 {
			continue
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("squeue: bad job id %q", f[0])
		}
		m[id] = parseTime(f[1])
	}
	return m, nil
}
