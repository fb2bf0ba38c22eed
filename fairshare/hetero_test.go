package fairshare_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"pgregory.net/rapid"

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

// TestHeteroMaxMinProperties: on random clusters and jobs the allocation
// is feasible (time per job ≤ 1, GPUs per model ≤ capacity) and no job
// that fits some model does worse than its equal share (the equal share is
// itself feasible, so the max-min optimum is at least 1).
func TestHeteroMaxMinProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nm := rapid.IntRange(1, 3).Draw(t, "models")
		c := fairshare.HeteroCluster{}
		for m := range nm {
			c.Models = append(c.Models, fmt.Sprintf("m%d", m))
			c.GPUs = append(c.GPUs, rapid.IntRange(0, 8).Draw(t, "gpus"))
		}
		nj := rapid.IntRange(1, 6).Draw(t, "jobs")
		var jobs []fairshare.HeteroJob
		for j := range nj {
			jb := fairshare.HeteroJob{ID: fmt.Sprint(j), GPUs: rapid.IntRange(1, 4).Draw(t, "g")}
			for range nm {
				jb.Throughput = append(jb.Throughput, float64(rapid.IntRange(0, 8).Draw(t, "tp"))/2)
			}
			jobs = append(jobs, jb)
		}
		a, err := fairshare.HeteroMaxMin(jobs, c)
		if err != nil {
			t.Fatal(err)
		}
		used := make([]float64, nm)
		for j, jb := range jobs {
			var time float64
			fits := false
			for m := range nm {
				x := a.Time[j][m]
				time += x
				used[m] += x * float64(jb.GPUs)
				if x > 1e-6 && (jb.GPUs > c.GPUs[m] || jb.Throughput[m] == 0) {
					t.Fatalf("job %d gets %.3f of model %d where it cannot run", j, x, m)
				}
				if jb.GPUs <= c.GPUs[m] && jb.Throughput[m] > 0 {
					fits = true
				}
			}
			if time > 1+1e-6 {
				t.Fatalf("job %d: time %.6f > 1", j, time)
			}
			if fits && a.Normalised[j] < 1-1e-6 {
				t.Fatalf("job %d: normalised %.6f below its equal share", j, a.Normalised[j])
			}
		}
		for m := range nm {
			if used[m] > float64(c.GPUs[m])+1e-6 {
				t.Fatalf("model %d: %.6f GPUs used of %d", m, used[m], c.GPUs[m])
			}
		}
	})
}
