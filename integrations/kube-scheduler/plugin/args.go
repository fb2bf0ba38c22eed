package plugin

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/gang"
)

// Args are the plugin's arguments, the `args` of its entry in a
// KubeSchedulerConfiguration profile's pluginConfig. Every field has a
// default (see SetDefaults); Validate checks them.
//
//	pluginConfig:
//	- name: GPUSched
//	  args:
//	    policy: fgd
//	    topologyLevels:
//	    - {name: spine, nodeLabel: topology.example.com/spine}
//	    - {name: tor, nodeLabel: topology.example.com/tor}
type Args struct {
	// Policy names the gpusched placement policy (gang.PolicyNames):
	// "topology" (topology-tiered, the default), "fgd", "best-fit",
	// "buddy", ... Pods and gangs alike are placed by it.
	Policy string `json:"policy,omitempty"`

	// GPUResource is the extended resource that counts whole GPUs.
	// Default "nvidia.com/gpu".
	GPUResource string `json:"gpuResource,omitempty"`

	// TopologyLevels are the network levels above nodes, outermost first
	// (like Kueue's Topology levels), each read from a node label. A node
	// without a level's label is alone in its own domain at that level.
	// Default none: gangs can then be required on one host or one NVLink
	// clique, not on a switch.
	TopologyLevels []TopologyLevel `json:"topologyLevels,omitempty"`

	// groups reads the Workload API's PodGroups (workload.go): set by
	// scheduler mode where scheduling.k8s.io/v1beta1 podgroups are
	// served; nil reads gangs from the gang labels alone.
	groups podGroupLookup

	// GPUCountLabel, GPUProductLabel and GPUCliqueLabel are the labels
	// NVIDIA GPU feature discovery puts on nodes. Defaults
	// "nvidia.com/gpu.count", "nvidia.com/gpu.product",
	// "nvidia.com/gpu.clique". Nodes with the same clique label value
	// ("<cluster UUID>.<clique ID>") form one multi-node NVLink domain.
	GPUCountLabel   string `json:"gpuCountLabel,omitempty"`
	GPUProductLabel string `json:"gpuProductLabel,omitempty"`
	GPUCliqueLabel  string `json:"gpuCliqueLabel,omitempty"`

	// MachineTemplates maps a GPU product label value to a gpusched machine
	// preset (topology.MachineNames: dgx-h100, dgx-a100, gb200-nvl72, ...)
	// whose intra-host topology (NUMA, PCIe switches, NVSwitch) the node
	// gets when its GPU count matches the preset's. Other nodes get a flat
	// host: every GPU under one PCIe host bridge. Entries given here are
	// added to (and override) DefaultMachineTemplates.
	MachineTemplates map[string]string `json:"machineTemplates,omitempty"`

	// Workload is the target workload distribution of the "fgd" policy:
	// the task shapes expected to arrive, with weights. Default: 1, 2, 4
	// and 8 GPUs with weights 4, 2, 1, 1.
	Workload []WorkloadClass `json:"workload,omitempty"`

	// GangLabel names the pod label whose value names a pod's gang (within
	// its namespace). Default "gpusched.io/gang".
	GangLabel string `json:"gangLabel,omitempty"`
	// GangSizeKey, GangMinKey and GangTopologyKey are pod labels or
	// annotations (the label wins) giving a gang's size (required), its
	// minimum (default: the size) and its required topology level
	// ("nvlink", "host" or a TopologyLevels name; default none).
	// GangPreferredKey lists preferred levels, comma separated.
	// Defaults "gpusched.io/gang-size", "gpusched.io/gang-min",
	// "gpusched.io/gang-topology", "gpusched.io/gang-topology-preferred".
	GangSizeKey      string `json:"gangSizeKey,omitempty"`
	GangMinKey       string `json:"gangMinKey,omitempty"`
	GangTopologyKey  string `json:"gangTopologyKey,omitempty"`
	GangPreferredKey string `json:"gangPreferredKey,omitempty"`
	// GangTimeoutSeconds is how long the reserved members of a gang wait
	// at Permit for the rest before the whole gang is given up. Default 60.
	GangTimeoutSeconds int32 `json:"gangTimeoutSeconds,omitempty"`

	// GPUIndicesAnnotation is the pod annotation the plugin writes before
	// binding: the chosen GPUs' indices on the node, comma separated
	// ("0,1,2,3"), for device plugins that honour it. Default
	// "gpusched.io/gpu-indices".
	GPUIndicesAnnotation string `json:"gpuIndicesAnnotation,omitempty"`

	// Mode is "placement" (the default: gpusched chooses nodes and GPUs
	// and places gangs whole; queueing, quotas and preemption stay with
	// kube-scheduler or Kueue) or "scheduler" (the plugin hosts a whole
	// gpusched Scheduler: queues, quotas, fair share, backfill with
	// reservations; pods wait until a gpusched cycle binds their job).
	Mode string `json:"mode,omitempty"`

	// The fields below are read in scheduler mode only.

	// QueueConfigFile names a YAML file holding the queue tree (package
	// queue's Config). QueueConfigMap ("namespace/name") names a ConfigMap
	// whose key "queues.yaml" holds it instead. Without either, one leaf
	// queue "default" with EASY backfill takes every job. The file is read
	// at start; the ConfigMap is watched, and an edit of it applies live
	// (Scheduler.Reconfigure): one that does not parse or cannot apply
	// keeps the tree in force, with a Warning event on the ConfigMap.
	QueueConfigFile string `json:"queueConfigFile,omitempty"`
	QueueConfigMap  string `json:"queueConfigMap,omitempty"`
	// RemovedQueueTarget is the leaf queue that takes the jobs of a queue
	// a live edit removes, pending and running (a running job stays where
	// it runs, charged to it). Empty (the default): a removed queue's
	// pending jobs are dropped from gpusched and their pods wait with the
	// reason "unknown queue" until relabelled or the queue comes back, and
	// an edit removing a queue that still has admitted or running jobs is
	// refused (the old tree stays, with a Warning event).
	RemovedQueueTarget string `json:"removedQueueTarget,omitempty"`
	// QueueLabel is the pod label naming a pod's leaf queue. Default
	// "gpusched.io/queue".
	QueueLabel string `json:"queueLabel,omitempty"`
	// DefaultQueue is the queue of pods without the label, unless
	// NamespaceQueues names one for their namespace. Default "default".
	DefaultQueue    string            `json:"defaultQueue,omitempty"`
	NamespaceQueues map[string]string `json:"namespaceQueues,omitempty"`
	// RuntimeKey is the pod annotation giving a job's runtime estimate (a
	// Go duration, "90m"), used for reservations and backfill. Default
	// "gpusched.io/runtime".
	RuntimeKey string `json:"runtimeKey,omitempty"`
	// CheckpointKey is the pod annotation the workload updates with the
	// time (RFC 3339) of its last checkpoint; preemption then counts only
	// the work since as lost. Default "gpusched.io/checkpointed-at".
	CheckpointKey string `json:"checkpointKey,omitempty"`
	// CycleIntervalMilliseconds is the least time between two gpusched
	// cycles: informer events are coalesced into at most one cycle per
	// interval. Default 200.
	CycleIntervalMilliseconds int32 `json:"cycleIntervalMilliseconds,omitempty"`
	// EventIntervalSeconds is the least time between two pending-reason
	// events about one pod while its reason stays the same. Default 60.
	EventIntervalSeconds int32 `json:"eventIntervalSeconds,omitempty"`
	// DeleteOnRecovery deletes the pods of a job that gpusched requeues
	// after a fault (its node NotReady or tainted NoExecute, its GPUs no
	// longer allocatable), for their controller to recreate; the job is
	// then placed again. Default false: the pods are left where they are
	// (kubelet or the taint manager decide), with a Warning event.
	DeleteOnRecovery bool `json:"deleteOnRecovery,omitempty"`
	// EvictionRetrySeconds is how long a victim whose eviction was refused
	// (a PodDisruptionBudget: the Eviction API's 429) is not chosen as a
	// victim again (gpusched.Config.EvictionRetry); the job it was for is
	// planned again without it meanwhile. Default 300.
	EvictionRetrySeconds int32 `json:"evictionRetrySeconds,omitempty"`
	// GPUUnavailableGraceSeconds is how long a node that reports
	// allocatable GPUs 0 while its capacity (or GPU count label) says it
	// has GPUs counts as temporarily unavailable (the device plugin
	// restarting and registering again): it takes no new pod, its
	// running pods keep their GPUs and are not recovered or deleted.
	// After it the node is a node without GPUs (it leaves; its jobs are
	// recovered). Default 300.
	GPUUnavailableGraceSeconds int32 `json:"gpuUnavailableGraceSeconds,omitempty"`
	// AdmitTimeoutSeconds releases a job gpusched bound whose pods are
	// not all bound within it (gpusched.Config.AdmitTimeout): its GPUs
	// and quota come back and it waits again. Default 600.
	AdmitTimeoutSeconds int32 `json:"admitTimeoutSeconds,omitempty"`
	// LiveAddress, when set (e.g. ":10270"), serves scheduler mode's live
	// page on that address (plain HTTP, read-only, live.go; the root
	// module's package livepage renders it; GET /state.json is its JSON):
	// the queues with their guarantee, usage and borrowing, the pending
	// jobs with their reasons, the cluster as cells per domain and host
	// coloured by occupancy and fragmentation. Default "": off.
	LiveAddress string `json:"liveAddress,omitempty"`
	// DRAMIGDeviceClass (scheduler mode) is the DeviceClass of MIG devices
	// (partitions of the driver's GPUs, dra_mig.go): gpusched allocates
	// requests of it, one MIG device per pod, the profile named by the
	// request's CEL selectors. Default "mig.nvidia.com".
	DRAMIGDeviceClass string `json:"draMIGDeviceClass,omitempty"`
	// DRADriver (scheduler mode) is the Dynamic Resource Allocation driver
	// whose ResourceSlices publish GPUs (dra.go); "none" turns DRA off.
	// Default "gpu.nvidia.com", NVIDIA's DRA driver for GPUs.
	DRADriver string `json:"draDriver,omitempty"`
	// DRADeviceClass (scheduler mode) is the DeviceClass of whole GPUs:
	// gpusched allocates the ResourceClaims whose requests all name it.
	// Default "gpu.nvidia.com".
	DRADeviceClass string `json:"draDeviceClass,omitempty"`
}

