package snapshot

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// stateFields calls fn with every field of v's type, a struct type of
// this package, as "Type.Field", and whether v has it non-zero, then
// does the same for the values of this package's types the field holds
// (through pointers and slices), or, where it holds none, for a zero
// one. Types of other packages (time.Time, queue.Config, topology.Spec,
// workload.Job) are leaves: their own tests carry them.
func stateFields(v reflect.Value, fn func(field string, set bool)) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("yaml") == "-" {
			continue
		}
		fv := v.Field(i)
		fn(t.Name()+"."+f.Name, !fv.IsZero())
		elem, items := f.Type, []reflect.Value{fv}
		switch f.Type.Kind() {
		case reflect.Pointer:
			elem, items = f.Type.Elem(), nil
			if !fv.IsNil() {
				items = []reflect.Value{fv.Elem()}
			}
		case reflect.Slice:
			elem, items = f.Type.Elem(), nil
			for k := range fv.Len() {
				items = append(items, fv.Index(k))
			}
		}
		if elem.Kind() != reflect.Struct || elem.PkgPath() != t.PkgPath() {
			continue
		}
		if len(items) == 0 {
			stateFields(reflect.New(elem).Elem(), func(q string, _ bool) { fn(q, false) })
		}
		for _, it := range items {
			stateFields(it, fn)
		}
	}
}

// notCarried are the State paths no captured state sets, with why.
var notCarried = map[string]string{
	"State.Notes":  "informational (Capture's limits), not restored",
	"Cluster.File": "Capture names a preset or writes the spec inline, never a file; a file written by hand loads (TestClusterFile)",
	// Not covered yet: a filter is set only where some models are
	// excluded by per-model quotas, on a cluster of several models, which
	// no state test builds.
	"Reservation.Filter": "the model filter a reservation was computed under (a cache key: a mismatch recomputes it)",
}

