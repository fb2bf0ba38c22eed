package nvml

// Options tune discovery. The zero value discovers this machine as it is.
type Options struct {
	// Host supplies what NVML does not report (host name, CPUs, memory,
	// sysfs NUMA nodes and PCIe depth). Nil means SysHost{}: this machine's
	// /proc and /sys.
	Host Host
	// Hostname, when set, names the host instead of Host's answer.
	Hostname string
	// CPUMilli and MemoryMiB, when positive, replace what Host reports
	// (for instance to leave room for the operating system).
	CPUMilli  int64
	MemoryMiB int64
	// TemplateName, when set, names the host template; otherwise it is the
	// matching machine preset's name, or "<model>x<gpus>".
	TemplateName string
	// Models maps NVML product names to model names ahead of the built-in
	// table (see ModelName).
	Models map[string]string
	// NoPresetMIG turns off the fallback that takes a GPU model's MIG
	// geometry from the presets when NVML lists no profiles (as it does
	// on some drivers while MIG mode is disabled).
	NoPresetMIG bool
}
