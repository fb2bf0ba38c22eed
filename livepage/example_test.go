package livepage_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/livepage"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// An embedder shows its Scheduler after each cycle: Build reads it (with
// Config.Stats set, the page marks stranded GPUs), WriteHTML draws the
// page and Handler serves it with its JSON. Here one DGX H100 runs a
// 6-GPU job; a 4-GPU job waits for capacity, so the 2 free GPUs are
// stranded.
func Example() {
	cluster, _ := topology.LoadPreset("dgx-h100") // one host, 8 GPUs
	s, err := gpusched.New(gpusched.Config{Cluster: cluster, Stats: true,
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "train"}}}}})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	submit := func(id string, gpus int) {
		if err := s.Submit(workload.Job{ID: id, Queue: "train", Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus}}}, now); err != nil {
			panic(err)
		}
	}
	submit("pretrain", 6)
	for _, b := range s.Schedule(now).Bindings {
		_ = s.Started(b.Job, now)
	}
	now = now.Add(time.Minute)
	submit("eval", 4)
	d := s.Schedule(now)

	page := livepage.Build(s, livepage.FromDecision(&d), livepage.Options{Title: "example"})
	for _, q := range page.Queues {
		fmt.Printf("queue %s: %d running, %d pending, %v GPUs used\n", q.Name, q.Running, q.Pending, q.Used)
	}
	for _, w := range page.Pending {
		fmt.Printf("waiting %s: %s\n", w.Job, w.Reason)
	}
	h := page.Cluster.Hosts[0]
	fmt.Printf("host %s: marks %s, %d free, %d stranded\n", h.Name, h.Marks, h.Free, h.Stranded)

	// Serve it (an embedder listens on its own port; see gpusched serve).
	srv := httptest.NewServer(livepage.Handler(func() *livepage.Page { return page }))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/state.json")
	if err != nil {
		panic(err)
	}
	var got livepage.Page
	_ = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	fmt.Println("state.json:", got.PendingTotal, "waiting,", got.Cluster.Free, "free GPUs")
	var html strings.Builder
	_ = page.WriteHTML(&html)
	fmt.Println(strings.Count(html.String(), `class="host"`), "host cell")
	// Output:
	// queue cluster: 1 running, 1 pending, 6 GPUs used
	// queue train: 1 running, 1 pending, 6 GPUs used
	// waiting eval: InsufficientCapacity
	// host dgx-h100-1: marks uuuuuuff, 2 free, 2 stranded
	// state.json: 1 waiting, 2 free GPUs
	// 1 host cell
}
