package data_test

import (
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/gpusched/gpusched/sim/data"
	"github.com/gpusched/gpusched/sim/trace"
)

func TestMatchesShared(t *testing.T) {
	want, err := os.ReadFile("../../../shared/data/cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv")
	if err != nil {
		t.Skip("../shared/data not present: ", err)
	}
	got, err := io.ReadAll(data.OpenBDefault())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("embedded trace differs from the shared copy")
	}
}

// The embedded trace reads as 8,152 openb tasks.
func ExampleOpenBDefault() {
	jobs, _, err := trace.ReadOpenB(data.OpenBDefault(), trace.OpenBOptions{File: data.OpenBDefaultName})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(jobs), "tasks")
	// Output: 8152 tasks
}
