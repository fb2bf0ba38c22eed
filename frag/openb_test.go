package frag

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// sharedData returns the path of rel under ../shared/data (relative to the
// repository root; $GPUSCHED_SHARED_DATA overrides the directory),
// skipping the test when it is absent.
func sharedData(tb testing.TB, rel string) string {
	tb.Helper()
	if d := os.Getenv("GPUSCHED_SHARED_DATA"); d != "" {
		p := filepath.Join(d, rel)
		if _, err := os.Stat(p); err != nil {
			tb.Skipf("%s not present: %v", p, err)
		}
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("repository root not found")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("%s not present (the shared data sits at ../shared/data): %v", rel, err)
	}
	return p
}

var openbOnce struct {
	sync.Once
	c   *topology.Cluster
	err error
}

// openbGPU returns the openb-gpu cluster: the topology preset when the
// package has it, else built here from the node list in ../shared/data.
func openbGPU(tb testing.TB) *topology.Cluster {
	tb.Helper()
	path := ""
	if _, err := topology.Preset("openb-gpu"); err != nil {
		path = sharedData(tb, "cluster-trace-gpu-v2023/csv/openb_node_list_gpu_node.csv")
	}
	openbOnce.Do(func() {
		if path == "" {
			openbOnce.c, openbOnce.err = topology.LoadPreset("openb-gpu")
			return
		}
		openbOnce.c, openbOnce.err = buildNodeList(path)
	})
	if openbOnce.err != nil {
		tb.Fatal(openbOnce.err)
	}
	return openbOnce.c
}

// buildNodeList builds a flat cluster from an openb node list: one host per
// row, one template per (CPU, memory, GPUs, model).
func buildNodeList(path string) (*topology.Cluster, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	spec := topology.Spec{Version: topology.SpecVersion, Name: "openb-gpu"}
	models := map[string]bool{}
	templates := map[string]bool{}
	for _, r := range recs[1:] {
		cpu, _ := strconv.ParseInt(r[1], 10, 64)
		mem, _ := strconv.ParseInt(r[2], 10, 64)
		gpus, _ := strconv.Atoi(r[3])
		model := r[4]
		if gpus > 0 && !models[model] {
			models[model] = true
			spec.Accelerators = append(spec.Accelerators, topology.AcceleratorSpec{Model: model})
		}
		tn := fmt.Sprintf("%s-%d-%d-%d", model, gpus, cpu, mem)
		if !templates[tn] {
			templates[tn] = true
			t := topology.HostTemplate{Name: tn, CPUMilli: cpu, MemoryMiB: mem, GPUs: gpus}
			if gpus > 0 {
				t.Accelerator = model
			}
			spec.Templates = append(spec.Templates, t)
		}
		spec.Hosts = append(spec.Hosts, topology.HostGroup{Name: r[0], Template: tn})
	}
	return topology.Build(spec)
}

// openbTasks reads an openb pod list as tasks of cluster c.
func openbTasks(tb testing.TB, c *topology.Cluster, file string) []Task {
	tb.Helper()
	p := sharedData(tb, "cluster-trace-gpu-v2023/csv/"+file)
	f, err := os.Open(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	jobs, _, err := trace.ReadOpenB(f, trace.OpenBOptions{File: file})
	if err != nil {
		tb.Fatal(err)
	}
	tasks := make([]Task, len(jobs))
	for i, j := range jobs {
		if tasks[i], err = TaskFor(c, &j.Spec.Groups[0]); err != nil {
			tb.Fatal(err)
		}
	}
	return tasks
}
