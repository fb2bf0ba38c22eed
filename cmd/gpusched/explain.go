package main

import (
	"bytes"
	"encoding/json"
	"errors"
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
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// newExplainCmd builds `gpusched explain`: load a saved scheduler state,
// run one scheduling cycle, and say why each waiting job waits.
func newExplainCmd() *cobra.Command {
	var jsonOut, noQuota bool
	var only []string
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

State file (YAML or JSON; "-" reads standard input); this example loads
as it stands (cmd/gpusched/testdata/explain/state.yaml is a larger one):

  version: 1
  now: 2025-01-01T10:00:00Z        # when the cycle runs
  cluster:                         # one of preset, file, machine
    preset: h100-1k                # hosts dgx-h100-001 … dgx-h100-125
    # file: cluster.yaml           # relative to the state file
    # machine: dgx-h100            # generated: with hosts, hostsPerToR, torsPerSpine
  placer: topology                 # optional gang placer (default topology)
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
    submitted: 2025-01-01T08:00:00Z
    state: running                 # pending (default), admitted or running
    started: 2025-01-01T08:01:00Z
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
		Example: `  gpusched explain state.yaml
  gpusched explain --job pretrain-9 state.yaml
  gpusched explain --json state.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := loadState(cmd, args[0])
			if err != nil {
				return err
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
	return cmd
}

// stateFile is the saved state `gpusched explain` reads.
type stateFile struct {
	Version         int           `yaml:"version" json:"version"`
	Now             time.Time     `yaml:"now" json:"now"`
	Cluster         stateCluster  `yaml:"cluster" json:"cluster"`
	Placer          string        `yaml:"placer,omitempty" json:"placer,omitempty"`
	DefaultRuntime  time.Duration `yaml:"defaultRuntime,omitempty" json:"defaultRuntime,omitempty"`
	MaxReservations int           `yaml:"maxReservations,omitempty" json:"maxReservations,omitempty"`
	Queues          queue.Config  `yaml:"queues" json:"queues"`
	Health          []stateHealth `yaml:"health,omitempty" json:"health,omitempty"`
	Jobs            []stateJob    `yaml:"jobs" json:"jobs"`
}

type stateCluster struct {
	Preset       string `yaml:"preset,omitempty" json:"preset,omitempty"`
	File         string `yaml:"file,omitempty" json:"file,omitempty"`
	Machine      string `yaml:"machine,omitempty" json:"machine,omitempty"`
	Hosts        int    `yaml:"hosts,omitempty" json:"hosts,omitempty"`
	HostsPerToR  int    `yaml:"hostsPerToR,omitempty" json:"hostsPerToR,omitempty"`
	TorsPerSpine int    `yaml:"torsPerSpine,omitempty" json:"torsPerSpine,omitempty"`
}

type stateHealth struct {
	Host  string `yaml:"host,omitempty" json:"host,omitempty"`
	GPU   string `yaml:"gpu,omitempty" json:"gpu,omitempty"`
	State string `yaml:"state" json:"state"`
}

type stateJob struct {
	workload.Job `yaml:",inline"`
	Submitted    time.Time   `yaml:"submitted" json:"submitted"`
	State        string      `yaml:"state,omitempty" json:"state,omitempty"`
	Started      time.Time   `yaml:"started,omitempty" json:"started,omitempty"`
	Placement    []stateTask `yaml:"placement,omitempty" json:"placement,omitempty"`
}

type stateTask struct {
	// Group names the task's group (name or index); empty fills the groups
	// in order, each up to its count.
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	Host  string `yaml:"host" json:"host"`
	GPUs  []int  `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	GPU   *int   `yaml:"gpu,omitempty" json:"gpu,omitempty"`
	Milli int    `yaml:"milli,omitempty" json:"milli,omitempty"`
	MIG   string `yaml:"mig,omitempty" json:"mig,omitempty"`
	Start int    `yaml:"start,omitempty" json:"start,omitempty"`
}

// loadedState is a state file turned into a Scheduler.
type loadedState struct {
	name    string
	now     time.Time
	cluster *topology.Cluster
	sched   *core.Scheduler
}

// maxStateBytes bounds a state file, so a wrong path (a trace, a disk
// image) is an error rather than an out-of-memory.
const maxStateBytes = 256 << 20

// stateError names the state file, the line and the field that is wrong.
type stateError struct {
	File  string
	Line  int
	Field string
	Err   error
}

func (e *stateError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *stateError) Unwrap() error { return e.Err }

func loadState(cmd *cobra.Command, path string) (*loadedState, error) {
	var data []byte
	var err error
	name := path
	if path == "-" {
		name = "<stdin>"
		data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxStateBytes+1))
	} else {
		data, err = readLimited(path)
	}
	if err != nil {
		return nil, err
	}
	if len(data) > maxStateBytes {
		return nil, &stateError{File: name, Err: fmt.Errorf("larger than %d MiB", maxStateBytes>>20)}
	}
	dir := "."
	if path != "-" {
		dir = filepath.Dir(path)
	}
	return parseState(data, name, stateLimits{dir: dir})
}

