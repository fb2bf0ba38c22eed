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

// runCLI runs the command line in-process: exit status, stdout, stderr.
func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// On a machine without the NVIDIA driver (or a build without cgo) discover
// fails with the message that says what to do instead; where a driver is
// present it writes a cluster file that loads.
func TestDiscoverCommand(t *testing.T) {
	code, out, errOut := runCLI("topology", "discover")
	if code == 0 {
		if _, err := topology.Load([]byte(out), "discovered", topology.FormatYAML); err != nil {
			t.Fatalf("discovered file does not load: %v\n%s", err, out)
		}
		return
	}
	if !strings.Contains(errOut, "no NVIDIA driver found on this host; use a cluster file or a preset") &&
		!strings.Contains(errOut, "NVML discovery needs a cgo build") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if out != "" {
		t.Errorf("stdout %q", out)
	}
	for _, args := range [][]string{
		{"topology", "discover", "--format", "toml"},
		{"topology", "discover", "--model", "no-equals-sign"},
	} {
		if code, _, errOut := runCLI(args...); code == 0 || !strings.Contains(errOut, "gpusched: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// writeHostFile writes a one-host cluster file as discover would.
func writeHostFile(t *testing.T, dir, host, machine string, clique uint32) string {
	t.Helper()
	tmpl, acc, err := topology.MachineTemplate(machine)
	if err != nil {
		t.Fatal(err)
	}
	r := nvml.Result{Hostname: host, Template: tmpl, Accelerator: acc}
	for i := 0; i < tmpl.GPUs; i++ {
		r.GPUs = append(r.GPUs, nvml.GPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", host, i), BusID: fmt.Sprintf("0000:%02x:00.0", 16+i)})
	}
	if clique > 0 {
		r.Fabric = &nvml.FabricMembership{ClusterUUID: "0badc0de-0000-4000-8000-000000000001", CliqueID: clique, BandwidthGBps: 900}
	}
	data, err := topology.Marshal(r.Spec(), topology.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, host+".yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAssembleCommand(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := 1; i <= 3; i++ {
		files = append(files, writeHostFile(t, dir, fmt.Sprintf("rack1-tray%02d", i), "gb200-nvl72", 4))
	}
	files = append(files, writeHostFile(t, dir, "rack2-dgx01", "dgx-h100", 0))
	net := filepath.Join(dir, "network.yaml")
	if err := os.WriteFile(net, []byte(`version: 1
levels: [spine, tor]
switches:
  - {name: spine1, level: spine}
  - {name: tor1, level: tor, parent: spine1, hosts: ["rack1-tray[01-03]"]}
  - {name: tor2, level: tor, parent: spine1, hosts: [rack2-dgx01]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	outFile := filepath.Join(dir, "cluster.yaml")
	code, out, errOut := runCLI(append([]string{"topology", "assemble", "--network", net, "--out", outFile, "--name", "lab"}, files...)...)
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if want := "assembled 4 hosts from 4 files: 2 templates, 3 switches, 1 multi-host NVLink domains\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	c, err := topology.LoadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "lab" || c.NumHosts() != 4 || c.NumGPUs() != 20 || len(c.DomainsAt(topology.LevelFabric)) != 2 {
		t.Errorf("cluster %s: %d hosts, %d GPUs, %d fabric domains", c.Name(), c.NumHosts(), c.NumGPUs(), len(c.DomainsAt(topology.LevelFabric)))
	}
	if k := c.Link(0, 11).Kind; k != topology.LinkFabric {
		t.Errorf("tray 1 to tray 3: %v, want NV", k)
	}

	// A hostname rule instead of a network file, JSON on stdout.
	code, out, errOut = runCLI(append([]string{"topology", "assemble", "--tor-pattern", `^(rack\d+)-`, "--tor-name", "tor-$1", "-o", "json"}, files...)...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	c, err = topology.Load([]byte(out), "stdout", topology.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if tor, ok := c.LevelByName("tor"); !ok || len(c.DomainsAt(tor)) != 2 {
		t.Errorf("ToRs: %v", c.DomainsAt(tor))
	}

	for _, tc := range []struct {
		args     []string
		addFiles bool
		err      string
	}{
		{[]string{"--network", net, "--tor-pattern", "x"}, true, "use --network or --tor-pattern, not both"},
		{[]string{"--tor-name", "x"}, true, "--tor-name needs --tor-pattern"},
		{[]string{"--tor-pattern", "("}, true, "host rule: error parsing regexp"},
		{[]string{"--network", filepath.Join(dir, "none.yaml")}, true, "no such file"},
		{[]string{"--format", "xml"}, true, `unknown --format "xml"`},
		{[]string{files[0], files[0]}, false, `host "rack1-tray01" is in both`},
		{[]string{filepath.Join(dir, "missing.yaml")}, false, "missing.yaml"},
	} {
		args := append([]string{"topology", "assemble"}, tc.args...)
		if tc.addFiles {
			args = append(args, files...)
		}
		code, _, errOut := runCLI(args...)
		if code == 0 || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.err)
		}
	}
	if code, _, errOut := runCLI("topology", "assemble"); code == 0 || !strings.Contains(errOut, "requires at least 1 arg") {
		t.Errorf("no files: exit %d, %q", code, errOut)
	}
}
