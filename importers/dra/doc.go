// Package dra builds a gpusched cluster from the ResourceSlices a GPU
// driver for Kubernetes Dynamic Resource Allocation (resource.k8s.io/v1)
// publishes, modelled on NVIDIA's DRA driver for GPUs (driver
// gpu.nvidia.com; device classes gpu.nvidia.com and mig.nvidia.com).
//
// [Parse] and [ReadFiles] read `kubectl get resourceslices,nodes -o yaml`
// (or JSON) into the package's own structs, which mirror the API's field
// names: the package imports no k8s.io module. [Build] turns them into a
// topology.Spec (hosts, GPUs with their UUIDs and PCI bus IDs, NUMA nodes
// and PCIe roots, NVSwitch domains, multi-node NVLink cliques, MIG
// geometry from partitionable devices) and lists each GPU's device, the
// MIG devices and the GPUs' health from device taints
// ([Result.ApplyHealth] sets it in a ledger). When the slices change,
// [Compare] of two builds gives the live change of the cluster (nodes
// gone, new, or changed in shape; new cliques) and the GPUs whose health
// changed, and [Diff.Apply] applies both to a cluster and its ledger.
//
// The attributes read (names without a domain are the driver's):
//
//	type                               "gpu" or "mig"
//	index, minor                       the GPU's order on its node
//	uuid, productName                  identity and model (nvml.ModelName)
//	cudaComputeCapability              version, "9.0.0"
//	resource.kubernetes.io/pcieRoot    host bridge ("pci0000:15")
//	resource.kubernetes.io/pciBusID    PCI bus ID
//	resource.kubernetes.io/numaNode    NUMA node
//	cliqueId                           "<cluster UUID>.<clique id>"; else the
//	                                   node label nvidia.com/gpu.clique
//	profile                            a MIG device's profile ("1g.18gb+me")
//	parentUUID, parentIndex            a MIG device's GPU (else its counter set)
//
// and the capacities memory (bytes) and, on MIG devices, the memory slices
// they take: consumed counters "memory-slice-N" (partitionable devices) or
// capacities "memorySliceN" (static MIG: MIG devices that exist on a GPU
// the driver does not publish, which Build makes a GPU of its host,
// GPU.StaticMIG).
//
// Reading does I/O (ReadFiles); Build does none and is deterministic.
package dra
