// Package nvml discovers the topology of a real NVIDIA GPU host through NVML
// (github.com/NVIDIA/go-nvml) and assembles discovered hosts into one
// cluster file.
//
// # Discovery of one host
//
// Discover talks to NVML through Library, a narrow slice of nvml.Interface
// (the real library from nvml.New, or a mock in tests), and to the
// operating system through Host (for what NVML does not report: the host
// name, CPUs, memory and each GPU's PCIe path in sysfs). It returns a
// Result: a canonical topology.HostTemplate and topology.AcceleratorSpec in
// the same model the presets use, the identity of each GPU, per-link NVLink
// state, fabric (multi-node NVLink) membership, and warnings. DiscoverHost
// does the same against the host's own driver.
//
// How NVML facts become the model:
//
//   - GPUs: index, UUID, PCI bus ID normalised with topology.NormalizeBusID,
//     product name mapped to a model name by ModelName, total memory,
//     compute capability.
//   - NUMA: each GPU's NUMA node (its memory affinity within the node
//     scope, else sysfs numa_node, else the SYS-separated groups of the PCIe
//     matrix) and the node's CPUs (CPU affinity within the node scope, as a
//     Linux cpulist). nvmlDeviceGetNumaNodeId, the node of the GPU's own
//     memory on Grace systems, is kept apart as GPU.MemoryNUMANode.
//   - PCIe: the pairwise nvmlDeviceGetTopologyCommonAncestor levels are
//     clustered: GPUs closer than SYS share a NUMA node; closer than NODE a
//     host bridge; at PXB or closer a top-level PCIe switch; at PIX the
//     same leaf switch. A GPU that shares no switch with another GPU sits
//     directly on its host bridge unless sysfs shows a switch above it. The
//     resulting tree is the simplest one that reproduces NVML's matrix
//     under topology.Cluster.Link, which is all NVML can tell apart.
//   - NVLink: per link the state, version and remote device type. GPUs
//     whose active links reach NVSwitches form one NVSwitch domain; GPUs
//     joined by direct links form pairs (nvlink-bridge) or meshes (nvlink);
//     a GPU with every link down is left out and reported. The domain's
//     bandwidth is active links × the per-link bandwidth of the version.
//   - MIG: the GPU-instance profiles and their legal placements
//     (nvmlDeviceGetGpuInstancePossiblePlacements), named as nvidia-smi
//     names them ("3g.40gb"). The media-extension variants ("1g.18gb+me")
//     take their base profile's slots and the GPU's one set of media
//     extensions (topology.MediaExtensions: one such instance per GPU);
//     the other variants ("-me", "+me.all", "+gfx") are listed in
//     Result.SkippedMIGProfiles instead.
//   - Fabric: a GPU whose nvmlDeviceGetGpuFabricInfo state is completed
//     with a non-zero cluster UUID belongs to the multi-node NVLink domain
//     named by (cluster UUID, clique ID); the call is looked up first so
//     older drivers degrade to "no fabric information".
//
// Failure modes follow NVML's: when Init reports that the library or the
// driver is missing, Discover returns an error wrapping ErrNoDriver and
// calls nothing else (any NVML call after a failed Init would crash the
// process). A call that returns NOT_SUPPORTED degrades that one feature and
// adds a Warning to the result.
//
// The go-nvml code needs cgo: Library, Discover and DiscoverHost exist in
// cgo builds only; a build without cgo has a DiscoverHost that returns
// ErrNeedsCgo. Everything else (results, assembly, network files) is pure
// Go.
//
// # Assembly
//
// Assemble merges host specs (the one-host cluster files Result.Spec
// writes, or any cluster files) into one topology.Spec: identical
// templates and accelerators are shared, hosts that report the same
// (cluster UUID, clique ID) join one FabricGroup of kind mnnvl, and a
// Network (read by ParseNetwork from a small YAML file, or derived from
// host names by a HostRule) places hosts under ToR and spine switches.
//
// None of this is a decision path: discovery does I/O by nature, and the
// scheduling packages only ever see the resulting Spec.
package nvml