// stateLimits restricts what a state may ask for: where cluster files are
// read from ("" forbids them) and, when small is set (fuzzing), clusters
// of at most 64 generated hosts and machine presets only.
type stateLimits struct {
	dir   string
	small bool
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxStateBytes+1))
}

// parseState decodes and loads a state.
func parseState(data []byte, name string, lim stateLimits) (*loadedState, error) {
	var sf stateFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&sf); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &stateError{File: name, Err: errors.New("empty state file")}
		}
		return nil, &stateError{File: name, Err: err}
	}
	var doc yaml.Node
	_ = yaml.Unmarshal(data, &doc)
	bad := func(field string, err error) error {
		return &stateError{File: name, Line: lineOf(&doc, field), Field: field, Err: err}
	}
	if sf.Version != 0 && sf.Version != 1 {
		return nil, bad("version", fmt.Errorf("version %d; this gpusched reads version 1", sf.Version))
	}
	if sf.Now.IsZero() {
		return nil, bad("now", errors.New("missing: the time the cycle runs at"))
	}
	c, err := sf.Cluster.build(lim)
	if err != nil {
		return nil, bad("cluster", err)
	}
	cfg := core.Config{Cluster: c, Queues: sf.Queues, DefaultRuntime: sf.DefaultRuntime, MaxReservations: sf.MaxReservations}
	if sf.Placer != "" {
		p, err := gang.New(sf.Placer, gang.Options{})
		if err != nil {
			return nil, bad("placer", err)
		}
		cfg.Placer = p
	} else {
		p, _ := gang.New("topology", gang.Options{})
		cfg.Placer = p
	}
	s, err := core.New(cfg)
	if err != nil {
		var ce *queue.ConfigError
		if errors.As(err, &ce) {
			f := "queues." + ce.Field
			return nil, &stateError{File: name, Line: lineOf(&doc, f), Field: f, Err: errors.New(ce.Msg)}
		}
		return nil, bad("", err)
	}
	// Jobs in order of submission (stable), holding jobs restored before
	// health is applied (their GPUs may have failed since).
	order := make([]int, len(sf.Jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return sf.Jobs[a].Submitted.Compare(sf.Jobs[b].Submitted) })
	for _, i := range order {
		j := &sf.Jobs[i]
		f := fmt.Sprintf("jobs[%d]", i)
		if j.Submitted.IsZero() {
			return nil, bad(f+".submitted", errors.New("missing submission time"))
		}
		switch j.State {
		case "", "pending":
			if len(j.Placement) > 0 {
				return nil, bad(f+".placement", errors.New("a pending job has no placement"))
			}
			if err := s.Submit(j.Job, j.Submitted); err != nil {
				return nil, bad(f, err)
			}
		case "admitted", "running":
			tasks, err := j.claims(c, f)
			if err != nil {
				return nil, &stateError{File: name, Line: lineOf(&doc, err.field), Field: err.field, Err: err.err}
			}
			st := queue.Admitted
			if j.State == "running" {
				st = queue.Running
				if j.Started.IsZero() {
					return nil, bad(f+".started", errors.New("a running job needs its start time"))
				}
			}
			if err := s.Restore(j.Job, tasks, st, j.Submitted, j.Started); err != nil {
				return nil, bad(f, err)
			}
		default:
			return nil, bad(f+".state", fmt.Errorf("unknown state %q (want pending, admitted or running)", j.State))
		}
	}
	for i, h := range sf.Health {
		f := fmt.Sprintf("health[%d]", i)
		hh, ok := map[string]topology.Health{"healthy": topology.Healthy, "draining": topology.Draining, "failed": topology.Failed}[h.State]
		if !ok {
			return nil, bad(f+".state", fmt.Errorf("unknown health %q (want healthy, draining or failed)", h.State))
		}
		switch {
		case h.Host != "" && h.GPU == "":
			id, ok := c.HostByName(h.Host)
			if !ok {
				return nil, bad(f+".host", fmt.Errorf("unknown host %q", h.Host))
			}
			if _, err := s.SetHostHealth(id, hh); err != nil {
				return nil, bad(f, err)
			}
		case h.GPU != "" && h.Host == "":
			g, err := gpuByName(c, h.GPU)
			if err != nil {
				return nil, bad(f+".gpu", err)
			}
			if _, err := s.SetGPUHealth(g, hh); err != nil {
				return nil, bad(f, err)
			}
		default:
			return nil, bad(f, errors.New("give exactly one of host and gpu"))
		}
	}
	return &loadedState{name: name, now: sf.Now, cluster: c, sched: s}, nil
}

