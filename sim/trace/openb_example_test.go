package trace_test

import (
	"fmt"
	"strings"

	"github.com/gpusched/gpusched/sim/trace"
)

// Read an openb pod list: a whole GPU, a share of one GPU, and a CPU-only
// task.
func ExampleNewOpenB() {
	const pods = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
openb-pod-0001,6000,12288,1,460,V100M16|V100M32,LS,Running,427061,12902960,427061
openb-pod-0002,8000,30517,0,0,,BE,Running,1000,1060,1000
`
	jobs, st, err := trace.ReadOpenB(strings.NewReader(pods), trace.OpenBOptions{File: "pods.csv"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range jobs {
		g := j.Spec.Groups[0]
		fmt.Printf("%s: gpus=%d share=%d cpu=%d models=%v submit=%v run=%v\n",
			j.Spec.ID, g.GPUs, g.GPUMilli, g.CPUMilli, g.Models, j.Submit, j.Duration)
	}
	fmt.Println("read", st.Read)
	// Output:
	// openb-pod-0000: gpus=1 share=0 cpu=12000 models=[] submit=0s run=3482h38m16s
	// openb-pod-0001: gpus=0 share=460 cpu=6000 models=[V100M16 V100M32] submit=118h37m41s run=3465h31m39s
	// openb-pod-0002: gpus=0 share=0 cpu=8000 models=[] submit=16m40s run=1m0s
	// read 3
}
