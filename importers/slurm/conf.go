package slurm

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/topology"
)

// Conf is what the importer takes from slurm.conf.
type Conf struct {
	// File is the name the file was read under (for messages).
	File string
	// ClusterName is ClusterName, or "" when absent.
	ClusterName string
	// Nodes are the nodes in file order, NodeName ranges expanded.
	Nodes []Node
	// Partitions are the partitions in file order.
	Partitions []Partition
	// SelectType is e.g. "select/cons_tres"; SelectTypeParameters its
	// parameters (e.g. "CR_Core_Memory").
	SelectType, SelectTypeParameters string
	// SchedulerType is "sched/backfill" (Slurm's default) or "sched/builtin".
	SchedulerType string
	// Sched are the SchedulerParameters gpusched models.
	Sched SchedulerParams
	// PriorityType is "priority/multifactor" or "priority/basic" (the default).
	PriorityType string
	// Priority are the multifactor settings.
	Priority PriorityParams
	// TopologyPlugin is "topology/tree", "topology/block", "topology/flat"
	// (or "topology/none"), or "" when absent.
	TopologyPlugin string
	// DefMemPerCPU, DefMemPerGPU and DefMemPerNode are the default memory of
	// jobs that ask for none, in MiB (0: not set).
	DefMemPerCPU, DefMemPerGPU, DefMemPerNode int64
}

// Node is one node of slurm.conf.
type Node struct {
	Name       string
	Line       int   // the NodeName line that declared it
	CPUs       int   // CPUs, or Boards×Sockets×CoresPerSocket×ThreadsPerCore, or 1
	RealMemory int64 // MiB; Slurm's default is 1
	Gres       []Gres
	Weight     int64 // scheduling weight; lower is used first (Slurm's default 1)
	Features   string
}

// Gres is one entry of a node's Gres= list: name[:type][:count].
type Gres struct {
	Name, Type string
	Count      int64
}

// GPUs returns the node's GPU count (Gres entries named gpu) and the
// distinct GPU types in order of appearance ("" for untyped).
func (n Node) GPUs() (int64, []string) {
	var c int64
	var types []string
	for _, g := range n.Gres {
		if g.Name != "gpu" {
			continue
		}
		c += g.Count
		if !slices.Contains(types, g.Type) {
			types = append(types, g.Type)
		}
	}
	return c, types
}

// Partition is one partition of slurm.conf.
type Partition struct {
	Name        string
	Line        int
	Nodes       []string // expanded; "ALL" expands to every node
	Default     bool
	State       string        // UP (default), DOWN, DRAIN, INACTIVE
	MaxTime     time.Duration // 0: INFINITE
	DefaultTime time.Duration // 0: MaxTime
}

// SchedulerParams are the SchedulerParameters gpusched models. Zero fields
// mean Slurm's defaults (see DefaultSchedulerParams).
type SchedulerParams struct {
	BfWindow      time.Duration // bf_window (minutes in the file; Slurm's default 1 day)
	BfInterval    time.Duration // bf_interval (seconds; default 30 s)
	BfResolution  time.Duration // bf_resolution (seconds; default 60 s)
	SchedInterval time.Duration // sched_interval (seconds; default 60 s)
	BfMaxJobTest  int           // bf_max_job_test (default 500)
	QueueDepth    int           // default_queue_depth (default 100)
	BfContinue    bool          // bf_continue
}

// DefaultSchedulerParams are Slurm's defaults for SchedulerParams.
var DefaultSchedulerParams = SchedulerParams{BfWindow: 24 * time.Hour, BfInterval: 30 * time.Second,
	BfResolution: time.Minute, SchedInterval: time.Minute, BfMaxJobTest: 500, QueueDepth: 100}

// PriorityParams are the multifactor priority settings.
type PriorityParams struct {
	WeightAge, WeightFairshare, WeightJobSize, WeightPartition, WeightQOS, WeightAssoc int64
	WeightTRES                                                                         string
	MaxAge                                                                             time.Duration // PriorityMaxAge (default 7 days)
	DecayHalfLife                                                                      time.Duration // PriorityDecayHalfLife (default 7 days)
	NoDecay                                                                            bool          // PriorityDecayHalfLife=0: usage never decays
	CalcPeriod                                                                         time.Duration // PriorityCalcPeriod (default 5 minutes)
	FavorSmall                                                                         bool
	Flags                                                                              string
}

