package trace_test

import (
	"fmt"
	"strings"

	"github.com/gpusched/gpusched/sim/trace"
)

// Read the processed Philly trace: rows are not in time order, so collect
// them and rebase the offsets onto the earliest submission.
func ExampleNewPhillyCSV() {
	csv := `timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:01:55,66.0,1,66.0,11cb48
2017-10-09 06:13:03,2951.0,16,47216.0,6214e9
2017-10-09 07:06:00,0.0,1,0.0,6214e9
`
	r, err := trace.NewPhillyCSV(strings.NewReader(csv), trace.Options{File: "philly.csv"})
	if err != nil {
		fmt.Println(err)
		return
	}
	jobs, err := trace.Collect(r)
	if err != nil {
		fmt.Println(err)
		return
	}
	trace.Rebase(jobs)
	for _, j := range jobs {
		fmt.Printf("%s queue=%s submit=%v run=%v tasks=%d×%d GPUs\n", j.Spec.ID, j.Spec.Queue, j.Submit, j.Duration, j.Spec.Groups[0].Count, j.Spec.Groups[0].GPUs)
	}
	fmt.Println("filtered:", r.Stats().FilterReasons)
	// Output:
	// philly-3 queue=6214e9 submit=0s run=49m11s tasks=2×8 GPUs
	// philly-2 queue=11cb48 submit=48m52s run=1m6s tasks=1×1 GPUs
	// filtered: map[zero duration:1]
}

// Bring your own log: name the columns that hold each field.
func ExampleNewCSV() {
	m, err := trace.ParseMapping("id=name,submit=at,duration=secs,gpus=gpus,queue=team")
	if err != nil {
		fmt.Println(err)
		return
	}
	log := "name,at,secs,gpus,team\ntrain-1,0,3600,8,research\nbad,10,-1,1,research\n"
	r, _ := trace.NewCSV(strings.NewReader(log), m, trace.Options{File: "mine.csv", SkipMalformed: true})
	jobs, _ := trace.Collect(r)
	fmt.Println(len(jobs), jobs[0].Spec.ID, jobs[0].Duration)
	fmt.Println("skipped:", r.Stats().Skipped, r.Stats().FirstSkip)
	// Output:
	// 1 train-1 1h0m0s
	// skipped: 1 mine.csv:3: field secs: negative duration -1s
}