func (sc *stateCluster) build(lim stateLimits) (*topology.Cluster, error) {
	n := 0
	for _, set := range []bool{sc.Preset != "", sc.File != "", sc.Machine != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, errors.New("give exactly one of preset, file and machine")
	}
	switch {
	case sc.Preset != "":
		if lim.small && !slices.Contains(topology.MachineNames(), sc.Preset) {
			return nil, errors.New("only machine presets here")
		}
		return topology.LoadPreset(sc.Preset)
	case sc.File != "":
		if lim.dir == "" {
			return nil, errors.New("cluster files are not allowed here")
		}
		p := sc.File
		if !filepath.IsAbs(p) {
			p = filepath.Join(lim.dir, p)
		}
		return topology.LoadFile(p)
	}
	hosts := sc.Hosts
	if hosts == 0 {
		hosts = 1
	}
	if max := 100000; hosts > max || lim.small && hosts > 64 {
		return nil, fmt.Errorf("%d hosts is more than this tool generates", hosts)
	}
	spec, err := topology.Generator{Name: sc.Machine, Machine: sc.Machine, Hosts: hosts, HostsPerToR: sc.HostsPerToR, ToRsPerSpine: sc.TorsPerSpine}.Spec()
	if err != nil {
		return nil, err
	}
	return topology.Build(spec)
}

type fieldErr struct {
	field string
	err   error
}