// Limits on what a file may declare.
const (
	// MaxNodes bounds the nodes of a site (all NodeName lines together).
	MaxNodes = 1 << 18
	// MaxGPUsPerNode bounds the GPUs of one node.
	MaxGPUsPerNode = 1024
)

// plumbing are slurm.conf settings that configure daemons, paths, logging,
// accounting storage or job launch: they do not change what gpusched
// models, so they are accepted without a warning.
var plumbing = []string{"AccountingStorageHost", "AccountingStoragePort", "AccountingStorageType", "AccountingStorageTRES",
	"AccountingStorageEnforce", "AccountingStorageUser", "AccountingStoragePass", "AccountingStorageExternalHost", "AccountingStorageParameters",
	"AuthType", "AuthInfo", "AuthAltTypes", "AuthAltParameters", "BackupController", "BackupAddr", "CredType", "ControlMachine", "ControlAddr",
	"DebugFlags", "EpilogSlurmctld", "Epilog", "Prolog", "PrologSlurmctld", "PrologFlags", "GresTypes", "InactiveLimit", "JobAcctGatherType",
	"JobAcctGatherFrequency", "JobAcctGatherParams", "JobCompType", "JobCompLoc", "JobCompHost", "JobCompPort", "JobCompUser", "JobCompPass",
	"KillWait", "LaunchParameters", "LaunchType", "MailProg", "MinJobAge", "MaxJobCount", "MpiDefault", "MpiParams", "PluginDir", "PlugStackConfig",
	"ProctrackType", "PropagateResourceLimits", "PropagateResourceLimitsExcept", "ReturnToService", "SlurmctldHost", "SlurmctldPort",
	"SlurmctldPidFile", "SlurmctldLogFile", "SlurmctldDebug", "SlurmctldTimeout", "SlurmctldParameters", "SlurmdPort", "SlurmdPidFile",
	"SlurmdLogFile", "SlurmdDebug", "SlurmdSpoolDir", "SlurmdTimeout", "SlurmdParameters", "SlurmdUser", "SlurmUser", "StateSaveLocation",
	"SwitchType", "TaskPlugin", "TaskProlog", "TaskEpilog", "TaskPluginParam", "TmpFS", "UnkillableStepTimeout", "Waittime", "MessageTimeout",
	"CommunicationParameters", "CliFilterPlugins", "JobSubmitPlugins", "HealthCheckProgram", "HealthCheckInterval", "HealthCheckNodeState",
	"SlurmSchedLogFile", "SlurmSchedLogLevel", "LogTimeFormat", "AcctGatherEnergyType", "AcctGatherNodeFreq", "AcctGatherInterconnectType",
	"AcctGatherFilesystemType", "AcctGatherProfileType", "CoreSpecPlugin", "MCSPlugin", "MCSParameters", "SrunPortRange", "EioTimeout",
	"BatchStartTimeout", "CompleteWait", "GetEnvTimeout", "GroupUpdateForce", "GroupUpdateTime", "TCPTimeout", "TreeWidth", "VSizeFactor",
	"ResvOverRun", "MaxStepCount", "MaxTasksPerNode", "FirstJobId", "MaxArraySize", "RebootProgram", "ResumeProgram", "SuspendProgram",
	"ResumeTimeout", "SuspendTimeout", "SuspendTime", "ResumeRate", "SuspendRate", "JobContainerType", "ClusterName", "TopologyParam",
	"RoutePlugin", "NodeFeaturesPlugins", "X11Parameters", "HashPlugin", "TLSType", "CertmgrType", "DependencyParameters", "JobRequeue",
	"OverTimeLimit", "KillOnBadExit", "PriorityUsageResetPeriod", "AccountingStoreFlags", "MinJobAge"}

