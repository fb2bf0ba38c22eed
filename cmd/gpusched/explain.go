package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	core "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/snapshot"
	"github.com/gpusched/gpusched/topology"
	"github.com/spf13/cobra"
)

// newExplainCmd builds `gpusched explain`: load a saved scheduler state,
// run one scheduling cycle, and say why each waiting job waits.
func newExplainCmd() *cobra.Command {
	var jsonOut, noQuota bool
	var only []string
	var kf kubeFlags
	cmd := &cobra.Command{
		Use:   "explain STATE",
		Short: "Say why each pending job of a saved state waits",
		Long: `Explain loads a saved scheduler state — the cluster, the queue tree with its
quotas and policies, the jobs that run and the jobs that wait (see the
state file format below) — runs one scheduling cycle at the state's time,
and prints what would start now and why every other job waits: over quota
(which queue and resource), quota held for an earlier job, capacity,
topology, fragmentation, waiting for a backfill window, behind the head
of a strict FIFO queue. Then it prints the quota view of every queue.

"gpusched sim run --save-state AT" writes the state of the simulated
Scheduler at AT (state-AT.yaml in --out), as its cycle at AT saw it:
explain runs that cycle again. A platform embedding the Scheduler writes
one with package snapshot (snapshot.Capture, WriteFile). A state does not
carry what the Scheduler keeps from cycle to cycle — reservations (which
it never moves later), cached placement failures (whose explanations
count the free GPUs of the cycle that cached them), preemptions in
progress, Fair Tree's decayed usage — so explain computes those afresh;
the state's notes, which explain prints to standard error, say which
apply. "go doc github.com/gpusched/gpusched/snapshot" has the whole
format.

State file (YAML or JSON; "-" reads standard input); this example loads
as it stands (cmd/gpusched/testdata/explain/state.yaml is a larger one):

  version: 1
  now: 2025-01-01T10:00:00Z        # when the cycle runs
  cluster:                         # one of preset, file, machine, spec
    preset: h100-1k                # hosts dgx-h100-001 … dgx-h100-125
    # file: cluster.yaml           # relative to the state file
    # machine: dgx-h100            # generated: with hosts, hostsPerToR, torsPerSpine
    # spec: {...}                  # inline, as a cluster file holds it
  placer: topology                 # optional gang placer (default topology; fgd
                                   # needs its workload: [{gpus, gpuMilli, cpuMilli,
                                   # memoryMiB, models, weight}, …])
  defaultRuntime: 1h               # optional, for jobs without an estimate
  queues:                          # the queue tree (see package queue)
    root:
      children:
      - name: train
        quotas: [{resource: gpu, nominal: 64, max: 64}]
        policy: {ordering: strict-fifo, backfill: true}
  health:                          # optional
  - {host: dgx-h100-009, state: failed}
  - {gpu: dgx-h100-010/gpu2, state: draining}
  jobs:                            # workload.Job fields, plus:
  - id: pretrain-7
    queue: train
    groups: [{count: 4, gpus: 8}]
    topology: [{level: tor, required: true}]
    runtime: 12h
    submitted: 2025-01-01T08:00:00Z  # not after now
    state: running                 # pending (default), requeued, preempted,
                                   # admitted or running
    started: 2025-01-01T08:01:00Z    # running jobs: from submitted to now
    # progress: 2h                 # work saved by checkpoints of earlier runs
    placement:                     # one entry per task, groups in order
    - {host: dgx-h100-001, gpus: [0,1,2,3,4,5,6,7]}
    - {host: dgx-h100-002, gpus: [0,1,2,3,4,5,6,7]}
    - {host: dgx-h100-003, gpus: [0,1,2,3,4,5,6,7]}
    - {host: dgx-h100-004, gpus: [0,1,2,3,4,5,6,7]}
    # shares: {host: H, gpu: 2, milli: 500}; MIG: {host: H, gpu: 0, mig: 3g.40gb, start: 4}
  - id: pretrain-9                 # waits: 32 GPUs in use + 40 > train's max 64
    queue: train
    groups: [{count: 5, gpus: 8}]
    submitted: 2025-01-01T09:00:00Z`,
		Example: `  gpusched explain --kube dump.yaml --config kueue/
  gpusched explain state.yaml
  gpusched explain --job pretrain-9 state.yaml
  gpusched explain --json state.json`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if kf.dump != "" {
				return explainKube(cmd, &kf, args, jsonOut, only, !noQuota)
			}
			if len(args) != 1 {
				return fmt.Errorf("want a state file (or --kube DUMP)")
			}
			st, err := loadState(cmd, args[0])
			if err != nil {
				return err
			}
			for _, n := range st.notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %s\n", st.name, n)
			}
			d := st.sched.Schedule(st.now)
			if jsonOut {
				return writeExplainJSON(cmd.OutOrStdout(), st, d, only, !noQuota)
			}
			writeExplainText(cmd.OutOrStdout(), st, d, only, !noQuota)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&jsonOut, "json", false, "write JSON instead of text")
	fs.BoolVar(&noQuota, "no-quota", false, "leave out the quota view")
	fs.StringSliceVar(&only, "job", nil, "explain only these jobs (repeat or comma-separate)")
	kf.bind(cmd)
	return cmd
}

