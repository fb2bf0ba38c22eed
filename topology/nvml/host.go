package nvml

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// HostInfo is what the operating system says about a host as a whole.
type HostInfo struct {
	// Hostname is the host's name.
	Hostname string
	// CPUMilli is the online CPUs (hardware threads) × 1000.
	CPUMilli int64
	// MemoryMiB is the total memory the kernel manages (MemTotal).
	MemoryMiB int64
}

// PCIDevice is what the operating system says about one PCI device.
type PCIDevice struct {
	// NUMANode is the device's NUMA node, -1 when unknown.
	NUMANode int
	// Switches is the number of PCIe switches between the device and its
	// root port, -1 when unknown.
	Switches int
}

// Host reports what NVML does not: the host's name, CPUs and memory, and
// for a GPU its NUMA node and PCIe depth. Errors become warnings; discovery
// goes on without the missing facts.
type Host interface {
	// Info describes the host.
	Info() (HostInfo, error)
	// PCIDevice describes the device at busID (sysfs form, "0000:18:00.0").
	PCIDevice(busID string) (PCIDevice, error)
}

// SysHost reads a Linux host's /proc and /sys under Root ("" means "/"), so
// tests and offline captures can point it at a copied tree:
//
//   - host name: Root/proc/sys/kernel/hostname (os.Hostname when Root is "/");
//   - CPUs: Root/sys/devices/system/cpu/online (a cpulist);
//   - memory: MemTotal in Root/proc/meminfo;
//   - NUMA node: Root/sys/bus/pci/devices/BUSID/numa_node;
//   - PCIe switches: the bridges on the path of the device's sysfs link,
//     e.g. …/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0
//     is a root port (15:01.0) and one switch (upstream port 16:00.0,
//     downstream port 17:00.0) above the device.
type SysHost struct {
	Root string
}

func (h SysHost) path(p string) string {
	root := h.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, p)
}

// Info reads the host name, online CPUs and total memory. It returns what
// it could read and an error naming what it could not.
func (h SysHost) Info() (HostInfo, error) {
	var info HostInfo
	var errs []string
	if h.Root == "" || h.Root == "/" {
		name, err := os.Hostname()
		if err != nil {
			errs = append(errs, err.Error())
		}
		info.Hostname = name
	} else if b, err := os.ReadFile(h.path("proc/sys/kernel/hostname")); err != nil {
		errs = append(errs, err.Error())
	} else {
		info.Hostname = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(h.path("sys/devices/system/cpu/online")); err != nil {
		errs = append(errs, err.Error())
	} else if cpus, err := ParseCPUList(string(b)); err != nil {
		errs = append(errs, err.Error())
	} else {
		info.CPUMilli = int64(len(cpus)) * 1000
	}
	if b, err := os.ReadFile(h.path("proc/meminfo")); err != nil {
		errs = append(errs, err.Error())
	} else if kib, err := memTotalKiB(b); err != nil {
		errs = append(errs, err.Error())
	} else {
		info.MemoryMiB = kib / 1024
	}
	if len(errs) > 0 {
		return info, fmt.Errorf("reading host facts: %s", strings.Join(errs, "; "))
	}
	return info, nil
}

func memTotalKiB(meminfo []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("meminfo: bad MemTotal %q", f[1])
			}
			if len(f) >= 3 && f[2] != "kB" {
				return 0, fmt.Errorf("meminfo: MemTotal in unknown unit %q", f[2])
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("meminfo: no MemTotal line")
}

// PCIDevice reads the device's NUMA node and counts the PCIe switches on
// its sysfs path.
func (h SysHost) PCIDevice(busID string) (PCIDevice, error) {
	d := PCIDevice{NUMANode: -1, Switches: -1}
	dev := h.path(filepath.Join("sys/bus/pci/devices", busID))
	var errs []string
	if b, err := os.ReadFile(filepath.Join(dev, "numa_node")); err != nil {
		errs = append(errs, err.Error())
	} else if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		errs = append(errs, fmt.Sprintf("%s/numa_node: %q is not a number", busID, strings.TrimSpace(string(b))))
	} else if n >= 0 {
		d.NUMANode = n
	}
	if target, err := os.Readlink(dev); err != nil {
		errs = append(errs, err.Error())
	} else if sw, ok := SwitchesOnPath(target, busID); ok {
		d.Switches = sw
	} else {
		errs = append(errs, fmt.Sprintf("%s: cannot read the PCIe path from %q", busID, target))
	}
	if len(errs) > 0 {
		return d, fmt.Errorf("reading PCI facts: %s", strings.Join(errs, "; "))
	}
	return d, nil
}

// SwitchesOnPath counts the PCIe switches above the device busID on a sysfs
// device path such as "../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0":
// the bridges between the host bridge directory (pciDDDD:BB) and the device
// are a root port followed by an upstream and a downstream port per switch.
// A device directly on the root bus ("…/pci0000:00/0000:00:06.0", as a GPU
// passed through to a VM often is) has none. It reports false when the path
// does not have that shape.
func SwitchesOnPath(path, busID string) (int, bool) {
	parts := strings.Split(filepath.ToSlash(path), "/")
	host := -1
	for i, p := range parts {
		if strings.HasPrefix(p, "pci") && strings.Contains(p, ":") {
			host = i
		}
	}
	if host < 0 || parts[len(parts)-1] != busID {
		return 0, false
	}
	bridges := len(parts) - host - 2 // minus the host bridge dir and the device
	if bridges == 0 {
		// On the root bus itself, with no root port: an integrated
		// endpoint, or a GPU passed through to a VM.
		return 0, true
	}
	if bridges < 1 || (bridges-1)%2 != 0 {
		return 0, false
	}
	return (bridges - 1) / 2, true
}

// StaticHost is a Host with fixed answers, for tests, examples and hosts
// whose facts come from elsewhere. A bus ID missing from Devices is
// unknown (NUMA node and switches -1) without an error.
type StaticHost struct {
	HostInfo HostInfo
	Devices  map[string]PCIDevice
}

// Info returns s.HostInfo.
func (s StaticHost) Info() (HostInfo, error) { return s.HostInfo, nil }

// PCIDevice returns s.Devices[busID].
func (s StaticHost) PCIDevice(busID string) (PCIDevice, error) {
	if d, ok := s.Devices[busID]; ok {
		return d, nil
	}
	return PCIDevice{NUMANode: -1, Switches: -1}, nil
}
