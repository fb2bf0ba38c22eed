package fairshare_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/gpusched/gpusched/fairshare"
)

// TestHeteroMaxMin runs testdata/hetero.txt: Gavel-style max-min
// allocations on instances worked by hand. Regenerate with
// `go test -run TestHeteroMaxMin -rewrite`.
//
//	alloc models=(NAME=GPUS,…)   body: one job a line, "id gpus=G
//	                             NAME=THROUGHPUT …"; prints each job's time
//	                             per model, normalised throughput and
//	                             preferred models, then the minimum
func TestHeteroMaxMin(t *testing.T) {
	datadriven.RunTest(t, "testdata/hetero.txt", func(t *testing.T, td *datadriven.TestData) string {
		if td.Cmd != "alloc" {
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
		}
		var c fairshare.HeteroCluster
		for _, a := range td.CmdArgs {
			if a.Key != "models" {
				continue
			}
			for _, v := range a.Vals {
				name, g, _ := strings.Cut(v, "=")
				n, err := strconv.Atoi(g)
				if err != nil {
					t.Fatalf("%s: %v", td.Pos, err)
				}
				c.Models, c.GPUs = append(c.Models, name), append(c.GPUs, n)
			}
		}
		var jobs []fairshare.HeteroJob
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(line)
			j := fairshare.HeteroJob{ID: f[0], Throughput: make([]float64, len(c.Models))}
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("%s: %v", td.Pos, err)
				}
				if k == "gpus" {
					j.GPUs = int(x)
					continue
				}
				for m, name := range c.Models {
					if name == k {
						j.Throughput[m] = x
					}
				}
			}
			jobs = append(jobs, j)
		}
		a, err := fairshare.HeteroMaxMin(jobs, c)
		if err != nil {
			return err.Error()
		}
		var b strings.Builder
		for j, jb := range jobs {
			fmt.Fprintf(&b, "%s:", jb.ID)
			for m, name := range c.Models {
				fmt.Fprintf(&b, " %s %.2f", name, a.Time[j][m])
			}
			var pref []string
			for _, m := range a.Preferred(j) {
				pref = append(pref, c.Models[m])
			}
			fmt.Fprintf(&b, "; normalised %.2f; prefers %s\n", a.Normalised[j], strings.Join(pref, ","))
		}
		fmt.Fprintf(&b, "min normalised %.2f\n", a.MinNormalised)
		return b.String()
	})
}

func TestHeteroMaxMinErrors(t *testing.T) {
	c := fairshare.HeteroCluster{Models: []string{"V100"}, GPUs: []int{2}}
	for _, tc := range []struct {
		jobs []fairshare.HeteroJob
		c    fairshare.HeteroCluster
		want string
	}{
		{[]fairshare.HeteroJob{{ID: "a", GPUs: 1, Throughput: []float64{1, 2}}}, c, "job a: 2 throughputs for 1 models"},
		{[]fairshare.HeteroJob{{ID: "a", GPUs: 0, Throughput: []float64{1}}}, c, "job a: 0 GPUs"},
		{[]fairshare.HeteroJob{{ID: "a", GPUs: 1, Throughput: []float64{-1}}}, c, "model V100: throughput -1"},
		{nil, fairshare.HeteroCluster{Models: []string{"a"}}, "1 model names for 0 GPU counts"},
	} {
		_, err := fairshare.HeteroMaxMin(tc.jobs, tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}