// loadedState is a state file turned into a Scheduler.
type loadedState struct {
	name    string
	now     time.Time
	cluster *topology.Cluster
	sched   *core.Scheduler
	// states is each job's state as the file gives it (a requeued or
	// preempted job waits in the loaded Scheduler as pending).
	states map[string]queue.State
	notes  []string
}

// loadState reads a state file ("-": standard input) with package
// snapshot; cluster files it names are relative to it.
func loadState(cmd *cobra.Command, path string) (*loadedState, error) {
	return loadStateWith(cmd, path, snapshot.Options{NoPreemption: true})
}

// loadStateWith is loadState with the Options to load with (opt.Dir is
// the file's directory).
func loadStateWith(cmd *cobra.Command, path string, opt snapshot.Options) (*loadedState, error) {
	var data []byte
	var err error
	name, dir := path, filepath.Dir(path)
	if path == "-" {
		name, dir = "<stdin>", "."
		data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), snapshot.MaxBytes+1))
	} else {
		data, err = readLimited(path)
	}
	if err != nil {
		return nil, err
	}
	opt.Dir = dir
	l, err := snapshot.Load(data, name, opt)
	if err != nil {
		return nil, err
	}
	return &loadedState{name: name, now: l.State.Now, cluster: l.Cluster, sched: l.Scheduler, states: l.States, notes: l.State.Notes}, nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, snapshot.MaxBytes+1))
}

// waitState is the state to show for a waiting job: the file's, when it
// says requeued or preempted.
func (st *loadedState) waitState(p core.Pending) queue.State {
	if fs, ok := st.states[p.Job]; ok && fs.Waiting() {
		return fs
	}
	return p.State
}

