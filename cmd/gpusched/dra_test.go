package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// TestImportDRA: topology import dra writes a cluster file that loads and
// reports the tainted GPU; a bad file is an error naming file and field.
func TestImportDRA(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.yaml")
	code, _, stderr := gpusched(t, "", "topology", "import", "dra", "../../importers/dra/testdata/dgx-h100.yaml",
		"--network-label", "network.topology.kubernetes.io/rack", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c, err := topology.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.NumGPUs() != 16 || c.NumHosts() != 2 {
		t.Errorf("cluster %s", c)
	}
	if !strings.Contains(stderr, "GPU dgx-h100-002/5 (gpu-5): failed by its taints") || !strings.Contains(stderr, "imported 2 nodes, 16 GPUs (1 tainted), 0 MIG devices") {
		t.Errorf("stderr:\n%s", stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec: {driver: gpu.nvidia.com, devices: []}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = gpusched(t, "", "topology", "import", "dra", bad)
	if code == 0 || !strings.Contains(stderr, `bad.yaml:1: slice "s": spec.nodeName: missing`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
