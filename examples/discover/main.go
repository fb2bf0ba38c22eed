// Command discover reads this machine's GPU topology through the NVIDIA
// driver (NVML, package topology/nvml), prints what it found — GPUs, NUMA
// nodes, PCIe switches, NVLink domains, the nvidia-smi-style link matrix and
// the machine preset it matches — and shows where gpusched would place a
// 2-GPU and a 4-GPU task on it.
//
//	go run ./examples/discover              # print the discovery
//	go run ./examples/discover -out me.yaml # also write the one-host cluster file
//
// On a machine without the NVIDIA driver, or in a binary built without cgo
// (CGO_ENABLED=0), discovery is impossible: the program says so, suggests
// what to use instead (a preset or a cluster file), and exits with status
// 0. Collect the files of many hosts and join them into one cluster file
// with `gpusched topology assemble`.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/topology/nvml"
	"github.com/gpusched/gpusched/workload"
)

func main() {
	if err := run(os.Stdout, os.Args[1:], nvml.DiscoverHost); err != nil {
		fmt.Fprintln(os.Stderr, "discover:", err)
		os.Exit(1)
	}
}

// discoverFunc discovers this host (nvml.DiscoverHost; tests pass their
// own).
type discoverFunc func(nvml.Options) (*nvml.Result, error)

func run(w io.Writer, args []string, discover discoverFunc) error {
	fs := flag.NewFlagSet("discover", flag.ContinueOnError)
	fs.SetOutput(w)
	out := fs.String("out", "", "write the one-host cluster file here (.yaml or .json)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	res, err := discover(nvml.Options{})
	switch {
	case errors.Is(err, nvml.ErrNeedsCgo):
		fmt.Fprintln(w, "This binary was built without cgo, and NVML discovery needs it:")
		fmt.Fprintln(w, "rebuild with CGO_ENABLED=1 and a C compiler, or describe the host with a")
		fmt.Fprintln(w, "preset (gpusched topology presets) or a cluster file.")
		return nil
	case errors.Is(err, nvml.ErrNoDriver):
		fmt.Fprintln(w, "No NVIDIA driver on this machine (NVML could not be loaded), so there is")
		fmt.Fprintln(w, "nothing to discover. Use a preset instead, for example:")
		fmt.Fprintln(w, "  gpusched topology show --preset dgx-h100")
		fmt.Fprintf(w, "(%v)\n", err)
		return nil
	case err != nil:
		return err
	}
	return report(w, res, *out)
}

// report prints what discovery found and places two tasks on the host.
func report(w io.Writer, res *nvml.Result, out string) error {
	t := res.Template
	fmt.Fprintf(w, "host %s", res.Hostname)
	if res.DriverVersion != "" {
		fmt.Fprintf(w, ", driver %s", res.DriverVersion)
	}
	fmt.Fprintln(w)
	if t.GPUs == 0 {
		fmt.Fprintln(w, "no NVIDIA GPUs found")
		return nil
	}
	fmt.Fprintf(w, "%d × %s (%d MiB each), %d CPU cores, %d GiB memory\n",
		t.GPUs, t.Accelerator, res.Accelerator.MemoryMiB, t.CPUMilli/1000, t.MemoryMiB/1024)
	if res.Preset != "" {
		fmt.Fprintf(w, "matches the machine preset %s\n", res.Preset)
	} else {
		fmt.Fprintf(w, "matches no machine preset; template %s\n", t.Name)
	}
	for _, g := range res.GPUs {
		fmt.Fprintf(w, "  GPU %d  %s  %s  NUMA %d\n", g.Index, g.BusID, g.UUID, g.NUMANode)
	}
	for _, f := range t.Fabrics {
		fmt.Fprintf(w, "  fabric %s: GPUs %v\n", f.Kind, f.GPUs)
	}
	if res.Fabric != nil {
		fmt.Fprintf(w, "  multi-node NVLink clique %d of cluster %s\n", res.Fabric.CliqueID, res.Fabric.ClusterUUID)
	}
	for _, wn := range res.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", wn)
	}

	spec := res.Spec()
	c, err := topology.Build(spec)
	if err != nil {
		return fmt.Errorf("the discovered host does not build: %w", err)
	}
	fmt.Fprintln(w, "\nlink matrix (as nvidia-smi topo -m names the paths):")
	printMatrix(w, c)

	// Where the default placer puts tasks on this host: GPUs sharing a
	// fabric first, then a PCIe switch, then a NUMA node.
	l := topology.NewLedger(c)
	pl, err := gang.New("topology", gang.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, n := range []int{2, 4} {
		if n > t.GPUs {
			continue
		}
		r, err := gang.NewRequest(c, &workload.Job{ID: fmt.Sprintf("%d-gpu task", n), Groups: []workload.TaskGroup{{Count: 1, GPUs: n}}})
		if err != nil {
			return err
		}
		var p gang.Placement
		if x := pl.Place(l, r, &p); x != nil {
			fmt.Fprintf(w, "a %d-GPU task would not fit: %s\n", n, x)
			continue
		}
		var names []string
		for _, g := range p.Claims[0].GPUs {
			names = append(names, c.GPUName(g.GPU))
		}
		a, b := p.Claims[0].GPUs[0].GPU, p.Claims[0].GPUs[len(p.Claims[0].GPUs)-1].GPU
		fmt.Fprintf(w, "a %d-GPU task would get %s (%s apart)\n", n, strings.Join(names, " "), c.Link(a, b).Kind)
	}

	if out != "" {
		data, err := topology.Marshal(spec, topology.FormatOf(out))
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nwrote %s; join many hosts with: gpusched topology assemble FILES…\n", out)
	}
	return nil
}

// printMatrix prints the link kind between every pair of GPUs of the
// (one-host) cluster.
func printMatrix(w io.Writer, c *topology.Cluster) {
	n := c.NumGPUs()
	fmt.Fprint(w, "      ")
	for b := 0; b < n; b++ {
		fmt.Fprintf(w, " GPU%-2d", b)
	}
	fmt.Fprintln(w)
	for a := 0; a < n; a++ {
		fmt.Fprintf(w, "GPU%-2d ", a)
		for b := 0; b < n; b++ {
			k := "X"
			if a != b {
				k = c.Link(topology.GPUID(a), topology.GPUID(b)).Kind.String()
			}
			fmt.Fprintf(w, " %-5s", k)
		}
		fmt.Fprintln(w)
	}
}