func writeExplainText(w io.Writer, st *loadedState, d core.Decision, only []string, quota bool) {
	c := st.cluster
	l := st.sched.Ledger()
	fmt.Fprintf(w, "%s at %s: %d GPUs, %d free; %d jobs (%d waiting)\n", c.Name(), st.now.UTC().Format(time.RFC3339),
		c.NumGPUs(), l.FreeGPUs(c.Root()), st.sched.Len(), len(d.Pending))
	keep := func(id string) bool { return len(only) == 0 || slices.Contains(only, id) }
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var starts int
	for _, b := range d.Bindings {
		if !keep(b.Job) {
			continue
		}
		if starts == 0 {
			fmt.Fprintln(w, "\nwould start now:")
		}
		starts++
		flags := ""
		if b.Borrowing {
			flags += " (borrowing)"
		}
		if b.Backfill {
			flags += " (backfill)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s%s\n", b.Job, b.Queue, core.FormatPlacement(c, b.Placement), flags)
	}
	tw.Flush()
	var waits int
	for _, p := range d.Pending {
		if !keep(p.Job) {
			continue
		}
		if waits == 0 {
			fmt.Fprintln(w, "\nwaiting:")
		}
		waits++
		state := ""
		if ws := st.waitState(p); ws != queue.Pending {
			state = " (" + ws.String() + ")"
		}
		fmt.Fprintf(tw, "  %s%s\t%s\t%s\n", p.Job, state, p.Queue, p.Reason)
	}
	tw.Flush()
	if len(only) > 0 {
		for _, id := range only {
			found := slices.ContainsFunc(d.Bindings, func(b core.Binding) bool { return b.Job == id }) ||
				slices.ContainsFunc(d.Pending, func(p core.Pending) bool { return p.Job == id })
			if !found {
				if js, ok := st.sched.Job(id); ok {
					fmt.Fprintf(w, "  %s is %s on %s\n", id, js.State, core.FormatPlacement(c, js.Placement))
				} else {
					fmt.Fprintf(w, "  %s: no such job\n", id)
				}
			}
		}
	}
	if !quota {
		return
	}
	views := st.sched.Queues()
	if !slices.ContainsFunc(views, func(v queue.View) bool {
		return slices.ContainsFunc(v.Resources, func(r queue.ResourceView) bool { return r.Governed })
	}) {
		fmt.Fprintln(w, "\nquota: none (no queue has a quota)")
		return
	}
	fmt.Fprintln(w, "\nquota (GPUs, cores, GiB):")
	fmt.Fprintf(tw, "  queue\tresource\tnominal\tused\treserved\tfree\tborrowed\tlent\tlimits\n")
	for _, v := range views {
		for _, r := range v.Resources {
			if !r.Governed {
				continue
			}
			fmt.Fprintf(tw, "  %s%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", strings.Repeat("  ", v.Depth), v.Queue, r.Resource,
				num(r.Nominal), num(r.Used), num(r.Reserved), num(r.Free), num(r.Borrowed), num(r.Lent), limits(r))
		}
	}
	tw.Flush()
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func limits(r queue.ResourceView) string {
	var parts []string
	if r.BorrowingLimit != nil {
		parts = append(parts, "borrow≤"+num(*r.BorrowingLimit))
	}
	if r.LendingLimit != nil {
		parts = append(parts, "lend≤"+num(*r.LendingLimit))
	}
	if r.Max != nil {
		parts = append(parts, "max "+num(*r.Max))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

type explainJSON struct {
	Now      time.Time      `json:"now"`
	Cluster  string         `json:"cluster"`
	GPUs     int            `json:"gpus"`
	FreeGPUs int            `json:"freeGPUs"`
	Starts   []explainStart `json:"starts"`
	Waiting  []explainWait  `json:"waiting"`
	Queues   []queue.View   `json:"queues,omitempty"`
}

type explainStart struct {
	Job       string `json:"job"`
	Queue     string `json:"queue"`
	Placement string `json:"placement"`
	Borrowing bool   `json:"borrowing,omitempty"`
	Backfill  bool   `json:"backfill,omitempty"`
}

type explainWait struct {
	Job      string     `json:"job"`
	Queue    string     `json:"queue"`
	State    string     `json:"state"`
	Code     string     `json:"code"`
	Reason   string     `json:"reason"`
	Blocker  string     `json:"blocker,omitempty"`
	Reserved *time.Time `json:"reserved,omitempty"`
}

func writeExplainJSON(w io.Writer, st *loadedState, d core.Decision, only []string, quota bool) error {
	keep := func(id string) bool { return len(only) == 0 || slices.Contains(only, id) }
	out := explainJSON{Now: st.now.UTC(), Cluster: st.cluster.Name(), GPUs: st.cluster.NumGPUs(),
		FreeGPUs: st.sched.Ledger().FreeGPUs(st.cluster.Root()), Starts: []explainStart{}, Waiting: []explainWait{}}
	for _, b := range d.Bindings {
		if keep(b.Job) {
			out.Starts = append(out.Starts, explainStart{Job: b.Job, Queue: b.Queue, Placement: core.FormatPlacement(st.cluster, b.Placement), Borrowing: b.Borrowing, Backfill: b.Backfill})
		}
	}
	for _, p := range d.Pending {
		if !keep(p.Job) {
			continue
		}
		x := explainWait{Job: p.Job, Queue: p.Queue, State: st.waitState(p).String(), Code: p.Reason.Code.String(), Reason: p.Reason.String(), Blocker: p.Reason.Blocker}
		if !p.Reason.Reserved.IsZero() {
			t := p.Reason.Reserved.UTC()
			x.Reserved = &t
		}
		out.Waiting = append(out.Waiting, x)
	}
	if quota {
		out.Queues = st.sched.Queues()
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	e.SetEscapeHTML(false)
	return e.Encode(out)
}