// nodePlumbing are NodeName keys that say how to reach a node, not what it has.
var nodePlumbing = []string{"NodeHostname", "NodeAddr", "Port", "State", "Reason", "BcastAddr", "CpuBind", "MemSpecLimit", "CoreSpecCount", "CpuSpecList", "TmpDisk"}

// partitionPlumbing are PartitionName keys that do not change placement or order.
var partitionPlumbing = []string{"AllowGroups", "AllowAccounts", "AllowQos", "DenyAccounts", "DenyQos", "Hidden", "RootOnly", "ReqResv",
	"DisableRootJobs", "ExclusiveUser", "GraceTime", "LLN", "MaxCPUsPerNode", "MaxMemPerCPU", "MaxMemPerNode", "MaxNodes", "MinNodes",
	"DefMemPerCPU", "DefMemPerNode", "DefMemPerGPU", "DefCpuPerGPU", "QOS", "SelectTypeParameters", "AllocNodes", "Alternate", "PowerDownOnIdle", "TRESBillingWeights"}

func foldIn(list []string, k string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(s, k) })
}

// ReadConf reads slurm.conf from path (see ParseConf).
func ReadConf(path string) (*Conf, []Warning, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	return ParseConf(b, path)
}

func readFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxFileBytes {
		return nil, errAt(path, 0, "", "file is larger than %d bytes", MaxFileBytes)
	}
	return os.ReadFile(path)
}

