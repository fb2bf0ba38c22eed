package kube_test

import (
	"fmt"
	"os"
	"time"

	"github.com/gpusched/gpusched/importers/kube"
)

// A Kueue configuration and a cluster dump: why team-a's finetune job
// waits, and when it is expected to start.
func Example() {
	s, err := kube.Prepare("testdata/dump", "testdata/kueue/gpu-cohorts", kube.DumpOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	f, _, err := s.Forecast(48 * time.Hour)
	if err != nil {
		fmt.Println(err)
		return
	}
	kube.WriteForecast(os.Stdout, f)
	// Output:
	// expected starts (from runtime estimates; "unknown" where a job waits for jobs without one or beyond 2025-03-03T09:30:01Z):
	//   job                    queue   waiting since         expected start                      wait
	//   team-a/finetune        team-a  2025-03-01T09:00:00Z  2025-03-01T14:01:00Z (in 4h30m59s)  5h1m
	//   team-b/job-eval-3f2a1  team-b  2025-03-01T09:30:00Z  now                                 1s
}
