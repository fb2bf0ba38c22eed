package gpusched_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// message is an event as a service receives it from its hosts: possibly
// late, twice, or stamped by a wrong clock.
type message struct {
	kind, job string
	at        time.Time
}

// bind is where a service starts a binding's tasks on its hosts.
func bind(gpusched.Binding) {}

// apply hands one message to the Scheduler and says what to do with it:
// "done" (ack it), "duplicate" (ack it: it was applied before), or
// "refused: …" (a wrong clock, an unknown job: log it, ack it, alert).
func apply(x *gpusched.Synchronized, m message) string {
	var err error
	switch m.kind {
	case "started":
		err = x.Started(m.job, m.at)
	case "finished":
		err = x.Finished(m.job, m.at)
	case "checkpointed":
		err = x.Checkpointed(m.job, m.at, m.at)
	case "submit":
		err = x.Submit(workload.Job{ID: m.job, Queue: "train", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}, m.at)
	}
	switch {
	case err == nil:
		return "done"
	case errors.Is(err, gpusched.ErrAlreadyApplied):
		return "duplicate"
	case errors.Is(err, gpusched.ErrClockSkew):
		return "refused: wrong clock"
	case errors.Is(err, gpusched.ErrTimeBackwards):
		return "refused: late"
	default:
		return "refused: " + err.Error()
	}
}

// A service that shares one Scheduler between its goroutines (Synchronize)
// and applies messages from its hosts that may come twice or from a wrong
// clock (docs/embedding.md).
func Example_service() {
	cluster, _ := topology.LoadPreset("dgx-h100") // one host, 8 GPUs
	s, err := gpusched.New(gpusched.Config{
		Cluster:      cluster,
		Queues:       queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "train"}}}},
		MaxClockSkew: time.Hour, // events more than an hour ahead of Now() are refused
	})
	if err != nil {
		panic(err)
	}
	x := gpusched.Synchronize(s) // handlers and the loop may now call it from any goroutine
	t := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)

	fmt.Println("submit a:", apply(x, message{"submit", "a", t}))
	fmt.Println("submit b:", apply(x, message{"submit", "b", t}))
	d := x.Schedule(t) // the loop: one cycle, a Decision the caller owns
	for _, b := range d.Bindings {
		bind(b) // then report it
		fmt.Println("bind", b.Job, "then started:", apply(x, message{"started", b.Job, t}))
	}
	later := t.Add(10 * time.Minute)
	for _, m := range []message{
		{"started", "a", t},                       // redelivered
		{"checkpointed", "a", later},              // a real checkpoint
		{"checkpointed", "a", t.AddDate(1, 0, 0)}, // a host whose clock is a year ahead
		{"finished", "a", later},
		{"finished", "a", later}, // redelivered
		{"submit", "a", later},   // redelivered: a finished job does not come back
		{"finished", "zz", later},
	} {
		fmt.Printf("%s %s: %s\n", m.kind, m.job, apply(x, m))
	}
	// Holding's fn runs outside the lock: it may report events.
	x.Holding(func(id string, st gpusched.JobStatus) bool {
		fmt.Println("cancel", id, "from Holding:", x.Cancel(id, later)) // fine: the Synchronized is not locked here
		return true
	})
	fmt.Println("live jobs:", x.Len(), "remembered ended:", len(x.Tombstones()))
	// Output:
	// submit a: done
	// submit b: done
	// bind a then started: done
	// bind b then started: done
	// started a: duplicate
	// checkpointed a: done
	// checkpointed a: refused: wrong clock
	// finished a: done
	// finished a: duplicate
	// submit a: duplicate
	// finished zz: refused: job zz: gpusched: unknown job
	// cancel b from Holding: <nil>
	// live jobs: 0 remembered ended: 2
}

// TestEmbeddingDocExcerpts: every Go block of docs/embedding.md is an
// excerpt of this file, which go test runs (Example_service): its lines,
// but for "…" (lines skipped), appear here in the same order, so the
// page cannot show code that no longer compiles or says what it does not.
func TestEmbeddingDocExcerpts(t *testing.T) {
	doc, err := os.ReadFile("docs/embedding.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("embedding_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var code []string
	for _, l := range strings.Split(string(src), "\n") {
		code = append(code, strings.TrimSpace(l))
	}
	blocks := strings.Split(string(doc), "```go\n")[1:]
	if len(blocks) == 0 {
		t.Fatal("docs/embedding.md has no Go block")
	}
	for i, b := range blocks {
		b, _, _ = strings.Cut(b, "```")
		at := 0
		for _, l := range strings.Split(b, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || l == "…" {
				continue
			}
			for at < len(code) && code[at] != l {
				at++
			}
			if at == len(code) {
				t.Errorf("docs/embedding.md, Go block %d: %q is not in embedding_example_test.go (in this order)", i+1, l)
				break
			}
			at++
		}
	}
}