// ParseConf parses the text of a slurm.conf. name is used in messages.
// Include lines are not followed (a warning says so): give the importer the
// whole configuration in one file, or concatenate the included files.
func ParseConf(data []byte, name string) (*Conf, []Warning, error) {
	lines, err := lexLines(data, name)
	if err != nil {
		return nil, nil, err
	}
	c := &Conf{File: name}
	var w warnings
	nodeDef := Node{CPUs: 0, RealMemory: 1, Weight: 1}
	var nodeDefLine line
	partDef := Partition{State: "UP"}
	seen := map[string]int{}
	for _, l := range lines {
		first := l.Pairs[0]
		switch {
		case strings.EqualFold(first.Key, "NodeName"):
			if strings.EqualFold(first.Value, "DEFAULT") {
				nodeDefLine = l
				if err := nodeFields(&nodeDef, l, name, &w); err != nil {
					return nil, nil, err
				}
				continue
			}
			n := nodeDef
			n.Gres = slices.Clone(nodeDef.Gres)
			_ = nodeDefLine
			if err := nodeFields(&n, l, name, &w); err != nil {
				return nil, nil, err
			}
			names, err := topology.ExpandNames(first.Value)
			if err != nil {
				return nil, nil, errAt(name, l.No, first.Key, "%v", err)
			}
			if len(c.Nodes)+len(names) > MaxNodes {
				return nil, nil, errAt(name, l.No, first.Key, "more than %d nodes", MaxNodes)
			}
			for _, nm := range names {
				if prev, ok := seen[nm]; ok {
					return nil, nil, errAt(name, l.No, first.Key, "node %s already declared on line %d", nm, prev)
				}
				seen[nm] = l.No
				n.Name, n.Line = nm, l.No
				c.Nodes = append(c.Nodes, n)
			}
		case strings.EqualFold(first.Key, "PartitionName"):
			p := partDef
			if err := partitionFields(&p, l, name, &w); err != nil {
				return nil, nil, err
			}
			if strings.EqualFold(first.Value, "DEFAULT") {
				partDef = p
				continue
			}
			p.Name, p.Line = first.Value, l.No
			c.Partitions = append(c.Partitions, p)
		case strings.EqualFold(first.Key, "Include"), strings.EqualFold(first.Key, "include") && first.Value == "":
			w.add(name, l.No, "Include", "included files are not read; concatenate them into the file given to the importer")
		case strings.EqualFold(first.Key, "NodeSet"), strings.EqualFold(first.Key, "DownNodes"), strings.EqualFold(first.Key, "FrontendName"):
			w.add(name, l.No, first.Key, "not modelled (ignored)")
		default:
			for _, p := range l.Pairs {
				if err := c.global(p, l.No, name, &w); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	if len(c.Nodes) == 0 {
		return nil, nil, errAt(name, 0, "NodeName", "no nodes declared")
	}
	// Partition node lists, now that every node is known.
	for i := range c.Partitions {
		p := &c.Partitions[i]
		for _, nm := range p.Nodes {
			if _, ok := seen[nm]; !ok && nm != "ALL" {
				return nil, nil, errAt(name, p.Line, "Nodes", "partition %s names node %s, which no NodeName line declares", p.Name, nm)
			}
		}
		if len(p.Nodes) == 1 && strings.EqualFold(p.Nodes[0], "ALL") {
			p.Nodes = p.Nodes[:0]
			for _, n := range c.Nodes {
				p.Nodes = append(p.Nodes, n.Name)
			}
		}
	}
	c.checkModel(&w)
	return c, w, nil
}

// checkModel warns about what the nodes and partitions say that gpusched
// does not model.
func (c *Conf) checkModel(w *warnings) {
	weights := map[int64]bool{}
	for _, n := range c.Nodes {
		weights[n.Weight] = true
	}
	if len(weights) > 1 {
		w.add(c.File, 0, "Weight", "nodes have different Weight values; gpusched does not order hosts by weight")
	}
	if len(c.Partitions) > 1 {
		w.add(c.File, c.Partitions[1].Line, "PartitionName", "%d partitions; gpusched has one pool of hosts (partitions are not modelled; their union is imported)", len(c.Partitions))
	}
	for _, p := range c.Partitions {
		if len(p.Nodes) < len(c.Nodes) && len(c.Partitions) == 1 {
			w.add(c.File, p.Line, "Nodes", "partition %s has %d of %d nodes; every node is imported", p.Name, len(p.Nodes), len(c.Nodes))
		}
	}
}

func nodeFields(n *Node, l line, file string, w *warnings) error {
	var boards, sockets, cores, threads int64 = 1, 1, 1, 1
	topoGiven := false
	for _, p := range l.Pairs[1:] {
		k := p.Key
		var err error
		switch {
		case strings.EqualFold(k, "CPUs"), strings.EqualFold(k, "Procs"):
			var v int64
			v, err = posInt(p.Value, 1<<20)
			n.CPUs = int(v)
		case strings.EqualFold(k, "RealMemory"):
			n.RealMemory, err = posInt(p.Value, 1<<50)
		case strings.EqualFold(k, "Boards"):
			boards, err = posInt(p.Value, 1<<10)
			topoGiven = true
		case strings.EqualFold(k, "Sockets"), strings.EqualFold(k, "SocketsPerBoard"):
			sockets, err = posInt(p.Value, 1<<10)
			topoGiven = true
		case strings.EqualFold(k, "CoresPerSocket"):
			cores, err = posInt(p.Value, 1<<12)
			topoGiven = true
		case strings.EqualFold(k, "ThreadsPerCore"):
			threads, err = posInt(p.Value, 1<<8)
			topoGiven = true
		case strings.EqualFold(k, "Gres"):
			n.Gres, err = parseNodeGres(p.Value)
		case strings.EqualFold(k, "Weight"):
			n.Weight, err = strconv.ParseInt(p.Value, 10, 64)
		case strings.EqualFold(k, "Feature"), strings.EqualFold(k, "Features"), strings.EqualFold(k, "AvailableFeatures"):
			n.Features = p.Value
			if p.Value != "" {
				w.add(file, l.No, k, "node features are not modelled (constraints on them are not checked)")
			}
		case foldIn(nodePlumbing, k):
		default:
			w.add(file, l.No, k, "NodeName setting not understood (ignored)")
		}
		if err != nil {
			return errAt(file, l.No, k, "%q: %v", p.Value, err)
		}
	}
	if topoGiven {
		if _, ok := l.get("CPUs"); !ok {
			if _, ok := l.get("Procs"); !ok {
				n.CPUs = int(boards * sockets * cores * threads)
			}
		}
	}
	if n.CPUs == 0 && !strings.EqualFold(l.Pairs[0].Value, "DEFAULT") {
		n.CPUs = 1
	}
	if c, _ := n.GPUs(); c > MaxGPUsPerNode {
		return errAt(file, l.No, "Gres", "%d GPUs on one node; at most %d", c, MaxGPUsPerNode)
	}
	return nil
}

// parseNodeGres parses "gpu:h100:8,gpu:a100:2(S:0-1),mps:100".
func parseNodeGres(s string) ([]Gres, error) {
	if s == "" || strings.EqualFold(s, "(null)") {
		return nil, nil
	}
	var out []Gres
	for _, e := range splitOutside(s, ',') {
		if i := strings.IndexByte(e, '('); i >= 0 {
			e = e[:i]
		}
		parts := strings.Split(e, ":")
		g := Gres{Name: parts[0], Count: 1}
		if g.Name == "" {
			return nil, errorf("empty gres name in %q", s)
		}
		switch len(parts) {
		case 1:
		case 2:
			if c, err := countSuffix(parts[1]); err == nil {
				g.Count = c
			} else {
				g.Type = parts[1]
			}
		case 3:
			g.Type = parts[1]
			c, err := countSuffix(parts[2])
			if err != nil {
				return nil, errorf("gres %q: count %q: %v", e, parts[2], err)
			}
			g.Count = c
		default:
			return nil, errorf("gres %q: want name[:type][:count]", e)
		}
		out = append(out, g)
	}
	return out, nil
}

// splitOutside splits s at sep outside parentheses and brackets.
func splitOutside(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case sep:
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// countSuffix parses a count with an optional K, M, G or T suffix (×1024ⁿ).
func countSuffix(s string) (int64, error) {
	mult := int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			s = s[:len(s)-1]
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > (1<<50)/mult {
		return 0, errorf("want a non-negative count")
	}
	return v * mult, nil
}

func posInt(s string, max int64) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > max {
		return 0, errorf("want an integer in 0..%d", max)
	}
	return v, nil
}

func partitionFields(p *Partition, l line, file string, w *warnings) error {
	for _, kv := range l.Pairs[1:] {
		k := kv.Key
		var err error
		switch {
		case strings.EqualFold(k, "Nodes"):
			if strings.EqualFold(kv.Value, "ALL") {
				p.Nodes = []string{"ALL"}
				continue
			}
			p.Nodes, err = topology.ExpandNames(kv.Value)
		case strings.EqualFold(k, "Default"):
			p.Default = strings.EqualFold(kv.Value, "YES")
		case strings.EqualFold(k, "State"):
			p.State = strings.ToUpper(kv.Value)
		case strings.EqualFold(k, "MaxTime"):
			p.MaxTime, err = parseSlurmTime(kv.Value)
		case strings.EqualFold(k, "DefaultTime"):
			p.DefaultTime, err = parseSlurmTime(kv.Value)
		case strings.EqualFold(k, "OverSubscribe"), strings.EqualFold(k, "Shared"):
			if v := strings.ToUpper(kv.Value); v != "NO" && v != "EXCLUSIVE" {
				w.add(file, l.No, k, "%s: oversubscription is not modelled (GPUs are never shared between jobs here)", kv.Value)
			}
		case strings.EqualFold(k, "PriorityTier"), strings.EqualFold(k, "PriorityJobFactor"), strings.EqualFold(k, "PreemptMode"),
			strings.EqualFold(k, "MaxCPUsPerSocket"), strings.EqualFold(k, "ExclusiveTopo"), strings.EqualFold(k, "SuspendTime"),
			strings.EqualFold(k, "ResumeTimeout"), strings.EqualFold(k, "SuspendTimeout"), strings.EqualFold(k, "OverTimeLimit"), strings.EqualFold(k, "Topology"):
			w.add(file, l.No, k, "partition setting not modelled (ignored)")
		case foldIn(partitionPlumbing, k):
		default:
			w.add(file, l.No, k, "PartitionName setting not understood (ignored)")
		}
		if err != nil {
			return errAt(file, l.No, k, "%q: %v", kv.Value, err)
		}
	}
	return nil
}

func (c *Conf) global(p pair, no int, file string, w *warnings) error {
	k, v := p.Key, p.Value
	var err error
	switch {
	case strings.EqualFold(k, "ClusterName"):
		c.ClusterName = v
	case strings.EqualFold(k, "SelectType"):
		c.SelectType = v
		if v != "select/cons_tres" && v != "select/cons_res" && v != "select/linear" {
			w.add(file, no, k, "%s: gpusched models select/cons_tres (per-GPU, per-core allocation)", v)
		}
	case strings.EqualFold(k, "SelectTypeParameters"):
		c.SelectTypeParameters = v
	case strings.EqualFold(k, "SchedulerType"):
		c.SchedulerType = v
		if v != "sched/backfill" && v != "sched/builtin" {
			w.add(file, no, k, "%s: not modelled; sched/backfill assumed", v)
		}
	case strings.EqualFold(k, "SchedulerParameters"):
		err = c.schedParams(v, no, file, w)
	case strings.EqualFold(k, "PriorityType"):
		c.PriorityType = v
	case strings.EqualFold(k, "PriorityWeightAge"):
		c.Priority.WeightAge, err = posInt(v, 1<<32)
	case strings.EqualFold(k, "PriorityWeightFairshare"):
		c.Priority.WeightFairshare, err = posInt(v, 1<<32)
	case strings.EqualFold(k, "PriorityWeightJobSize"):
		c.Priority.WeightJobSize, err = posInt(v, 1<<32)
	case strings.EqualFold(k, "PriorityWeightPartition"):
		c.Priority.WeightPartition, err = posInt(v, 1<<32)
	case strings.EqualFold(k, "PriorityWeightQOS"):
		c.Priority.WeightQOS, err = posInt(v, 1<<32)
	case strings.EqualFold(k, "PriorityWeightAssoc"):
		c.Priority.WeightAssoc, err = posInt(v, 1<<32)
	case strings.EqualFold(k, "PriorityWeightTRES"):
		c.Priority.WeightTRES = v
	case strings.EqualFold(k, "PriorityMaxAge"):
		c.Priority.MaxAge, err = parseSlurmTime(v)
	case strings.EqualFold(k, "PriorityDecayHalfLife"):
		c.Priority.DecayHalfLife, err = parseSlurmTime(v)
		c.Priority.NoDecay = err == nil && c.Priority.DecayHalfLife == 0
	case strings.EqualFold(k, "PriorityCalcPeriod"):
		c.Priority.CalcPeriod, err = parseSlurmTime(v)
	case strings.EqualFold(k, "PriorityFavorSmall"):
		c.Priority.FavorSmall = strings.EqualFold(v, "YES")
	case strings.EqualFold(k, "PriorityFlags"):
		c.Priority.Flags = v
	case strings.EqualFold(k, "TopologyPlugin"):
		c.TopologyPlugin = v
		switch v {
		case "topology/tree", "topology/block", "topology/flat", "topology/none", "topology/default":
		default:
			w.add(file, no, k, "%s: not modelled; the network is imported flat", v)
		}
	case strings.EqualFold(k, "DefMemPerCPU"):
		c.DefMemPerCPU, err = posInt(v, 1<<50)
	case strings.EqualFold(k, "DefMemPerGPU"):
		c.DefMemPerGPU, err = posInt(v, 1<<50)
	case strings.EqualFold(k, "DefMemPerNode"):
		c.DefMemPerNode, err = posInt(v, 1<<50)
	case strings.EqualFold(k, "PreemptType"), strings.EqualFold(k, "PreemptMode"), strings.EqualFold(k, "FairShareDampeningFactor"),
		strings.EqualFold(k, "PriorityParameters"), strings.EqualFold(k, "PrioritySiteFactorPlugin"), strings.EqualFold(k, "EnforcePartLimits"),
		strings.EqualFold(k, "MaxMemPerCPU"), strings.EqualFold(k, "MaxMemPerNode"), strings.EqualFold(k, "DefCpuPerGPU"), strings.EqualFold(k, "DefMemPerGPU"):
		w.add(file, no, k, "not modelled (ignored)")
	case foldIn(plumbing, k):
	default:
		w.add(file, no, k, "setting not understood (ignored)")
	}
	if err != nil {
		return errAt(file, no, k, "%q: %v", v, err)
	}
	return nil
}

func (c *Conf) schedParams(v string, no int, file string, w *warnings) error {
	for _, kv := range strings.Split(v, ",") {
		if kv == "" {
			continue
		}
		k, val, _ := strings.Cut(kv, "=")
		num := func(max int64) (int64, error) {
			n, err := posInt(val, max)
			if err != nil {
				return 0, errAt(file, no, "SchedulerParameters", "%s=%q: %v", k, val, err)
			}
			return n, nil
		}
		var n int64
		var err error
		switch k {
		case "bf_window":
			n, err = num(1 << 30)
			c.Sched.BfWindow = time.Duration(n) * time.Minute
		case "bf_interval":
			n, err = num(1 << 30)
			c.Sched.BfInterval = time.Duration(n) * time.Second
		case "bf_resolution":
			n, err = num(1 << 30)
			c.Sched.BfResolution = time.Duration(n) * time.Second
		case "sched_interval":
			n, err = num(1 << 30)
			c.Sched.SchedInterval = time.Duration(n) * time.Second
		case "bf_max_job_test":
			n, err = num(1 << 30)
			c.Sched.BfMaxJobTest = int(n)
		case "default_queue_depth":
			n, err = num(1 << 30)
			c.Sched.QueueDepth = int(n)
		case "bf_continue":
			c.Sched.BfContinue = true
		default:
			w.add(file, no, "SchedulerParameters", "%s: not modelled (ignored)", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Scheduler returns c.Sched with Slurm's defaults for the fields left zero.
func (c *Conf) Scheduler() SchedulerParams {
	s, d := c.Sched, DefaultSchedulerParams
	if s.BfWindow == 0 {
		s.BfWindow = d.BfWindow
	}
	if s.BfInterval == 0 {
		s.BfInterval = d.BfInterval
	}
	if s.BfResolution == 0 {
		s.BfResolution = d.BfResolution
	}
	if s.SchedInterval == 0 {
		s.SchedInterval = d.SchedInterval
	}
	if s.BfMaxJobTest == 0 {
		s.BfMaxJobTest = d.BfMaxJobTest
	}
	if s.QueueDepth == 0 {
		s.QueueDepth = d.QueueDepth
	}
	return s
}

// parseSlurmTime parses Slurm's time formats: "minutes", "minutes:seconds",
// "hours:minutes:seconds", "days-hours", "days-hours:minutes",
// "days-hours:minutes:seconds"; INFINITE and UNLIMITED are 0.
func parseSlurmTime(s string) (time.Duration, error) {
	if strings.EqualFold(s, "INFINITE") || strings.EqualFold(s, "UNLIMITED") {
		return 0, nil
	}
	days := int64(0)
	rest := s
	hasDays := false
	if d, r, ok := strings.Cut(s, "-"); ok {
		v, err := strconv.ParseInt(d, 10, 64)
		if err != nil || v < 0 || v > 1<<20 {
			return 0, errorf("bad days in time %q", s)
		}
		days, rest, hasDays = v, r, true
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 {
		return 0, errorf("bad time %q", s)
	}
	var nums []int64
	for _, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 || v > 1<<30 {
			return 0, errorf("bad time %q", s)
		}
		nums = append(nums, v)
	}
	var h, m, sec int64
	switch {
	case hasDays && len(nums) == 1:
		h = nums[0]
	case hasDays && len(nums) == 2:
		h, m = nums[0], nums[1]
	case hasDays:
		h, m, sec = nums[0], nums[1], nums[2]
	case len(nums) == 1:
		m = nums[0]
	case len(nums) == 2:
		m, sec = nums[0], nums[1]
	default:
		h, m, sec = nums[0], nums[1], nums[2]
	}
	return time.Duration(((days*24+h)*60+m)*60+sec) * time.Second, nil
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
