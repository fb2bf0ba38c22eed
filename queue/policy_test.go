package queue_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/gpusched/gpusched/queue"
)

// TestPolicies runs the scripts in testdata/policies: the job-ordering
// and demotion policies on instances small enough to check by hand.
// Regenerate with `go test -run TestPolicies -rewrite`.
//
//	order [ordering=O] [queues=N]  body: one job a line, "id queue=Q
//	                       prio=P runtime=DUR at=DUR"; prints the order in
//	                       which a cycle offers them (Tree.Next)
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
	for _, a := range td.CmdArgs {
		switch a.Key {
		case "ordering":
			ord = queue.Ordering(a.Vals[0])
		case "queues":
			queues, _ = strconv.Atoi(a.Vals[0])
		}
	}
	cfg := queue.Config{Root: queue.Node{Name: "cluster"}, Fairness: queue.Fairness{Policy: queue.NoFairness}}
	for k := range queues {
		cfg.Root.Children = append(cfg.Root.Children, queue.Node{Name: fmt.Sprintf("q%d", k), Policy: queue.Policy{Ordering: ord}})
	}
	tree, err := queue.Build(cfg, queue.Capacity{})
	if err != nil {
		return err.Error()
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		f := strings.Fields(line)
		e := &queue.Entry{ID: f[0], Seq: uint64(i + 1), Class: f[0]}
		q := "q0"
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
			}
		}
		l, ok := tree.Leaf(q)
		if !ok {
			t.Fatalf("%s: no queue %s", td.Pos, q)
		}
		l.Add(e)
	}
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
