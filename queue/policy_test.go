package queue_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/queue"
)

// TestPolicies runs the scripts in testdata/policies: the job-ordering
// and demotion policies on instances small enough to check by hand.
// Regenerate with `go test -run TestPolicies -rewrite`.
//
//	order [ordering=O] [queues=N] [fairness=F gpus=G now=DUR weights=(W,…)]
//	                       body: one job a line, "id queue=Q prio=P
//	                       runtime=DUR at=DUR gpus=N [held]"; a held job is
//	                       charged to its queue as admitted, not queued;
//	                       prints the order in which a cycle at now offers
//	                       the others (Tree.Next) on a cluster of G GPUs
//	las thresholds=(GPU-SECONDS,…) | slice lease=DUR
//	level gpus=G ran=DUR   the level of such a job under the last policy,
//	                       its priority from base 0, and its next change
func TestPolicies(t *testing.T) {
	datadriven.Walk(t, "testdata/policies", func(t *testing.T, path string) {
		var d queue.Demotion
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "order":
				return runOrder(t, td)
			case "las":
				var l queue.LAS
				for _, v := range argVals(t, td, "thresholds") {
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						t.Fatal(err)
					}
					l.Thresholds = append(l.Thresholds, f)
				}
				if err := l.Validate(); err != nil {
					return err.Error()
				}
				d = l
				return "ok"
			case "slice":
				s := queue.TimeSlice{Lease: dur(t, argVals(t, td, "lease")[0])}
				if err := s.Validate(); err != nil {
					return err.Error()
				}
				d = s
				return "ok"
			case "level":
				g, err := strconv.ParseFloat(argVals(t, td, "gpus")[0], 64)
				if err != nil {
					t.Fatal(err)
				}
				ran := dur(t, argVals(t, td, "ran")[0])
				lv := d.Level(g, ran)
				next, ok := d.NextChange(g, ran)
				ns := "never"
				if ok {
					ns = "in " + next.String()
					if d.Level(g, ran+next) == lv || d.Level(g, ran+next-1) != lv {
						t.Errorf("%s: NextChange %v is not the first change", td.Pos, next)
					}
				}
				return fmt.Sprintf("level %d, priority %d, next change %s", lv, queue.DemotedPriority(0, lv), ns)
			}
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
			return ""
		})
	})
}

func argVals(t *testing.T, td *datadriven.TestData, key string) []string {
	t.Helper()
	for _, a := range td.CmdArgs {
		if a.Key == key {
			return a.Vals
		}
	}
	t.Fatalf("%s: %s needs %s=", td.Pos, td.Cmd, key)
	return nil
}

func dur(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func runOrder(t *testing.T, td *datadriven.TestData) string {
	ord := queue.Ordering("")
	queues := 1
	fair := queue.NoFairness
	var capGPUs int64
	var now time.Duration
	var weights []string
	for _, a := range td.CmdArgs {
		switch a.Key {
		case "ordering":
			ord = queue.Ordering(a.Vals[0])
		case "queues":
			queues, _ = strconv.Atoi(a.Vals[0])
		case "fairness":
			fair = queue.FairPolicy(a.Vals[0])
		case "gpus":
			capGPUs, _ = strconv.ParseInt(a.Vals[0], 10, 64)
		case "now":
			now = dur(t, a.Vals[0])
		case "weights":
			weights = a.Vals
		}
	}
	cfg := queue.Config{Root: queue.Node{Name: "cluster"}, Fairness: queue.Fairness{Policy: fair}}
	for k := range queues {
		n := queue.Node{Name: fmt.Sprintf("q%d", k), Policy: queue.Policy{Ordering: ord}}
		if k < len(weights) {
			n.Weight, _ = strconv.ParseFloat(weights[k], 64)
		}
		cfg.Root.Children = append(cfg.Root.Children, n)
	}
	var capacity queue.Capacity
	capacity.Resources.GPUMilli = capGPUs * 1000
	tree, err := queue.Build(cfg, capacity)
	if err != nil {
		return err.Error()
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		f := strings.Fields(line)
		e := &queue.Entry{ID: f[0], Seq: uint64(i + 1), Class: f[0], Demand: make(queue.Vector, tree.Dimensions().Len()), Submitted: t0}
		q := "q0"
		held := false
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "queue":
				q = v
			case "prio":
				p, _ := strconv.Atoi(v)
				e.Priority = int32(p)
			case "runtime":
				e.Runtime = dur(t, v)
			case "at":
				e.Submitted = t0.Add(dur(t, v))
			case "gpus":
				g, _ := strconv.ParseInt(v, 10, 64)
				e.Demand[fairshare.DimGPU] = g * 1000
			case "held":
				held = true
			}
		}
		l, ok := tree.Leaf(q)
		if !ok {
			t.Fatalf("%s: no queue %s", td.Pos, q)
		}
		if held {
			tree.Admit(l.ID(), e.Demand, t0)
			continue
		}
		l.Add(e)
	}
	tree.Advance(t0.Add(now))
	curs := map[*queue.Leaf]*queue.Cursor{}
	for _, id := range tree.Leaves() {
		l := tree.LeafOf(id)
		curs[l] = l.Begin()
	}
	var out []string
	for {
		l, e, ok := tree.Next()
		if !ok {
			break
		}
		out = append(out, e.ID)
		curs[l].Advance()
	}
	return strings.Join(out, " ")
}
