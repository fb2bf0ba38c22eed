package gpusched

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"gopkg.in/yaml.v3"
)

// TestScenarios runs the scripts in testdata/scenarios, in the style of
// etcd raft's interaction tests: one command per line, the expected output
// after "----". Regenerate with `go test -run TestScenarios -rewrite`.
//
// Commands (times are offsets from 2025-01-01T00:00Z, e.g. at=1h30m):
//
//	cluster machine=dgx-h100 hosts=4 [per-tor=2] [tors-per-spine=N] | preset=NAME | file=PATH
//	queues                  (body: a queue.Config in YAML)
//	config [default-runtime=1h] [max-reservations=N] [backfill-around=true] [reserve-depth=N] [placer=NAME]
//	submit id=J queue=Q [count=N] [min=N] [gpus=N] [milli=N] [mig=P] [cpu=N] [mem=N]
//	       [priority=N] [runtime=DUR] [topo=LEVEL:required|preferred] [models=(A,B)] [at=DUR]
//	burst n=N prefix=P queue=Q … (like submit, jobs P001…)
//	stream n=N prefix=P every=DUR from=DUR queue=Q … (future submissions, run by advance)
//	schedule [at=DUR] [start] [quiet]  one cycle; start reports every binding
//	                         Started; quiet prints only the counts
//	start|finish|fail|cancel|requeue|preempted id=J [at=DUR]
//	priority id=J p=N
//	health host=NAME|gpu=HOST/gpuN state=healthy|draining|failed
//	advance to=DUR [watch=(J,…)]  run until DUR: submissions from streams,
//	                         running jobs finish at start+runtime, a cycle
//	                         after every event, bindings started at once;
//	                         with watch, only the watched jobs' events and a
//	                         count per hour are printed
//	reset                    drop the scheduler (keep cluster and queues)
//	quota                    the quota view of governed resources
//	jobs                     every live job and its state
//
// After every command the harness checks the invariants: the ledger's
// counters (Ledger.Check), quotas (Tree.Over), and that the jobs holding
// resources are exactly the ledger's allocations.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out := h.run(t, td)
			h.check(t, td)
			return out
		})
	})
}

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type future struct {
	at  time.Time
	job workload.Job
}

type harness struct {
	c       *topology.Cluster
	queues  queue.Config
	cfg     Config
	s       *Scheduler
	now     time.Time
	futures []future
}

func (h *harness) sched(t *testing.T) *Scheduler {
	if h.s == nil {
		h.cfg.Cluster = h.c
		h.cfg.Queues = h.queues
		s, err := New(h.cfg)
		if err != nil {
			t.Fatal(err)
		}
		h.s = s
		h.now = t0
	}
	return h.s
}

