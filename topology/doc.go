// Package topology models what a GPU cluster is and what in it is free.
//
// A Cluster is the immutable graph of a cluster, built once from a Spec (a
// cluster file, a preset, the generator or NVML discovery): the tree of
// domains from the cluster root through network levels (spine, ToR, or any
// named levels), hosts, NUMA nodes, PCIe host bridges and switches down to
// GPUs, plus accelerator fabric domains across that tree (the NVSwitch
// island of a DGX host, NVLink bridge pairs, the multi-node NVLink domain of
// a GB200 NVL72 rack, Ascend HCCS groups). Hosts, GPUs and domains have
// dense integer IDs, and every query answers in a deterministic order.
//
// A Ledger is the mutable occupancy of one Cluster: whole GPUs, fractional
// shares in milli-GPU, MIG instances on legal slots, host CPU and memory,
// and the health of GPUs and hosts. Per-domain free counters are kept up to
// date on every change and ordered indexes (sorted chunks of integer keys)
// answer best-fit questions in O(log n), so no decision rescans the cluster.
// Allocate and Release are all-or-nothing transactions; Check recomputes
// everything from scratch as a test oracle.
//
// Cluster files are YAML or JSON (version 1) with host templates and name
// ranges such as dgx[0001-1250]; errors name the file, line, column and
// field. Presets cover DGX A100/H100/H200/B200, a GB200 NVL72 rack, an
// 8-GPU PCIe server, an Ascend 910 server, and the Alibaba openb clusters.
//
// The package does no I/O except in the explicitly named file functions
// (LoadFile, SaveFile), starts no goroutines and never reads the clock. A
// Cluster is safe for concurrent use; a Ledger is not.
package topology