// TestEveryConcernStateCarried extends TestEveryConfigSettingCarried to
// all state: each file of a corpus (one state of every version, and
// tinyAll for the rest) loads, captures, encodes and loads again to the
// same state (a fixed point: what Capture writes, Load restores and
// Capture reads back, field by field), and every field of the file's
// State and the types it holds (by reflection) is set in at least one of
// them, and so is every field of the Scheduler's own state
// (gpusched.State, which each concern fills and restores in its own
// file) of the Scheduler loaded again. A field added to either that is
// not saved, encoded, decoded and restored fails here, as does one listed
// in concernFields (every field of every concern of the Scheduler) as
// carried by a gpusched.State path that does not exist.
func TestEveryConcernStateCarried(t *testing.T) {
	pp, err := gpusched.NewPlanPreemptor(preemptConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	rich := richScheduler(t)
	st, err := Capture(rich, time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC), CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	preset := "now: 2025-01-01T10:00:00Z\ncluster: {preset: dgx-h100}\nqueues: {root: {children: [{name: a}]}}\njobs: []\n"
	// capture captures l as it was loaded: its placer (with its
	// workload) and its cluster named alike.
	capture := func(l *Loaded) (*State, error) {
		opt := CaptureOptions{Placer: l.State.Placer, Cluster: l.State.Cluster}
		if len(l.State.Workload) > 0 {
			d, _, err := distribution(l.Cluster, l.State.Workload)
			if err != nil {
				return nil, err
			}
			opt.Workload = &d
		}
		return Capture(l.Scheduler, l.State.Now, opt)
	}
	ef := elasticFiles(t)
	set, rootSet := map[string]bool{}, map[string]bool{}
	for name, data := range map[string]string{"shrinking": ef[0], "growing": ef[1], "tiny": tinyState, "v5": tinyV5, "v6": tinyV6, "v7": tinyV7, "sample": string(readSample(t)),
		"settings": tinySettings, "moving": tinyMoving, "rich": encoded(t, st), "preset": preset, "recovering": recoveringFile(t)} {
		opt := Options{Preemptor: pp}
		l, err := Load([]byte(data), name, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st, err := capture(l)
		if err != nil {
			t.Fatal(err)
		}
		file := encoded(t, st)
		l2, err := Load([]byte(file), name, opt)
		if err != nil {
			t.Fatalf("%s captured: %v\n%s", name, err, file)
		}
		again, err := capture(l2)
		if err != nil {
			t.Fatal(err)
		}
		if file2 := encoded(t, again); file != file2 {
			t.Errorf("%s: loading what Capture wrote and capturing again differs:\n%s\nagain:\n%s", name, file, file2)
		}
		stateFields(reflect.ValueOf(st).Elem(), func(p string, on bool) { set[p] = set[p] || on })
		gs := l2.Scheduler.State()
		stateFields(reflect.ValueOf(&gs).Elem(), func(p string, on bool) { rootSet[p] = rootSet[p] || on })
	}
	unset := func(set map[string]bool, except map[string]string) string {
		var missing []string
		for p, on := range set {
			if _, ok := except[p]; !ok && !on {
				missing = append(missing, p)
			}
		}
		slices.Sort(missing)
		return strings.Join(missing, "\n")
	}
	if m := unset(set, notCarried); m != "" {
		t.Errorf("no captured state sets these fields: capture and restore them (and set them in tinyAll), or list them in notCarried:\n%s", m)
	}
	if m := unset(rootSet, rootNotCarried); m != "" {
		t.Errorf("no loaded Scheduler's State (gpusched.State) sets these fields: save and restore them in their concern's file (stateParts), encode them (FromState, SchedulerState), or list them in rootNotCarried:\n%s", m)
	}
}

// rootNotCarried are the gpusched.State paths no loaded Scheduler's
// State sets, with why.
var rootNotCarried = map[string]string{
	"Config.OmitPending": "a host's choice of output, not state (the package's limits)",
	"Config.Stats":       "a host's choice of output, not state (the package's limits)",
	"Reservation.Filter": notCarried["Reservation.Filter"],
}

// tinySettings sets every setting, the fgd placer with its workload, a
// generated cluster and Fair Tree usage.
const tinySettings = `now: 2025-01-01T10:00:00Z
cluster: {machine: dgx-h100, hosts: 4, hostsPerToR: 1, torsPerSpine: 2}
placer: fgd
workload: [{gpus: 1, cpuMilli: 8000, memoryMiB: 1024, models: [H100-SXM5-80GB], weight: 0.5}, {gpuMilli: 500, weight: 0.5}]
seed: 7
defaultRuntime: 1h
maxReservations: 2
maxRestarts: 3
drainGrace: 5m
drainKeep: 10m
admitTimeout: 30m
maxGrace: 2h
elastic: {noGrow: true}
backfillAround: true
reserveDepth: 2
reserveWholeHosts: true
evictionRetry: 20m
maxClockSkew: 10m
maxTombstones: 100
defrag: {after: 10m, perHour: 2, lostPerHour: 5000, minValue: 0.5, maxPerJob: 1, grace: 1m, consolidate: {levels: [tor], idle: 30m, perHour: 1, lostPerHour: 100, target: 1, maxDomains: 2}}
consolidation: {log: [{at: 2025-01-01T09:30:00Z, lost: 1000}], busy: 2025-01-01T09:40:00Z, nothingFound: true, foundMoves: 1, foundLost: 60000}
queues: {root: {children: [{name: a}, {name: b}]}, fairness: {policy: fair-tree}}
usage: [{queue: a, value: 5000, at: 2025-01-01T09:55:00Z}]
jobs:
- {id: r3, queue: a, groups: [{count: 1, gpus: 8}], submitted: 2025-01-01T09:00:00Z, state: running, started: 2025-01-01T09:00:00Z, placement: [{host: dgx-h100-3, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}]}
- {id: r4, queue: a, groups: [{count: 1, gpus: 8}], submitted: 2025-01-01T09:00:00Z, state: running, started: 2025-01-01T09:00:00Z, placement: [{host: dgx-h100-4, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}]}
leaving: [{host: dgx-h100-4}, {host: dgx-h100-3, template: dgx-h100}]
`

// tinyMoving sets what tinyV5 leaves out: a migration's domain and an
// exact verdict with its time.
const tinyMoving = "now: 2025-01-01T10:00:00Z\n" + tinyCluster + `queues: {root: {children: [{name: a}]}}
defrag: {after: 10m, perHour: 2, maxPerJob: 1}
jobs:
- {id: r, queue: a, groups: [{count: 1, gpus: 1}], submitted: 2025-01-01T09:00:00Z, state: running, started: 2025-01-01T09:00:00Z, placement: [{host: h1, gpus: [1]}]}
- {id: g, queue: a, groups: [{count: 1, gpus: 2}], submitted: 2025-01-01T09:10:00Z}
- {id: p, queue: a, priority: 1, groups: [{count: 2, gpus: 2}], submitted: 2025-01-01T09:20:00Z}
nominations: [{job: g, victims: [r], due: 2025-01-01T10:05:00Z, placement: [{host: h1, gpus: [0, 1]}]}]
migrations: [{job: r, to: [{host: h2, gpus: [0]}], domain: h2}]
noPlans: [{job: p, priority: 1, until: 2025-01-01T10:30:00Z, exact: true}]
`

// richScheduler drives a Scheduler into the state the seeds leave out:
// kept backfill reservations (one at a time, one forever), a job with a
// checkpoint, preemption and restart counts and a placement of named
// groups, and hosts waiting to leave and to change shape.
func richScheduler(t *testing.T) *gpusched.Scheduler {
	c := lab(t, 5)
	cfg := gpusched.Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "a", Policy: queue.Policy{Backfill: true}}, {Name: "b", Policy: queue.Policy{Backfill: true}}}}},
		MaxReservations: 4}
	s, err := gpusched.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	run := func() {
		t.Helper()
		for _, b := range s.Schedule(now).Bindings {
			must(s.Started(b.Job, now))
		}
	}
	job := func(id, q string, runtime time.Duration, groups ...workload.TaskGroup) {
		t.Helper()
		must(s.Submit(workload.Job{ID: id, Queue: q, Runtime: runtime, Groups: groups}, now))
	}
	job("counted", "a", time.Hour, workload.TaskGroup{Name: "launcher", Count: 1, GPUs: 1}, workload.TaskGroup{Name: "worker", Count: 1, GPUs: 7})
	job("timed", "a", 2*time.Hour, workload.TaskGroup{Count: 1, GPUs: 8})
	job("endless", "b", 0, workload.TaskGroup{Count: 2, GPUs: 8})
	run()
	now = now.Add(10 * time.Minute)
	must(s.Preempted("counted", now))
	run()
	now = now.Add(10 * time.Minute)
	js, _ := s.Job("counted") // a failed GPU: recovered by a requeue
	_, err = s.SetGPUHealth(js.Placement.Claims[0].GPUs[0].GPU, topology.Failed)
	must(err)
	s.Schedule(now)
	must(s.Requeue("counted", now))
	run()
	now = now.Add(10 * time.Minute)
	must(s.Checkpointed("counted", now.Add(-5*time.Minute), now))
	job("big-a", "a", time.Hour, workload.TaskGroup{Count: 1, GPUs: 8})
	job("big-b", "b", time.Hour, workload.TaskGroup{Count: 4, GPUs: 8})
	run()
	return s
}

