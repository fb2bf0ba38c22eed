package nvml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree lays out a fake /proc and /sys under a temporary root.
func writeTree(t *testing.T, files map[string]string, links map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, body := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestSysHost(t *testing.T) {
	dev := "sys/bus/pci/devices/"
	root := writeTree(t, map[string]string{
		"proc/sys/kernel/hostname":      "dgx-h100-001\n",
		"sys/devices/system/cpu/online": "0-223\n",
		"proc/meminfo":                  "MemTotal:       2113540096 kB\nMemFree:        1 kB\n",
		dev + "0000:18:00.0/numa_node":  "0\n",
		dev + "0008:01:00.0/numa_node":  "1\n",
		dev + "0000:99:00.0/numa_node":  "-1\n",
		dev + "0000:00:06.0/numa_node":  "0\n",
	}, nil)
	// The devices are directories here; replace two with sysfs-like links.
	for bus, target := range map[string]string{
		"0000:18:00.0": "../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0",
		"0008:01:00.0": "../../../devices/pci0008:00/0008:00:00.0/0008:01:00.0",
		// A GPU on the root bus of a VM (the h200-sxm-1 capture).
		"0000:00:06.0": "../../../devices/pci0000:00/0000:00:06.0",
	} {
		dir := filepath.Join(root, "sys/devices", strings.TrimPrefix(target, "../../../devices/"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(root, dev, bus, "numa_node"), filepath.Join(dir, "numa_node")); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(root, dev, bus)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, dev, bus)); err != nil {
			t.Fatal(err)
		}
	}
	h := SysHost{Root: root}
	info, err := h.Info()
	if err != nil {
		t.Fatal(err)
	}
	if want := (HostInfo{Hostname: "dgx-h100-001", CPUMilli: 224000, MemoryMiB: 2113540096 / 1024}); info != want {
		t.Errorf("Info = %+v, want %+v", info, want)
	}
	for bus, want := range map[string]PCIDevice{
		"0000:18:00.0": {NUMANode: 0, Switches: 1},
		"0008:01:00.0": {NUMANode: 1, Switches: 0},
		"0000:00:06.0": {NUMANode: 0, Switches: 0},
	} {
		got, err := h.PCIDevice(bus)
		if err != nil || got != want {
			t.Errorf("PCIDevice(%s) = %+v, %v; want %+v", bus, got, err, want)
		}
	}
	// A device that is not a link: NUMA node -1 is "unknown", the path
	// cannot be read.
	got, err := h.PCIDevice("0000:99:00.0")
	if err == nil || got != (PCIDevice{NUMANode: -1, Switches: -1}) {
		t.Errorf("plain directory: %+v, %v", got, err)
	}
	if _, err := h.PCIDevice("0000:aa:00.0"); err == nil {
		t.Error("missing device: no error")
	}
}

func TestSysHostMissing(t *testing.T) {
	root := writeTree(t, map[string]string{"proc/meminfo": "MemFree: 1 kB\n"}, nil)
	info, err := SysHost{Root: root}.Info()
	if err == nil {
		t.Fatal("no error")
	}
	if info != (HostInfo{}) {
		t.Errorf("info %+v", info)
	}
	for _, s := range []string{"hostname", "online", "no MemTotal"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	for _, bad := range []string{"MemTotal: x kB", "MemTotal: 5 MB"} {
		if _, err := memTotalKiB([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// SysHost{} reads this machine; it must not fail on the host name.
func TestSysHostLocal(t *testing.T) {
	info, _ := SysHost{}.Info()
	if info.Hostname == "" {
		t.Skip("this machine has no host name")
	}
}

func TestSwitchesOnPath(t *testing.T) {
	for _, tc := range []struct {
		path string
		n    int
		ok   bool
	}{
		{"../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0", 0, true},
		{"../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0", 1, true},
		{"/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:08.0/0000:83:00.0/0000:84:10.0/0000:85:00.0", 2, true},
		// A device on the root bus itself, as in a VM (the h200-sxm-1 capture):
		// no root port and no switch above it.
		{"../../../devices/pci0000:00/0000:00:06.0", 0, true},
		{"../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:18:00.0", 0, false}, // half a switch
		{"../../../devices/pci0000:00/0000:00:01.0", 0, false},                           // not the device
		{"../../../devices/platform/0000:18:00.0", 0, false},
	} {
		bus := tc.path[strings.LastIndexByte(tc.path, '/')+1:]
		if tc.path == "../../../devices/pci0000:00/0000:00:01.0" {
			bus = "0000:01:00.0"
		}
		n, ok := SwitchesOnPath(tc.path, bus)
		if n != tc.n || ok != tc.ok {
			t.Errorf("SwitchesOnPath(%q) = %d, %v; want %d, %v", tc.path, n, ok, tc.n, tc.ok)
		}
	}
}

func TestStaticHost(t *testing.T) {
	h := StaticHost{HostInfo: HostInfo{Hostname: "a"}, Devices: map[string]PCIDevice{"0000:01:00.0": {NUMANode: 1, Switches: 0}}}
	if d, err := h.PCIDevice("0000:01:00.0"); err != nil || d.NUMANode != 1 {
		t.Errorf("%+v %v", d, err)
	}
	if d, err := h.PCIDevice("0000:02:00.0"); err != nil || d != (PCIDevice{NUMANode: -1, Switches: -1}) {
		t.Errorf("unknown device %+v %v", d, err)
	}
}
