package simcli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/snapshot"
	"github.com/gpusched/gpusched/topology"
)

// observed is a run's Scheduler that records its decisions at chosen
// times: the simulator's Decision, and the root Scheduler's reason for
// every waiting job right after the cycle.
type observed struct {
	*rootsched.Scheduler
	at  map[time.Duration]bool
	got map[time.Duration]decided
}

type decided struct {
	d       sim.Decision
	reasons []string // "job: reason" per pending job, in order
	ledger  string   // ledgerText before the cycle
}

// ledgerText renders what a ledger holds: every GPU's use and health,
// every host's free CPU and memory and health.
func ledgerText(c *topology.Cluster, l topology.LedgerReader) string {
	var b strings.Builder
	for g := 0; g < c.NumGPUs(); g++ {
		fmt.Fprintf(&b, "%+v ", l.GPU(topology.GPUID(g)))
	}
	for h := 0; h < c.NumHosts(); h++ {
		id := topology.HostID(h)
		fmt.Fprintf(&b, "%d/%d/%v ", l.CPUFree(id), l.MemoryFree(id), l.HostHealth(id))
	}
	return b.String()
}

func (o *observed) Schedule(now time.Duration) sim.Decision {
	var before string
	if o.at[now] {
		before = ledgerText(o.S.Cluster(), o.S.Ledger())
	}
	d := o.Scheduler.Schedule(now)
	if o.at[now] {
		if _, dup := o.got[now]; !dup {
			var rs []string
			for _, p := range d.Pending {
				js, _ := o.S.Job(p.Job)
				rs = append(rs, fmt.Sprintf("%s (%s): %s", p.Job, js.State, js.Reason))
			}
			o.got[now] = decided{d: d, reasons: rs, ledger: before}
		}
	}
	return d
}

// claimsText renders claims as host[gpus] per task.
func claimsText(c *topology.Cluster, claims []topology.Claim) string {
	var parts []string
	for _, cl := range claims {
		first, _ := c.HostGPUs(cl.Host)
		var idx []string
		for _, g := range cl.GPUs {
			idx = append(idx, fmt.Sprint(int(g.GPU-first)))
		}
		parts = append(parts, c.HostName(cl.Host)+"["+strings.Join(idx, ",")+"]")
	}
	return strings.Join(parts, " ")
}

