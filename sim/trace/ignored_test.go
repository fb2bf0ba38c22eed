package trace

import (
	"slices"
	"strings"
	"testing"
)

// Every tabular reader lists the columns it does not know in
// Stats.IgnoredColumns (header order, lower-case), so that a misspelt
// column that silently drops a constraint can be reported; known columns
// the reader deliberately does not use (openb's pod_phase, Helios' state)
// are not listed.
func TestIgnoredColumns(t *testing.T) {
	mapping, err := ParseMapping("id=name,submit=t,duration=d,gpus=g")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   string
		read func(in string, o Options) (StatsReader, error)
		want []string
	}{
		{"openb gpuspec", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,GPUSpec,qos,pod_phase\np0,1000,1024,1,1000,V100M16,LS,Running\n",
			func(in string, o Options) (StatsReader, error) {
				return NewOpenB(strings.NewReader(in), OpenBOptions{Strict: o.Strict})
			}, []string{"gpuspec"}},
		{"openb none", openbHeader + "p0,1000,1024,1,1000,,LS,Running,0,10,0\n",
			func(in string, o Options) (StatsReader, error) {
				return NewOpenB(strings.NewReader(in), OpenBOptions{Strict: o.Strict})
			}, nil},
		{"philly", "timestamp,duration,num_gpus,gpu_time,cluster,num_gpu,\n2017-10-09 07:01:55,66,1,66,vc,1,x\n",
			func(in string, o Options) (StatsReader, error) { return NewPhillyCSV(strings.NewReader(in), o) },
			[]string{"num_gpu", ""}},
		{"helios", "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,duration,queue,gpus\n1,u,vc1,1,1,1,COMPLETED,2020-06-09 18:41:01,10,0,4\n",
			func(in string, o Options) (StatsReader, error) { return NewHeliosCSV(strings.NewReader(in), o) },
			[]string{"gpus"}},
		{"acme", "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,duration,mem_gb\n1,u,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,117,5\n",
			func(in string, o Options) (StatsReader, error) { return NewAcmeCSV(strings.NewReader(in), o) },
			[]string{"mem_gb"}},
		{"acme queue column of the user's choice", "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,duration,partition\n1,u,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,117,p1\n",
			func(in string, o Options) (StatsReader, error) {
				o.QueueFrom = "Partition"
				return NewAcmeCSV(strings.NewReader(in), o)
			}, nil},
		{"csv", "name,t,d,g,team,model\na,0,60,2,x,A100\n",
			func(in string, o Options) (StatsReader, error) { return NewCSV(strings.NewReader(in), mapping, o) },
			[]string{"team", "model"}},
		{"jsonl", `{"name": "a", "t": 0, "d": 60, "g": 1, "Team": "x", "b": 1}` + "\n" + `{"name": "b", "t": 0, "d": 60, "g": 1, "team": "y", "a": 1}` + "\n",
			func(in string, o Options) (StatsReader, error) { return NewJSONL(strings.NewReader(in), mapping, o) },
			[]string{"b", "team", "a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.read(c.in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Collect(r); err != nil {
				t.Fatal(err)
			}
			if got := r.Stats().IgnoredColumns; !slices.Equal(got, c.want) {
				t.Errorf("IgnoredColumns %q, want %q", got, c.want)
			}
			// Strict turns them into an error naming the first.
			r, err = c.read(c.in, Options{Strict: true})
			if err == nil {
				_, err = Collect(r)
			}
			if len(c.want) == 0 {
				if err != nil {
					t.Errorf("strict: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "unknown") {
				t.Errorf("strict: %v, want an unknown column error", err)
			}
		})
	}
}