// Modes.
const (
	ModePlacement = "placement"
	ModeScheduler = "scheduler"
)

// TopologyLevel is one network level and the node label that names a node's
// domain at that level.
type TopologyLevel struct {
	// Name is the level's name as gangs require it ("tor", "spine",
	// "block"); not "nvlink", "fabric", "host", "node" or "cluster".
	Name string `json:"name"`
	// NodeLabel is the label whose value names the node's switch/domain.
	NodeLabel string `json:"nodeLabel"`
}

// WorkloadClass is one task shape of the FGD target workload.
type WorkloadClass struct {
	// GPUs is the number of whole GPUs of the task (1..256).
	GPUs int `json:"gpus"`
	// CPUMilli is its CPU request in milli-cores (optional).
	CPUMilli int64 `json:"cpuMilli,omitempty"`
	// Weight is its relative frequency (> 0).
	Weight float64 `json:"weight"`
}

// Defaults.
const (
	DefaultPolicy               = "topology"
	DefaultGPUResource          = "nvidia.com/gpu"
	DefaultGPUCountLabel        = "nvidia.com/gpu.count"
	DefaultGPUProductLabel      = "nvidia.com/gpu.product"
	DefaultGPUCliqueLabel       = "nvidia.com/gpu.clique"
	DefaultGangLabel            = "gpusched.io/gang"
	DefaultGangSizeKey          = "gpusched.io/gang-size"
	DefaultGangMinKey           = "gpusched.io/gang-min"
	DefaultGangTopologyKey      = "gpusched.io/gang-topology"
	DefaultGangPreferredKey     = "gpusched.io/gang-topology-preferred"
	DefaultGangTimeoutSeconds   = 60
	DefaultGPUIndicesAnnotation = "gpusched.io/gpu-indices"
	DefaultQueueLabel           = "gpusched.io/queue"
	DefaultQueueName            = "default"
	DefaultRuntimeKey           = "gpusched.io/runtime"
	DefaultCheckpointKey        = "gpusched.io/checkpointed-at"
	DefaultDRADriver            = "gpu.nvidia.com"
	DefaultDRADeviceClass       = "gpu.nvidia.com"
	DefaultCycleIntervalMillis  = 200
	DefaultEventIntervalSeconds = 60
	DefaultEvictionRetrySeconds = 300
	// DefaultGPUUnavailableGraceSeconds and DefaultAdmitTimeoutSeconds
	// default the Args fields of the same names.
	DefaultGPUUnavailableGraceSeconds = 300
	DefaultAdmitTimeoutSeconds        = 600
	// QueueConfigMapKey is the ConfigMap key holding the queue tree.
	QueueConfigMapKey = "queues.yaml"
)