// encoded is st as Encode writes it.
func encoded(t testing.TB, st *State) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, st, ""); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// elasticFiles are the states of an elastic gang with a shrink in flight
// (for a job, with a grace), and then with a grow in flight.
func elasticFiles(t *testing.T) []string {
	c := lab(t, 2)
	cfg := gpusched.Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}},
		Elastic: &gpusched.ElasticConfig{}}
	pp, err := gpusched.NewPlanPreemptor(preemptConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Preemptor = pp
	s, err := gpusched.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var files []string
	capture := func(now time.Time) {
		st, err := Capture(s, now, CaptureOptions{})
		must(err)
		files = append(files, encoded(t, st))
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	must(s.Submit(workload.Job{ID: "e", Queue: "q", Priority: 1, Grace: 30 * time.Second, Groups: []workload.TaskGroup{{Count: 8, MinCount: 4, GPUs: 1}}}, now))
	must(s.Submit(workload.Job{ID: "r", Queue: "q", Priority: 1, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, now))
	for _, b := range s.Schedule(now).Bindings {
		must(s.Started(b.Job, now))
	}
	now = now.Add(time.Hour)
	must(s.Submit(workload.Job{ID: "n", Queue: "q", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}, now))
	if d := s.Schedule(now); len(d.Shrinks) != 1 {
		t.Fatalf("want a shrink:\n%s", d.Format(c))
	}
	capture(now)
	must(s.Shrunk("e", now))
	for _, b := range s.Schedule(now).Bindings {
		must(s.Started(b.Job, now))
	}
	now = now.Add(time.Hour)
	must(s.Finished("n", now))
	if d := s.Schedule(now); len(d.Grows) != 1 {
		t.Fatalf("want a grow:\n%s", d.Format(c))
	}
	capture(now)
	return files
}

// TestRichSchedulerCarried: the live scenario of the carried test reaches
// what it is meant to (so that test's coverage does not rest on luck).
func TestRichSchedulerCarried(t *testing.T) {
	s := richScheduler(t)
	js, _ := s.Job("counted")
	if js.State != queue.Running || js.Preemptions != 1 || js.Restarts != 1 {
		t.Fatalf("counted: %+v", js)
	}
	if rs := s.Reservations(); len(rs) != 2 {
		t.Fatalf("reservations %+v", rs)
	}
}

// concernFields says, for every field of every concern of the Scheduler
// and of its per-job state (unexported, read by reflection), which field
// of the Scheduler's state (gpusched.State and the types it holds:
// "DefragState.Moves") carries it, or, after "-", why it need not be
// (derived from what is carried, a cache rebuilt, scratch, an epoch
// compared only within one Scheduler). TestConcernFieldsListed fails for
// a field added to a concern and not listed here, so a new concern
// decides where its state goes.
var concernFields = map[string]string{
	"cfg":     "-the settings: TestEveryConfigSettingCarried (and Scheduler.Config)",
	"c":       "Config.Cluster",
	"tree":    "Config.Queues", // and State.Usage
	"ledger":  "State.Health",  // placements are the jobs'; cordons State.Cordoned
	"placer":  "Config.Placer",
	"tracker": "-the placer's",
	"now":     "State.Now",

	"jobs.byID":   "State.Jobs",
	"jobs.ends":   "-an index of the jobs",
	"jobs.onHost": "-an index of the jobs",
	"jobs.seq":    "-numbered afresh in the state's order of submission (Scheduler.Submissions)",
	"jobs.seed":   "Config.Seed",

	"adm.c": "-the cluster", "adm.tree": "-the tree", "adm.vec": "-scratch", "adm.empty": "-derived from the cluster",
	"adm.idleFail": "-a cache", "adm.checked": "-a cache", "adm.charged": "-scratch",

	"fit.byKey": "-a cache: placement failures are rebuilt (Limits)", "fit.gains": "-with byKey",

	"res.c": "-the cluster", "res.placer": "-the placer", "res.defaultRuntime": "Config.DefaultRuntime",
	"res.max": "Config.MaxReservations", "res.wholeHosts": "Config.ReserveWholeHosts",
	"res.holds": "-made each cycle", "res.byJob": "-made each cycle (the kept ones are res.kept)",
	"res.kept": "State.Reservations", "res.keptSpare": "-scratch", "res.shadowPool": "-scratch",
	"res.occPool": "-scratch", "res.wi": "-rebuilt from the live state (Reservation.Built)",
	"res.healthEpoch": "-an epoch", "res.shadowScr": "-scratch", "res.shortScr": "-scratch",

	"noms.list": "State.Nominations", "noms.drops": "-an epoch", "noms.changes": "-an epoch", "noms.holdEpochs": "-an epoch",

	"victims.roster": "-derived from the jobs", "victims.noRoster": "-derived from the Preemptor",
	"victims.fresh": "State.Fresh", "victims.stopping": "State.Stopping", "victims.elig": "NoPlan.Eligible",
	"victims.stops": "-an epoch",

	"rec.faults": "RecoveryState.Faults",

	"cyc.n": "-the last cycle's", "cyc.leaves": "-the last cycle's", "cyc.admitsNow": "-the last cycle's",
	"hosts.byJob":  "-functions the host sets again after a restart (SetHostFilter)",
	"hosts.groups": "-functions the host sets again after a restart (SetHostFilter's Group)",
	"cyc.groups":   "-a read-only view of hosts.groups for the cycle",
	"cyc.buf":      "-scratch", "cyc.req": "-scratch", "cyc.explained": "-the last cycle's", "cyc.list": "-the last cycle's",

	"admits.timeout": "Config.AdmitTimeout", "admits.waiting": "RestoredJob.Admitted",

	"live.draining": "State.Leaving",

	"dfg.cfg": "Config.Defrag", "dfg.search": "-derived from the settings", "dfg.placer": "-the placer",
	"dfg.log": "DefragState.Issued", "dfg.moving": "DefragState.Moving", "dfg.order": "DefragState.Moving",
	"dfg.held": "-derived from the migrations", "dfg.moves": "DefragState.Moves", "dfg.failed": "-a cache: holds for its instant only (Limits)",

	"elastic.cfg": "Config.Elastic", "elastic.resized": "State.Resizes",

	"cons.cfg": "DefragConfig.Consolidate", "cons.log": "ConsolidateState.Issued", "cons.busy": "ConsolidateState.Busy",
	"cons.failed": "ConsolidateState.NothingFound", "cons.failedGen": "-an epoch", "cons.failedRoom": "ConsolidateState.FoundMoves",

	"refused.list": "State.Refusals", "refused.count": "-an epoch",

	"around.on": "Config.BackfillAround", "around.scratch": "-scratch", "around.buf": "-scratch", "around.held": "-scratch",

	"deep.depth": "Config.ReserveDepth", "deep.buf": "-scratch", "deep.pieces": "-scratch", "deep.ends": "-scratch",

	"cb.depth":       "-the callbacks running now: none between calls",
	"stats.refusals": "-an epoch (the refusals' count at the last cycle)",
	"stats.leaves":   "-a cache (each leaf's waiting shapes' needs at its version)",

	"ended.max": "Config.MaxTombstones", "ended.ring": "State.Tombstones",
	"ended.next": "-the ring's oldest slot, rebuilt by restoring in order", "ended.byID": "-an index of the ring",

	"testBeforeCycle": "-tests",

	"job.reason": "-the last cycle's explanation", "job.reasonCycle": "-the last cycle's",
	"job.state": "RestoredJob.State", "job.entry": "RestoredJob.Submitted", "job.spec": "RestoredJob.Spec",
	"job.req": "-derived from the spec", "job.leaf": "-the spec's queue", "job.shape": "-derived from the spec",
	"job.demand": "-derived from the spec", "job.placement": "RestoredJob.Tasks", "job.txn": "-the placer's, made again on restore",
	"job.charged": "-derived from the placement", "job.hosts": "-derived from the placement", "job.hostOne": "-derived from the placement (hosts' array)",
	"job.admitted": "RestoredJob.Admitted", "job.started": "RestoredJob.Started", "job.end": "-derived from Started and the runtime",
	"job.endKnown": "-derived from the runtime", "job.preemptions": "RestoredJob.Preemptions",
	"job.models.allow": "-a cache", "job.models.guar": "-a cache", "job.models.allowFn": "-a cache", "job.models.guarFn": "-a cache",
	"job.models.last": "-the last check's, made again by the next cycle",
	"job.vic.pj":      "-the planner's view, derived", "job.vic.indexed": "-derived", "job.vic.listed": "-derived",
	"job.vic.prio": "-derived", "job.vic.preempting": "-derived from the nominations, migrations and stopping victims",
	"job.nom.nominated": "State.Nominations", "job.nom.waitingFor": "Nomination.Victims",
	"job.rec.checkpoint": "RestoredJob.Checkpoint", "job.rec.progress": "RestoredJob.Progress", "job.rec.restarts": "RestoredJob.Restarts",
	"job.rec.recovering": "RecoveryState.InFlight", "job.rec.action": "RecoveryInFlight.Action",
	"job.el.p": "RestoredJob.Tasks", "job.el.orig": "Resize.Size", "job.el.shrink": "Resize.Shrink",
	"job.el.shrinkFor": "Resize.For", "job.el.shrinkGrace": "Resize.Grace", "job.el.shrinkAt": "-the state's time (RestoreResize)",
	"job.el.grow":   "Resize.Grow",
	"job.noPlan.ok": "State.NoPlans", "job.noPlan.gen": "-an epoch", "job.noPlan.eligSeq": "-an epoch",
	"job.noPlan.epoch": "-an epoch", "job.noPlan.drops": "-an epoch", "job.noPlan.commits": "-an epoch",
	"job.noPlan.until": "NoPlan.Until", "job.noPlan.prio": "NoPlan.Priority", "job.noPlan.queues": "NoPlan.Quotas",
	"job.noPlan.exact": "NoPlan.Exact", "job.noPlan.gained": "NoPlan.Gained", "job.noPlan.eligible": "NoPlan.Eligible",
	"job.ref.until": "Refusal.Until", "job.ref.run": "Refusal.Run", "job.ref.reason": "Refusal.Reason", "job.ref.blocked": "Refusal.Blocked",
}

// schedulerFields lists the fields of the Scheduler's concerns and of a
// job's state as concernFields names them: a field of an unexported
// struct type of package gpusched is listed field by field.
func schedulerFields() []string {
	st := reflect.TypeFor[gpusched.Scheduler]()
	concern := func(t reflect.Type) bool {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		name := t.Name()
		return t.Kind() == reflect.Struct && t.PkgPath() == st.PkgPath() && name != "" && name[0] >= 'a' && name[0] <= 'z'
	}
	var out []string
	fields := func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !concern(f.Type) {
				out = append(out, prefix+f.Name)
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k := range ft.NumField() {
				out = append(out, prefix+f.Name+"."+ft.Field(k).Name)
			}
		}
	}
	fields("", st)
	jobs, _ := st.FieldByName("jobs")
	byID, _ := jobs.Type.FieldByName("byID")
	fields("job.", byID.Type.Elem().Elem())
	return out
}

// TestConcernFieldsListed: every field of every concern (and of a job's
// state) says where the Scheduler's state carries it (concernFields),
// every entry is a field that exists, and every place named is a field of
// gpusched.State's types, which TestEveryConcernStateCarried checks are
// carried.
func TestConcernFieldsListed(t *testing.T) {
	known := map[string]bool{}
	stateFields(reflect.ValueOf(&gpusched.State{}).Elem(), func(f string, _ bool) { known[f] = true })
	seen := map[string]bool{}
	for _, f := range schedulerFields() {
		seen[f] = true
		where, ok := concernFields[f]
		switch {
		case !ok:
			t.Errorf("%s: a concern's field the state does not say it carries: add it to gpusched.State (its concern's save and restore) and to concernFields, or say in concernFields why it need not be", f)
		case !strings.HasPrefix(where, "-") && !known[where]:
			t.Errorf("%s: carried by %s, which is no field of the state's types", f, where)
		}
	}
	for f := range concernFields {
		if !seen[f] {
			t.Errorf("concernFields lists %s, which no concern has", f)
		}
	}
}