// smallCluster writes a cluster file of 8 DGX H100 hosts, 4 to a ToR.
func smallCluster(t *testing.T) string {
	sp, err := topology.Generator{Machine: "dgx-h100", Hosts: 8, HostsPerToR: 4}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	data, err := topology.Marshal(sp, topology.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// placerClasses are the simulator's classes of reasons that come from the
// placer's explanation.
var placerClasses = map[sim.Reason]bool{sim.ReasonCapacity: true, sim.ReasonFragmentation: true, sim.ReasonTopology: true, sim.ReasonModel: true}

// sameHead reports whether a behind-head reason names the head and queue
// that the simulated Scheduler's (text: "JOB (STATE): behind-head: behind HEAD in
// strict FIFO queue Q (CAUSE)") names, and both causes are the placer's.
func sameHead(r *gpusched.Reason, text string) bool {
	_, live, _ := strings.Cut(text, "): ")
	cut := func(s string) (string, string) {
		i := strings.LastIndex(s, " (")
		if i < 0 {
			return s, ""
		}
		return s[:i], strings.TrimSuffix(s[i+2:], ")")
	}
	a, ca := cut(r.String())
	b, cb := cut(live)
	placer := map[string]bool{"capacity": true, "fragmentation": true, "topology": true, "too-large": true}
	return a == b && placer[ca] && placer[cb]
}

// TestSaveStateExplains is the end-to-end check of --save-state: on a
// small synthetic trace that keeps an 8-host cluster queued, the state
// saved at each of several times, loaded as `gpusched explain` loads it
// and scheduled at its time, decides what the simulated Scheduler decided
// in its cycle then: the same bindings on the same GPUs, the same waiting
// jobs in the same order, and for each the same reason, word for word as
// the root Scheduler gave it and as the class the simulator's
// Decision.Pending records — except the placer's explanations (capacity,
// fragmentation, topology), where the loaded Scheduler explains on the
// state's free GPUs and the simulated one may repeat an explanation it
// cached in an earlier cycle, with that cycle's free GPUs: both must
// then be such explanations.
func TestSaveStateExplains(t *testing.T) {
	cluster := smallCluster(t)
	var ats []time.Duration
	var args []string
	for m := 30; m <= 8*60; m += 30 {
		ats = append(ats, time.Duration(m)*time.Minute)
		args = append(args, "--save-state", fmt.Sprintf("%dm", m))
	}
	for _, tc := range []struct {
		name string
		args []string
		// kept: the queues backfill, and the Scheduler keeps each
		// reservation from cycle to cycle (never moving it later) where a
		// loaded one reserves afresh: only the saved state itself, not
		// the decision, is compared.
		kept bool
	}{
		{"fifo", nil, false},
		{"priorities", []string{"--high-priority-share", "0.3"}, false},
		{"strict", []string{"--ordering", "strict-fifo", "--queues", "single"}, false},
		{"backfill", []string{"--backfill", "--runtime-estimate", "1.2"}, true},
		{"failures", []string{"--host-mtbf", "20h", "--ckpt-interval", "20m", "--repair-time", "2h", "--drain-every", "3h", "--drain-for", "1h"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ob := &observed{at: map[time.Duration]bool{}, got: map[time.Duration]decided{}}
			for _, at := range ats {
				ob.at[at] = true
			}
			testWrap = func(s *rootsched.Scheduler) sim.Scheduler { ob.Scheduler = s; return ob }
			defer func() { testWrap = nil }()
			dir := t.TempDir()
			run := append([]string{"run", "--file", cluster, "--trace", "synthetic:400", "--load", "1.6", "--seed", "3",
				// A cycle every 30 minutes, so that one runs at every
				// saved time.
				"--schedule-every", "30m", "--quiet", "--no-plots", "--no-jobs-csv", "--out", dir}, append(args, tc.args...)...)
			out, errs, err := execCmd(t, Options{}, run...)
			if err != nil {
				t.Fatalf("%v\n%s", err, errs)
			}
			var waiting, exact, placer int
			for _, at := range ats {
				name := filepath.Join(dir, stateFileName(at))
				if !strings.Contains(out, "saved the Scheduler's state: "+name) {
					t.Errorf("output does not name %s:\n%s", name, out)
				}
				data, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				live, ok := ob.got[at]
				if !ok {
					t.Fatalf("no cycle at %v", at)
				}
				// As gpusched explain loads it, twice: once to read the
				// root Scheduler's decision, once through rootsched for
				// the simulator's classes.
				l, err := snapshot.Load(data, name, snapshot.Options{NoPreemption: true, Dir: dir})
				if err != nil {
					t.Fatal(err)
				}
				l2, err := snapshot.Load(data, name, snapshot.Options{NoPreemption: true, Dir: dir})
				if err != nil {
					t.Fatal(err)
				}
				// The state holds every claim and health of the ledger
				// the cycle saw.
				if got := ledgerText(l.Cluster, l.Scheduler.Ledger()); got != live.ledger {
					t.Errorf("%v: the saved state's ledger differs from the one the cycle saw", at)
				}
				d := l.Scheduler.Schedule(rootsched.Epoch.Add(at))
				sd := rootsched.Wrap(l2.Scheduler).Schedule(at)
				if tc.kept {
					if len(d.Bindings) != len(live.d.Bindings) {
						t.Logf("%v: the saved state starts %d jobs, the simulated Scheduler %d (reservations it kept)", at, len(d.Bindings), len(live.d.Bindings))
					}
					continue
				}
				var want, got []string
				for _, b := range live.d.Bindings {
					want = append(want, "bind "+b.Job+" "+claimsText(l.Cluster, b.Claims))
				}
				for _, b := range d.Bindings {
					got = append(got, "bind "+b.Job+" "+claimsText(l.Cluster, b.Placement.Claims))
				}
				if !slices.Equal(got, want) {
					t.Errorf("%v: the saved state starts\n  %s\nthe simulated Scheduler started\n  %s", at, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
				}
				if len(d.Pending) != len(live.d.Pending) || len(sd.Pending) != len(live.d.Pending) {
					t.Errorf("%v: %d and %d waiting, the simulated Scheduler %d", at, len(d.Pending), len(sd.Pending), len(live.d.Pending))
					continue
				}
				waiting += len(d.Pending)
				for i, p := range d.Pending {
					lp, class := live.d.Pending[i], sd.Pending[i].Reason
					text := fmt.Sprintf("%s (%s): %s", p.Job, l.States[p.Job], p.Reason)
					switch {
					case p.Job != lp.Job || sd.Pending[i].Job != lp.Job:
						t.Errorf("%v: waiting job %d is %s, the simulated Scheduler's %s", at, i, p.Job, lp.Job)
					case text == live.reasons[i] && class == lp.Reason:
						exact++
					case placerClasses[class] && placerClasses[lp.Reason]:
						placer++
					case class == sim.ReasonBehindHead && lp.Reason == class && sameHead(p.Reason, live.reasons[i]):
						placer++ // behind a head whose placer explanation was cached
					default:
						t.Errorf("%v: %s (%s); the simulated Scheduler: %s (%s)", at, text, class, live.reasons[i], lp.Reason)
					}
				}
			}
			if tc.kept {
				return
			}
			t.Logf("%d waiting jobs: %d reasons word for word, %d that differ in the placer's explanation only", waiting, exact, placer)
			if waiting < 20 || exact == 0 {
				t.Errorf("%d waiting jobs, %d reasons word for word: the trace does not exercise the states", waiting, exact)
			}
		})
	}
}