func dur(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (h *harness) at(t *testing.T, td *datadriven.TestData) time.Time {
	if a, ok := td.Arg("at"); ok {
		h.now = t0.Add(dur(t, a.SingleVal(t)))
	}
	return h.now
}

func rel(tm time.Time) string { return "+" + tm.Sub(t0).String() }

func (h *harness) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "cluster":
		var spec topology.Spec
		var err error
		if td.HasArg("preset") {
			var name string
			td.ScanArgs(t, "preset", &name)
			spec, err = topology.Preset(name)
		} else if td.HasArg("file") {
			var name string
			td.ScanArgs(t, "file", &name)
			if h.c, err = topology.LoadFile(name); err != nil {
				t.Fatal(err)
			}
			return h.c.String()
		} else {
			g := topology.Generator{Name: "test"}
			td.ScanArgs(t, "machine", &g.Machine)
			td.ScanArgs(t, "hosts", &g.Hosts)
			td.MaybeScanArgs(t, "per-tor", &g.HostsPerToR)
			td.MaybeScanArgs(t, "tors-per-spine", &g.ToRsPerSpine)
			spec, err = g.Spec()
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.c, err = topology.Build(spec); err != nil {
			t.Fatal(err)
		}
		return h.c.String()
	case "reset":
		h.s, h.futures, h.cfg = nil, nil, Config{}
		return "ok"
	case "queues":
		dec := yaml.NewDecoder(strings.NewReader(td.Input))
		dec.KnownFields(true)
		h.queues = queue.Config{}
		if err := dec.Decode(&h.queues); err != nil {
			t.Fatal(err)
		}
		return "ok"
	case "config":
		var rt string
		if td.MaybeScanArgs(t, "default-runtime", &rt) {
			h.cfg.DefaultRuntime = dur(t, rt)
		}
		td.MaybeScanArgs(t, "max-reservations", &h.cfg.MaxReservations)
		td.MaybeScanArgs(t, "backfill-around", &h.cfg.BackfillAround)
		td.MaybeScanArgs(t, "reserve-depth", &h.cfg.ReserveDepth)
		var placer string
		if td.MaybeScanArgs(t, "placer", &placer) {
			p, err := gang.New(placer, gang.Options{Explain: gang.DetailBrief})
			if err != nil {
				t.Fatal(err)
			}
			h.cfg.Placer = p
		}
		return "ok"
	case "submit":
		s := h.sched(t)
		now := h.at(t, td)
		j := jobFromArgs(t, td, "")
		if err := s.Submit(j, now); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "burst":
		s := h.sched(t)
		now := h.at(t, td)
		var n int
		var prefix string
		td.ScanArgs(t, "n", &n)
		td.ScanArgs(t, "prefix", &prefix)
		var errs []string
		for i := 1; i <= n; i++ {
			j := jobFromArgs(t, td, fmt.Sprintf("%s%03d", prefix, i))
			if err := s.Submit(j, now); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return strings.Join(errs, "\n")
		}
		return fmt.Sprintf("submitted %d", n)
	case "stream":
		h.sched(t)
		var n int
		var prefix, every, from string
		td.ScanArgs(t, "n", &n)
		td.ScanArgs(t, "prefix", &prefix)
		td.ScanArgs(t, "every", &every)
		td.ScanArgs(t, "from", &from)
		for i := 1; i <= n; i++ {
			j := jobFromArgs(t, td, fmt.Sprintf("%s%03d", prefix, i))
			h.futures = append(h.futures, future{at: t0.Add(dur(t, from) + time.Duration(i-1)*dur(t, every)), job: j})
		}
		sort.SliceStable(h.futures, func(a, b int) bool { return h.futures[a].at.Before(h.futures[b].at) })
		return fmt.Sprintf("%d arrivals from %s every %s", n, from, every)
	case "schedule":
		s := h.sched(t)
		now := h.at(t, td)
		d := s.Schedule(now)
		if td.HasArg("start") {
			for _, b := range d.Bindings {
				if err := s.Started(b.Job, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		if td.HasArg("quiet") {
			return fmt.Sprintf("%d bound, %d waiting", len(d.Bindings), len(d.Pending))
		}
		out := d.Format(h.c)
		if out == "" {
			return "nothing to do"
		}
		return out
	case "start", "finish", "fail", "cancel", "requeue", "preempted":
		s := h.sched(t)
		now := h.at(t, td)
		var id string
		td.ScanArgs(t, "id", &id)
		var err error
		switch td.Cmd {
		case "start":
			err = s.Started(id, now)
		case "finish":
			err = s.Finished(id, now)
		case "fail":
			err = s.Failed(id, now)
		case "cancel":
			err = s.Cancel(id, now)
		case "requeue":
			err = s.Requeue(id, now)
		case "preempted":
			err = s.Preempted(id, now)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "priority":
		var id string
		var p int
		td.ScanArgs(t, "id", &id)
		td.ScanArgs(t, "p", &p)
		if err := h.sched(t).SetPriority(id, int32(p)); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "health":
		s := h.sched(t)
		var state string
		td.ScanArgs(t, "state", &state)
		hh := map[string]topology.Health{"healthy": topology.Healthy, "draining": topology.Draining, "failed": topology.Failed}[state]
		var ids []string
		var err error
		if td.HasArg("host") {
			var name string
			td.ScanArgs(t, "host", &name)
			ids, err = s.SetHostHealth(name, hh)
		} else {
			var name string
			td.ScanArgs(t, "gpu", &name)
			g := gpuByName(t, h.c, name)
			ids, err = s.SetGPUHealth(g, hh)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("affected: %v", ids)
	case "advance":
		return h.advance(t, td)
	case "quota":
		return formatQuota(h.sched(t).Queues())
	case "jobs":
		return h.jobs()
	}
	t.Fatalf("unknown command %s", td.Cmd)
	return ""
}

func gpuByName(t *testing.T, c *topology.Cluster, name string) topology.GPUID {
	for g := 0; g < c.NumGPUs(); g++ {
		if c.GPUName(topology.GPUID(g)) == name {
			return topology.GPUID(g)
		}
	}
	t.Fatalf("no GPU %s", name)
	return 0
}

func jobFromArgs(t *testing.T, td *datadriven.TestData, id string) workload.Job {
	j := workload.Job{ID: id}
	if id == "" {
		td.ScanArgs(t, "id", &j.ID)
	}
	td.ScanArgs(t, "queue", &j.Queue)
	g := workload.TaskGroup{Count: 1}
	td.MaybeScanArgs(t, "count", &g.Count)
	td.MaybeScanArgs(t, "min", &g.MinCount)
	td.MaybeScanArgs(t, "gpus", &g.GPUs)
	td.MaybeScanArgs(t, "milli", &g.GPUMilli)
	td.MaybeScanArgs(t, "mig", &g.MIGProfile)
	var cpu, mem int64
	if td.MaybeScanArgs(t, "cpu", &cpu) {
		g.CPUMilli = cpu * 1000
	}
	if td.MaybeScanArgs(t, "mem", &mem) {
		g.MemoryMiB = mem * 1024
	}
	if a, ok := td.Arg("models"); ok {
		g.Models = a.Vals
	}
	j.Groups = []workload.TaskGroup{g}
	var p int
	if td.MaybeScanArgs(t, "priority", &p) {
		j.Priority = int32(p)
	}
	var rt string
	if td.MaybeScanArgs(t, "runtime", &rt) {
		j.Runtime = dur(t, rt)
	}
	var topo string
	if td.MaybeScanArgs(t, "topo", &topo) {
		lv, kind, _ := strings.Cut(topo, ":")
		j.Topology = []workload.Constraint{{Level: lv, Required: kind == "required"}}
	}
	return j
}

// advance runs a small event loop until the given offset.
func (h *harness) advance(t *testing.T, td *datadriven.TestData) string {
	s := h.sched(t)
	var to string
	td.ScanArgs(t, "to", &to)
	end := t0.Add(dur(t, to))
	var watch []string
	if a, ok := td.Arg("watch"); ok {
		watch = a.Vals
	}
	show := func(id string) bool { return watch == nil || slices.Contains(watch, id) }
	hourBinds := 0
	hour := h.now.Truncate(time.Hour)
	var b strings.Builder
	for {
		next, ok := h.nextEvent()
		if !ok || next.After(end) {
			break
		}
		if watch != nil && next.Truncate(time.Hour).After(hour) {
			if hourBinds > 0 {
				fmt.Fprintf(&b, "%s…%s: %d other jobs bound\n", rel(hour), rel(hour.Add(time.Hour)), hourBinds)
			}
			hour, hourBinds = next.Truncate(time.Hour), 0
		}
		h.now = next
		// Finishes first, then arrivals, then one cycle.
		var done []string
		s.Holding(func(id string, st JobStatus) bool {
			if st.State == queue.Running && st.Spec.Runtime > 0 && !st.Started.Add(st.Spec.Runtime).After(next) {
				done = append(done, id)
			}
			return true
		})
		slices.Sort(done)
		for _, id := range done {
			if err := s.Finished(id, next); err != nil {
				t.Fatal(err)
			}
			if show(id) {
				fmt.Fprintf(&b, "%s finish %s\n", rel(next), id)
			}
		}
		for len(h.futures) > 0 && !h.futures[0].at.After(next) {
			f := h.futures[0]
			h.futures = h.futures[1:]
			if err := s.Submit(f.job, next); err != nil {
				fmt.Fprintf(&b, "%s submit %s: %v\n", rel(next), f.job.ID, err)
			}
		}
		d := s.Schedule(next)
		for _, x := range d.Bindings {
			if err := s.Started(x.Job, next); err != nil {
				t.Fatal(err)
			}
			if !show(x.Job) {
				hourBinds++
				continue
			}
			flags := ""
			if x.Borrowing {
				flags += " borrowing"
			}
			if x.Backfill {
				flags += " backfill"
			}
			fmt.Fprintf(&b, "%s bind %s (%s)%s: %s\n", rel(next), x.Job, x.Queue, flags, FormatPlacement(h.c, x.Placement))
		}
		h.check(t, td)
	}
	if watch != nil && hourBinds > 0 {
		fmt.Fprintf(&b, "%s…%s: %d other jobs bound\n", rel(hour), rel(end), hourBinds)
	}
	h.now = end
	d := s.Schedule(end)
	fmt.Fprintf(&b, "at %s: %d bound, %d waiting\n", rel(end), len(d.Bindings), len(d.Pending))
	for _, x := range d.Bindings {
		if err := s.Started(x.Job, end); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s bind %s (%s): %s\n", rel(end), x.Job, x.Queue, FormatPlacement(h.c, x.Placement))
	}
	for _, p := range d.Pending {
		if slices.Contains(watch, p.Job) {
			fmt.Fprintf(&b, "wait %s (%s) %s\n", p.Job, p.Queue, p.Reason)
		}
	}
	for i, p := range d.Pending {
		if watch != nil {
			break
		}
		if i == 8 {
			fmt.Fprintf(&b, "… %d more waiting\n", len(d.Pending)-8)
			break
		}
		fmt.Fprintf(&b, "wait %s (%s) %s\n", p.Job, p.Queue, p.Reason)
	}
	return b.String()
}

// nextEvent returns the time of the next arrival or estimated finish
// after now.
func (h *harness) nextEvent() (time.Time, bool) {
	var next time.Time
	ok := false
	consider := func(tm time.Time) {
		if tm.After(h.now) && (!ok || tm.Before(next)) {
			next, ok = tm, true
		}
	}
	if len(h.futures) > 0 {
		consider(h.futures[0].at)
	}
	h.s.Holding(func(id string, st JobStatus) bool {
		if st.State == queue.Running && st.Spec.Runtime > 0 {
			consider(st.Started.Add(st.Spec.Runtime))
		}
		return true
	})
	return next, ok
}

func (h *harness) jobs() string {
	var lines []string
	for id, j := range h.s.jobs.byID {
		line := fmt.Sprintf("%s %s %s", id, j.leaf.Name(), j.state)
		if j.state.Holding() {
			line += " " + FormatPlacement(h.c, j.placement)
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func formatQuota(vs []queue.View) string {
	var b strings.Builder
	for _, v := range vs {
		name := v.Queue
		for _, r := range v.Resources {
			if !r.Governed {
				if r.Resource == "gpu" {
					fmt.Fprintf(&b, "%s%-12s %-6s used %s reserved %s (no quota)\n", strings.Repeat("  ", v.Depth), name, r.Resource, num(r.Used), num(r.Reserved))
				}
				continue
			}
			fmt.Fprintf(&b, "%s%-12s %-6s nominal %s used %s reserved %s free %s borrowed %s lent %s\n",
				strings.Repeat("  ", v.Depth), name, r.Resource, num(r.Nominal), num(r.Used), num(r.Reserved), num(r.Free), num(r.Borrowed), num(r.Lent))
		}
	}
	return b.String()
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// check verifies the invariants after a command.
func (h *harness) check(t *testing.T, td *datadriven.TestData) {
	if h.s == nil {
		return
	}
	checkInvariants(t, h.s, td.Pos)
}

func checkInvariants(t interface {
	Helper()
	Fatalf(string, ...any)
}, s *Scheduler, where string) {
	t.Helper()
	if err := s.ledger.Check(); err != nil {
		t.Fatalf("%s: ledger: %v", where, err)
	}
	if id, b := s.tree.Over(); id >= 0 {
		t.Fatalf("%s: quota broken: %v", where, b)
	}
	var ids []string
	for id := range s.jobs.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		j := s.jobs.byID[id]
		if !j.state.Holding() {
			continue
		}
		// The job table's host list (one-claim placements take a fast
		// path, jobTable.index) is the placement's hosts, each filing j.
		if !slices.Equal(j.hosts, j.placement.Hosts()) {
			t.Fatalf("%s: job %s filed on hosts %v, its placement is on %v", where, id, j.hosts, j.placement.Hosts())
		}
		// What it is charged is what its placement takes (admit shares
		// the demand's slice when they are equal).
		if want := s.adm.charge(j.placement); !slices.Equal(j.charged, want) {
			t.Fatalf("%s: job %s charged %v, its placement takes %v", where, id, j.charged, want)
		}
		for _, h := range j.hosts {
			if !slices.Contains(s.jobs.onHost[h], j) {
				t.Fatalf("%s: job %s not filed on its host %s", where, id, s.c.HostName(h))
			}
		}
		// Allocate ignores health for comparison: allocate on a healthy
		// copy would fail on unhealthy GPUs, so compare GPU occupancy.
		for _, c := range j.placement.Claims {
			for _, g := range c.GPUs {
				st := s.ledger.GPU(g.GPU)
				if st.Mode == topology.ModeFree {
					t.Fatalf("%s: job %s holds %s but the ledger has it free", where, id, s.c.GPUName(g.GPU))
				}
			}
		}
	}
	var used int
	for g := 0; g < s.c.NumGPUs(); g++ {
		if s.ledger.GPU(topology.GPUID(g)).Mode != topology.ModeFree {
			used++
		}
	}
	held := map[topology.GPUID]bool{}
	for _, id := range ids {
		j := s.jobs.byID[id]
		if j.state.Holding() {
			for _, c := range j.placement.Claims {
				for _, g := range c.GPUs {
					held[g.GPU] = true
				}
			}
		}
	}
	if used != len(held) {
		t.Fatalf("%s: ledger has %d GPUs in use, jobs hold %d", where, used, len(held))
	}
}