// DefaultMachineTemplates maps GPU feature discovery product names of the
// common SXM systems to gpusched machine presets.
var DefaultMachineTemplates = map[string]string{
	"NVIDIA-A100-SXM4-40GB":   "dgx-a100",
	"NVIDIA-A100-SXM4-80GB":   "dgx-a100",
	"NVIDIA-H100-80GB-HBM3":   "dgx-h100",
	"NVIDIA-H200":             "dgx-h200",
	"NVIDIA-H200-141GB-HBM3e": "dgx-h200",
	"NVIDIA-B200":             "dgx-b200",
	"NVIDIA-GB200":            "gb200-nvl72",
}

// DefaultWorkload is the FGD target workload used when Args.Workload is empty.
func DefaultWorkload() []WorkloadClass {
	return []WorkloadClass{{GPUs: 1, Weight: 4}, {GPUs: 2, Weight: 2}, {GPUs: 4, Weight: 1}, {GPUs: 8, Weight: 1}}
}

// SetDefaults fills every empty field of a with its default.
func (a *Args) SetDefaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&a.Policy, DefaultPolicy)
	def(&a.GPUResource, DefaultGPUResource)
	def(&a.GPUCountLabel, DefaultGPUCountLabel)
	def(&a.GPUProductLabel, DefaultGPUProductLabel)
	def(&a.GPUCliqueLabel, DefaultGPUCliqueLabel)
	def(&a.GangLabel, DefaultGangLabel)
	def(&a.GangSizeKey, DefaultGangSizeKey)
	def(&a.GangMinKey, DefaultGangMinKey)
	def(&a.GangTopologyKey, DefaultGangTopologyKey)
	def(&a.GangPreferredKey, DefaultGangPreferredKey)
	def(&a.GPUIndicesAnnotation, DefaultGPUIndicesAnnotation)
	def(&a.Mode, ModePlacement)
	def(&a.QueueLabel, DefaultQueueLabel)
	def(&a.DefaultQueue, DefaultQueueName)
	def(&a.RuntimeKey, DefaultRuntimeKey)
	def(&a.CheckpointKey, DefaultCheckpointKey)
	def(&a.DRADriver, DefaultDRADriver)
	def(&a.DRADeviceClass, DefaultDRADeviceClass)
	if a.CycleIntervalMilliseconds == 0 {
		a.CycleIntervalMilliseconds = DefaultCycleIntervalMillis
	}
	if a.EventIntervalSeconds == 0 {
		a.EventIntervalSeconds = DefaultEventIntervalSeconds
	}
	if a.GangTimeoutSeconds == 0 {
		a.GangTimeoutSeconds = DefaultGangTimeoutSeconds
	}
	if a.EvictionRetrySeconds == 0 {
		a.EvictionRetrySeconds = DefaultEvictionRetrySeconds
	}
	if a.GPUUnavailableGraceSeconds == 0 {
		a.GPUUnavailableGraceSeconds = DefaultGPUUnavailableGraceSeconds
	}
	if a.AdmitTimeoutSeconds == 0 {
		a.AdmitTimeoutSeconds = DefaultAdmitTimeoutSeconds
	}
	mt := make(map[string]string, len(DefaultMachineTemplates)+len(a.MachineTemplates))
	for k, v := range DefaultMachineTemplates {
		mt[k] = v
	}
	for k, v := range a.MachineTemplates {
		mt[k] = v
	}
	a.MachineTemplates = mt
	if len(a.Workload) == 0 {
		a.Workload = DefaultWorkload()
	}
}