// claims turns a job's placement entries into claims per task group.
func (j *stateJob) claims(c *topology.Cluster, f string) ([][]topology.Claim, *fieldErr) {
	if len(j.Groups) == 0 {
		return nil, &fieldErr{f + ".groups", errors.New("a job needs at least one task group")}
	}
	out := make([][]topology.Claim, len(j.Groups))
	next := 0
	for i, t := range j.Placement {
		tf := fmt.Sprintf("%s.placement[%d]", f, i)
		g := next
		if t.Group != "" {
			g = -1
			for k := range j.Groups {
				if j.Groups[k].Name == t.Group || strconv.Itoa(k) == t.Group {
					g = k
				}
			}
			if g < 0 {
				return nil, &fieldErr{tf + ".group", fmt.Errorf("no task group %q", t.Group)}
			}
		} else {
			for g < len(j.Groups) && len(out[g]) >= j.Groups[g].Count {
				g++
			}
			if g >= len(j.Groups) {
				return nil, &fieldErr{tf, errors.New("more tasks placed than the job has")}
			}
			next = g
		}
		tg := &j.Groups[g]
		h, ok := c.HostByName(t.Host)
		if !ok {
			return nil, &fieldErr{tf + ".host", fmt.Errorf("unknown host %q", t.Host)}
		}
		first, n := c.HostGPUs(h)
		gpu := func(idx int, field string) (topology.GPUID, *fieldErr) {
			if idx < 0 || idx >= n {
				return 0, &fieldErr{field, fmt.Errorf("GPU %d outside 0..%d of host %s", idx, n-1, t.Host)}
			}
			return first + topology.GPUID(idx), nil
		}
		cl := topology.Claim{Host: h, CPUMilli: tg.CPUMilli, MemoryMiB: tg.MemoryMiB}
		switch {
		case t.MIG != "":
			if t.GPU == nil {
				return nil, &fieldErr{tf + ".gpu", errors.New("a MIG instance needs its gpu")}
			}
			id, fe := gpu(*t.GPU, tf+".gpu")
			if fe != nil {
				return nil, fe
			}
			m := c.Model(c.GPU(id).Model)
			p, ok := m.MIGProfileByName(t.MIG)
			if !ok {
				return nil, &fieldErr{tf + ".mig", fmt.Errorf("model %s has no MIG profile %q", m.Model, t.MIG)}
			}
			if t.Start < 0 || t.Start > 127 {
				return nil, &fieldErr{tf + ".start", fmt.Errorf("start slot %d out of range", t.Start)}
			}
			cl.GPUs = []topology.GPUClaim{{GPU: id, Kind: topology.ClaimMIG, Profile: p, Start: int8(t.Start)}}
		case t.Milli != 0:
			if t.GPU == nil {
				return nil, &fieldErr{tf + ".gpu", errors.New("a share needs its gpu")}
			}
			if t.Milli < 1 || t.Milli > 1000 {
				return nil, &fieldErr{tf + ".milli", fmt.Errorf("share %d outside 1..1000", t.Milli)}
			}
			id, fe := gpu(*t.GPU, tf+".gpu")
			if fe != nil {
				return nil, fe
			}
			cl.GPUs = []topology.GPUClaim{{GPU: id, Kind: topology.ClaimShare, Milli: int32(t.Milli)}}
		default:
			if t.GPU != nil {
				return nil, &fieldErr{tf + ".gpu", errors.New("whole GPUs go in gpus: [...]; gpu is for a share or MIG instance")}
			}
			for k, idx := range t.GPUs {
				id, fe := gpu(idx, fmt.Sprintf("%s.gpus[%d]", tf, k))
				if fe != nil {
					return nil, fe
				}
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: id, Kind: topology.ClaimWhole})
			}
		}
		out[g] = append(out[g], cl)
	}
	return out, nil
}

func gpuByName(c *topology.Cluster, name string) (topology.GPUID, error) {
	host, idx, ok := strings.Cut(name, "/gpu")
	if ok {
		if h, found := c.HostByName(host); found {
			first, n := c.HostGPUs(h)
			if k, err := strconv.Atoi(idx); err == nil && k >= 0 && k < n {
				return first + topology.GPUID(k), nil
			}
		}
	}
	return 0, fmt.Errorf("unknown GPU %q (want HOST/gpuN)", name)
}

// lineOf finds the line of a field path such as "jobs[3].placement[1].host"
// in a YAML document; 0 when it cannot.
func lineOf(doc *yaml.Node, path string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" || n == nil {
			continue
		}
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			n = mapValue(n, key)
			if n == nil {
				return line
			}
			line = n.Line
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			k, err := strconv.Atoi(idx)
			if err != nil || n.Kind != yaml.SequenceNode || k < 0 || k >= len(n.Content) {
				return line
			}
			n = n.Content[k]
			line = n.Line
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return line
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
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
		if p.State != queue.Pending {
			state = " (" + p.State.String() + ")"
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
	fmt.Fprintln(w, "\nquota (GPUs, cores, GiB):")
	fmt.Fprintf(tw, "  queue\tresource\tnominal\tused\treserved\tfree\tborrowed\tlent\tlimits\n")
	for _, v := range st.sched.Queues() {
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
		x := explainWait{Job: p.Job, Queue: p.Queue, State: p.State.String(), Code: p.Reason.Code.String(), Reason: p.Reason.String(), Blocker: p.Reason.Blocker}
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
