package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/topology/nvml"
)

// This machine: discovery either works (a GPU host with the driver) or
// ends with a clear message and no error.
func TestDiscoverHere(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, nil, nvml.DiscoverHost); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	if !strings.Contains(s, "No NVIDIA driver") && !strings.Contains(s, "without cgo") && !strings.Contains(s, "link matrix") && !strings.Contains(s, "no NVIDIA GPUs") {
		t.Errorf("unexpected output:\n%s", s)
	}
	t.Logf("\n%s", s)
}

func TestNoDriverNoCgo(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("nvml init: %w", nvml.ErrNoDriver), "No NVIDIA driver on this machine"},
		{nvml.ErrNeedsCgo, "built without cgo"},
	} {
		var out bytes.Buffer
		err := run(&out, nil, func(nvml.Options) (*nvml.Result, error) { return nil, c.err })
		if err != nil || !strings.Contains(out.String(), c.want) {
			t.Errorf("%v: %v\n%s", c.err, err, out.String())
		}
	}
	// Any other failure is an error.
	if err := run(&bytes.Buffer{}, nil, func(nvml.Options) (*nvml.Result, error) { return nil, fmt.Errorf("boom") }); err == nil {
		t.Error("a discovery error was swallowed")
	}
}

// A discovered DGX H100 (the preset's template standing in for NVML's
// answer): the report, the matrix, the placements and the file.
func TestReport(t *testing.T) {
	tmpl, acc, err := topology.MachineTemplate("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	res := &nvml.Result{Hostname: "node-7", DriverVersion: "570.86.15", Template: tmpl, Accelerator: acc, Preset: "dgx-h100"}
	for i := 0; i < tmpl.GPUs; i++ {
		res.GPUs = append(res.GPUs, nvml.GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), BusID: fmt.Sprintf("0000:%02x:00.0", 0x18+i), NUMANode: i / 4})
	}
	file := filepath.Join(t.TempDir(), "node-7.yaml")
	var out bytes.Buffer
	if err := run(&out, []string{"-out", file}, func(nvml.Options) (*nvml.Result, error) { return res, nil }); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"host node-7, driver 570.86.15", "8 × ", "matches the machine preset dgx-h100", "link matrix", "a 2-GPU task would get", "a 4-GPU task would get", "wrote " + file} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	t.Logf("\n%s", s)
	c, err := topology.LoadFile(file)
	if err != nil || c.NumGPUs() != 8 {
		t.Errorf("written file: %v", err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Error(err)
	}
}