// CycleInterval returns CycleIntervalMilliseconds as a duration.
func (a *Args) CycleInterval() time.Duration {
	return time.Duration(a.CycleIntervalMilliseconds) * time.Millisecond
}

// EventInterval returns EventIntervalSeconds as a duration.
func (a *Args) EventInterval() time.Duration {
	return time.Duration(a.EventIntervalSeconds) * time.Second
}

// EvictionRetry returns EvictionRetrySeconds as a duration.
func (a *Args) EvictionRetry() time.Duration {
	return time.Duration(a.EvictionRetrySeconds) * time.Second
}

// GPUUnavailableGrace returns GPUUnavailableGraceSeconds as a duration.
func (a *Args) GPUUnavailableGrace() time.Duration {
	return time.Duration(a.GPUUnavailableGraceSeconds) * time.Second
}

// AdmitTimeout returns AdmitTimeoutSeconds as a duration.
func (a *Args) AdmitTimeout() time.Duration {
	return time.Duration(a.AdmitTimeoutSeconds) * time.Second
}

// GangTimeout returns GangTimeoutSeconds as a duration.
func (a *Args) GangTimeout() time.Duration { return time.Duration(a.GangTimeoutSeconds) * time.Second }

var reservedLevels = []string{"nvlink", "fabric", "host", "node", "cluster"}

