package fairshare_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched/fairshare"
)

// The two-user example of the DRF paper: ⟨9 CPU, 18 GB⟩ shared by tasks of
// ⟨1 CPU, 4 GB⟩ and ⟨3 CPU, 1 GB⟩.
func ExampleDRF() {
	a, _ := fairshare.DRF([]int64{9, 18}, []fairshare.User{
		{Name: "A", Task: []int64{1, 4}},
		{Name: "B", Task: []int64{3, 1}},
	})
	fmt.Println("tasks:", a.Tasks)
	fmt.Printf("dominant shares: %.3f %.3f\n", a.Shares[0], a.Shares[1])
	// Output:
	// tasks: [3 2]
	// dominant shares: 0.667 0.667
}

// Fair Tree ranks users so that every user of an under-served account
// outranks every user of an over-served one.
func ExampleFairTree() {
	res, _ := fairshare.FairTree(fairshare.Account{Children: []fairshare.Account{
		{Name: "pretraining", Shares: 6, Children: []fairshare.Account{
			{Name: "alice", Shares: 1, Usage: 900},
			{Name: "bob", Shares: 1, Usage: 100},
		}},
		{Name: "evaluation", Shares: 1, Children: []fairshare.Account{
			{Name: "carol", Shares: 1, Usage: 400},
		}},
	}})
	for _, u := range res.Users {
		fmt.Printf("%-17s rank %d fairshare %.2f\n", u.Path, u.Rank, u.FairShare)
	}
	// Output:
	// pretraining/bob   rank 3 fairshare 1.00
	// pretraining/alice rank 2 fairshare 0.67
	// evaluation/carol  rank 1 fairshare 0.33
}

// Usage decays with a half-life: a week-old GPU-hour counts half.
func ExampleUsage() {
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	u := fairshare.Usage{Value: 1000, At: t0}
	fmt.Printf("%.0f\n", u.Advance(t0.Add(week), 0, week).Value)
	// Output:
	// 500
}

// A heterogeneity-aware max-min allocation (Gavel): the job that gains
// most from a V100 gets one, the one that gains nothing runs on the K80.
func ExampleHeteroMaxMin() {
	c := fairshare.HeteroCluster{Models: []string{"V100", "K80"}, GPUs: []int{1, 1}}
	jobs := []fairshare.HeteroJob{
		{ID: "resnet", GPUs: 1, Throughput: []float64{4, 1}},
		{ID: "lstm", GPUs: 1, Throughput: []float64{1, 1}},
	}
	a, err := fairshare.HeteroMaxMin(jobs, c)
	if err != nil {
		panic(err)
	}
	for j, jb := range jobs {
		fmt.Printf("%s: %s (normalised throughput %.2f)\n", jb.ID, c.Models[a.Preferred(j)[0]], a.Normalised[j])
	}
	// Output:
	// resnet: V100 (normalised throughput 1.60)
	// lstm: K80 (normalised throughput 1.00)
}
