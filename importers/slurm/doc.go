// Package slurm imports a Slurm site's configuration into gpusched: the
// cluster (slurm.conf nodes, topology.conf or topology.yaml, gres.conf) as a
// topology.Spec, the associations (sacctmgr show assoc -P) as a queue tree
// with Fair Tree, and the scheduler and priority settings as a Slurm-like
// preset of the root Scheduler's options (see Preset).
//
// Parsing is plain text in, typed structs out: no daemons are asked, no
// files are written. Every problem that stops an import is an *Error naming
// the file, the line and the setting; every setting the importer reads but
// does not model, and every one it does not know, is a Warning with its
// file and line, so a site sees exactly what gpusched left out.
//
// What maps to what:
//
//	slurm.conf NodeName       one host per node; CPUs → cpuMilli, RealMemory → memoryMiB,
//	                          Gres=gpu[:type]:N → GPUs of model type (gres.conf may refine)
//	slurm.conf PartitionName  checked; gpusched has no partitions (one pool, see Warnings)
//	topology.conf (tree)      one network level per switch height, leaves innermost
//	                          ("tier0"), a switch per SwitchName; uneven trees get
//	                          pass-through switches so every host sits under tier0
//	topology.conf (block)     one level "block", a switch per BlockName
//	topology.yaml             the cluster_default (or only) topology, tree or block
//	gres.conf                 GPU indices in file order (Slurm's IDX), Cores → NUMA nodes,
//	                          Links → NVLink fabric domains (GPUs joined by links > 0)
//	sacctmgr assoc -P         accounts → inner queues, users → leaves "account:user",
//	                          Share → weight, GrpTRES gres/gpu and cpu → Max quotas
//
// The parsers never panic and bound what a file may expand to (hostlists,
// GPU counts); each has a fuzz test.
package slurm
