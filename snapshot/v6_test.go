package snapshot

import (
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// tinyV6 is a small state with every part version 6 added: consolidation
// when idle with its state (log, last wait, "nothing found" memo), the
// eviction retry, a refused stop in force with the job whose plan it
// broke, the other victim of that plan still stopping (and admitted in
// the last cycle), and a placement domain.
const tinyV6 = "now: 2025-01-01T10:00:00Z\n" + tinyCluster + `queues: {root: {children: [{name: a}]}}
defrag: {after: 10m, perHour: 2, consolidate: {levels: [tor], idle: 30m, perHour: 1, target: 1, maxDomains: 2}}
consolidation: {log: [{at: 2025-01-01T09:30:00Z, lost: 1000}], busy: 2025-01-01T09:40:00Z, nothingFound: true, foundMoves: 1}
evictionRetry: 20m
cordoned: [h2]
jobs:
- {id: r, queue: a, groups: [{count: 1, gpus: 1}], submitted: 2025-01-01T09:00:00Z, state: running, started: 2025-01-01T09:00:00Z, domain: h1, placement: [{host: h1, gpus: [1]}]}
- {id: v, queue: a, groups: [{count: 1, gpus: 1}], submitted: 2025-01-01T09:00:00Z, state: running, started: 2025-01-01T09:00:00Z, placement: [{host: h1, gpus: [0]}]}
- {id: p, queue: a, priority: 1, groups: [{count: 1, gpus: 2}], submitted: 2025-01-01T09:20:00Z}
stopping: [v]
fresh: [v]
refusals: [{victim: r, run: 2025-01-01T09:00:00Z, until: 2025-01-01T10:15:00Z, reason: pdb, blocked: [p]}]
`

// TestV6Loads: every part of a version 6 state is restored, and what is
// restored is what Capture writes back.
func TestV6Loads(t *testing.T) {
	l, err := Load([]byte(tinyV6), "tiny", Options{NoPreemption: true, MaxHosts: 8})
	if err != nil {
		t.Fatal(err)
	}
	s := l.Scheduler
	cs := s.ConsolidateState()
	if len(cs.Issued) != 1 || !cs.Busy.Equal(time.Date(2025, 1, 1, 9, 40, 0, 0, time.UTC)) || !cs.NothingFound || cs.FoundMoves != 1 {
		t.Fatalf("consolidation state %+v", cs)
	}
	rs := s.Refusals()
	if len(rs) != 1 || rs[0].Victim != "r" || rs[0].Reason != "pdb" || len(rs[0].Blocked) != 1 {
		t.Fatalf("refusals %+v", rs)
	}
	if st := s.Stopping([]string{"r", "v", "p"}); len(st) != 1 || st[0] != "v" {
		t.Fatalf("stopping %v, want [v]", st)
	}
	if f := s.Fresh([]string{"r", "v", "p"}); len(f) != 1 || f[0] != "v" {
		t.Fatalf("fresh %v, want [v]", f)
	}
	if js, _ := s.Job("r"); js.Placement == nil || l.Cluster.DomainName(js.Placement.Domain) != "h1" {
		t.Fatalf("placement domain of r: %+v", js.Placement)
	}
	// The job whose plan the refusal broke says so while it waits.
	d := s.Schedule(l.State.Now)
	found := false
	for _, p := range d.Pending {
		if p.Job == "p" && p.Reason != nil && strings.Contains(p.Reason.Detail, "eviction of r refused (pdb)") {
			found = true
		}
	}
	if !found {
		t.Errorf("p's reason does not name the refusal:\n%s", d.Format(l.Cluster))
	}
	cfg := gpusched.Config{Queues: l.State.Queues, EvictionRetry: 20 * time.Minute,
		Defrag: &gpusched.DefragConfig{After: 10 * time.Minute, Consolidate: &gpusched.ConsolidateConfig{}}}
	cfg.Defrag.Consolidate.Levels = []topology.Level{mustLevel(t, l, "tor")}
	st, err := Capture(s, l.State.Now, CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != Version || st.EvictionRetry != 20*time.Minute || len(st.Refusals) != 1 || st.Refusals[0].Until != l.State.Refusals[0].Until ||
		st.Consolidation == nil || len(st.Consolidation.Log) != 1 || st.Defrag.Consolidate == nil || st.Defrag.Consolidate.Levels[0] != "tor" || st.Jobs[0].Domain != "h1" || len(st.Stopping) != 1 {
		t.Fatalf("captured %+v", st)
	}
}

// TestV6BadStates: bad version 6 parts are *Errors naming the field.
func TestV6BadStates(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"levels: [tor]", "levels: [rack]", `defrag.consolidate.levels[0]: cluster t has no level "rack"`},
		{"idle: 30m", "idle: -30m", "Consolidate.Idle: negative"},
		{"busy: 2025-01-01T09:40:00Z", "busy: 2025-01-01T11:40:00Z", "consolidation: gpusched: RestoreConsolidate: busy"},
		{"foundMoves: 1", "foundMoves: -1", "consolidation: gpusched: RestoreConsolidate: foundMoves: negative"},
		{"{at: 2025-01-01T09:30:00Z, lost: 1000}", "{lost: 1000}", "consolidation.log[0].at: missing"},
		{"{victim: r,", "{victim: x,", `refusals[0].victim: no job "x" in the state`},
		{"run: 2025-01-01T09:00:00Z, until", "until", "refusals[0].run: missing"},
		{", until: 2025-01-01T10:15:00Z", "", "refusals[0].until: missing"},
		{"run: 2025-01-01T09:00:00Z, until", "run: 2025-01-01T11:00:00Z, until", "refusals[0].run: 2025-01-01T11:00:00Z is after now"},
		{"stopping: [v]", "stopping: [p]", "stopping[0]: job p: gpusched: event does not apply in the job's state: RestoreStopping: a pending job holds nothing to stop"},
		{"fresh: [v]", "fresh: [p]", "fresh[0]: job p: gpusched: event does not apply in the job's state: RestoreFresh: a pending job holds nothing"},
		{"stopping: [v]", "stopping: [x]", `stopping[0]: no job "x" in the state`},
		{"domain: h1", "domain: h2", "jobs[0].domain: GPU h1/gpu1 is not in h2"},
		{"domain: h1", "domain: nowhere", `jobs[0].domain: "nowhere" is not a placement domain`},
	} {
		data := strings.Replace(tinyV6, tc.old, tc.new, 1)
		if data == tinyV6 {
			t.Fatalf("%q not in the state", tc.old)
		}
		_, err := Load([]byte(data), "v6.yaml", Options{NoPreemption: true, MaxHosts: 8})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: got %v, want %q", tc.old, tc.new, err, tc.want)
		}
	}
	// A consolidation state needs consolidation on.
	data := strings.Replace(tinyV6, ", consolidate: {levels: [tor], idle: 30m, perHour: 1, target: 1, maxDomains: 2}", "", 1)
	if _, err := Load([]byte(data), "v6.yaml", Options{NoPreemption: true, MaxHosts: 8}); err == nil || !strings.Contains(err.Error(), "consolidation: a consolidation state needs defrag.consolidate") {
		t.Errorf("got %v", err)
	}
}

func mustLevel(t *testing.T, l *Loaded, name string) topology.Level {
	lv, ok := l.Cluster.LevelByName(name)
	if !ok {
		t.Fatalf("no level %s", name)
	}
	return lv
}