// Validate checks defaulted args and returns every problem, each naming its
// field (e.g. "topologyLevels[1].nodeLabel").
func (a *Args) Validate() error {
	var errs field.ErrorList
	if !slices.Contains(gang.PolicyNames(), a.Policy) {
		errs = append(errs, field.NotSupported(field.NewPath("policy"), a.Policy, gang.PolicyNames()))
	}
	qualified := func(p *field.Path, v string) {
		for _, msg := range validation.IsQualifiedName(v) {
			errs = append(errs, field.Invalid(p, v, msg))
		}
	}
	qualified(field.NewPath("gpuResource"), a.GPUResource)
	for _, f := range []struct {
		name string
		v    string
	}{
		{"gpuCountLabel", a.GPUCountLabel}, {"gpuProductLabel", a.GPUProductLabel},
		{"gpuCliqueLabel", a.GPUCliqueLabel}, {"gangLabel", a.GangLabel},
		{"gangSizeKey", a.GangSizeKey}, {"gangMinKey", a.GangMinKey},
		{"gangTopologyKey", a.GangTopologyKey}, {"gangPreferredKey", a.GangPreferredKey},
		{"gpuIndicesAnnotation", a.GPUIndicesAnnotation},
		{"queueLabel", a.QueueLabel}, {"runtimeKey", a.RuntimeKey}, {"checkpointKey", a.CheckpointKey},
	} {
		qualified(field.NewPath(f.name), f.v)
	}
	names := map[string]bool{}
	labels := map[string]bool{}
	for i, l := range a.TopologyLevels {
		p := field.NewPath("topologyLevels").Index(i)
		switch {
		case l.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "a level needs a name"))
		case slices.Contains(reservedLevels, l.Name):
			errs = append(errs, field.Invalid(p.Child("name"), l.Name, "is a built-in level name"))
		case strings.ContainsAny(l.Name, "/[], \t"):
			errs = append(errs, field.Invalid(p.Child("name"), l.Name, "may not contain '/', '[', ']', ',' or spaces"))
		case names[l.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), l.Name))
		}
		names[l.Name] = true
		if l.NodeLabel == "" {
			errs = append(errs, field.Required(p.Child("nodeLabel"), "a level is read from a node label"))
		} else {
			qualified(p.Child("nodeLabel"), l.NodeLabel)
			if labels[l.NodeLabel] {
				errs = append(errs, field.Duplicate(p.Child("nodeLabel"), l.NodeLabel))
			}
			labels[l.NodeLabel] = true
		}
	}
	if a.GangTimeoutSeconds < 1 || a.GangTimeoutSeconds > 3600 {
		errs = append(errs, field.Invalid(field.NewPath("gangTimeoutSeconds"), a.GangTimeoutSeconds, "must be between 1 and 3600"))
	}
	for k, v := range a.MachineTemplates {
		if !slices.Contains(machineNames(), v) {
			errs = append(errs, field.NotSupported(field.NewPath("machineTemplates").Key(k), v, machineNames()))
		}
	}
	for i, w := range a.Workload {
		p := field.NewPath("workload").Index(i)
		if w.GPUs < 1 || w.GPUs > 256 {
			errs = append(errs, field.Invalid(p.Child("gpus"), w.GPUs, "must be between 1 and 256"))
		}
		if w.CPUMilli < 0 {
			errs = append(errs, field.Invalid(p.Child("cpuMilli"), w.CPUMilli, "must not be negative"))
		}
		if !(w.Weight > 0) || w.Weight > 1e12 {
			errs = append(errs, field.Invalid(p.Child("weight"), w.Weight, "must be positive"))
		}
	}
	switch a.Mode {
	case ModePlacement, ModeScheduler:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("mode"), a.Mode, []string{ModePlacement, ModeScheduler}))
	}
	if a.QueueConfigFile != "" && a.QueueConfigMap != "" {
		errs = append(errs, field.Invalid(field.NewPath("queueConfigMap"), a.QueueConfigMap, "give queueConfigFile or queueConfigMap, not both"))
	}
	if a.QueueConfigMap != "" {
		ns, name, ok := strings.Cut(a.QueueConfigMap, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("queueConfigMap"), a.QueueConfigMap, "want NAMESPACE/NAME"))
		}
	}
	if a.CycleIntervalMilliseconds < 1 || a.CycleIntervalMilliseconds > 60000 {
		errs = append(errs, field.Invalid(field.NewPath("cycleIntervalMilliseconds"), a.CycleIntervalMilliseconds, "must be between 1 and 60000"))
	}
	if a.EventIntervalSeconds < 1 || a.EventIntervalSeconds > 86400 {
		errs = append(errs, field.Invalid(field.NewPath("eventIntervalSeconds"), a.EventIntervalSeconds, "must be between 1 and 86400"))
	}
	if a.EvictionRetrySeconds < 1 || a.EvictionRetrySeconds > 86400 {
		errs = append(errs, field.Invalid(field.NewPath("evictionRetrySeconds"), a.EvictionRetrySeconds, "must be between 1 and 86400"))
	}
	if a.GPUUnavailableGraceSeconds < 1 || a.GPUUnavailableGraceSeconds > 86400 {
		errs = append(errs, field.Invalid(field.NewPath("gpuUnavailableGraceSeconds"), a.GPUUnavailableGraceSeconds, "must be between 1 and 86400"))
	}
	if a.AdmitTimeoutSeconds < 1 || a.AdmitTimeoutSeconds > 86400 {
		errs = append(errs, field.Invalid(field.NewPath("admitTimeoutSeconds"), a.AdmitTimeoutSeconds, "must be between 1 and 86400"))
	}
	if a.LiveAddress != "" {
		if _, port, err := net.SplitHostPort(a.LiveAddress); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("liveAddress"), a.LiveAddress, err.Error()))
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			errs = append(errs, field.Invalid(field.NewPath("liveAddress"), a.LiveAddress, "the port must be a number from 0 to 65535"))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s args: %w", Name, errs.ToAggregate())
}

// Distribution returns the FGD target workload of a.
func (a *Args) Distribution() frag.Distribution {
	d := frag.Distribution{Classes: make([]frag.Class, len(a.Workload))}
	for i, w := range a.Workload {
		d.Classes[i] = frag.Class{Task: frag.Task{GPUs: w.GPUs, CPUMilli: w.CPUMilli}, Weight: w.Weight}
	}
	return d
}

// DecodeArgs decodes the plugin's args from a scheduler configuration (nil
// means all defaults), fills defaults and validates them.
func DecodeArgs(obj runtime.Object) (*Args, error) {
	a := &Args{}
	switch o := obj.(type) {
	case nil:
	case *Args:
		*a = *o
	default:
		if err := frameworkruntime.DecodeInto(obj, a); err != nil {
			return nil, fmt.Errorf("%s args: %w", Name, err)
		}
	}
	a.SetDefaults()
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// DeepCopyObject and GetObjectKind make *Args a runtime.Object, so that code
// building a scheduler in Go can pass typed args directly.
func (a *Args) DeepCopyObject() runtime.Object {
	if a == nil {
		return nil
	}
	c := *a
	c.TopologyLevels = slices.Clone(a.TopologyLevels)
	c.Workload = slices.Clone(a.Workload)
	if a.NamespaceQueues != nil {
		c.NamespaceQueues = make(map[string]string, len(a.NamespaceQueues))
		for k, v := range a.NamespaceQueues {
			c.NamespaceQueues[k] = v
		}
	}
	if a.MachineTemplates != nil {
		c.MachineTemplates = make(map[string]string, len(a.MachineTemplates))
		for k, v := range a.MachineTemplates {
			c.MachineTemplates[k] = v
		}
	}
	return &c
}

// GetObjectKind returns an empty kind: Args are not registered in a scheme.
func (a *Args) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
