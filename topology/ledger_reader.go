package topology

// LedgerReader is what can be read of a Ledger, and nothing that changes
// it: free counters, occupancy, health, the ordered queries and cursors,
// and Check. Clone gives a private, mutable copy for what-ifs (a placer
// trying a job on the current state), which leaves the original alone.
//
// An owner that must not let callers change its ledger (the root
// Scheduler) hands out Ledger.ReadOnly, not the *Ledger: the reader it
// returns is no *Ledger, so a type assertion cannot get the mutating
// methods back. The ordered queries refresh the ledger's lazy indexes,
// which changes nothing a reader can see but means a reader, like the
// Ledger, is not safe for concurrent use.
type LedgerReader interface {
	// Cluster returns the cluster the ledger tracks.
	Cluster() *Cluster
	// Generation grows with every change; see Ledger.Generation.
	Generation() uint64
	// HostGeneration changes with every change on host h; see
	// Ledger.HostGeneration.
	HostGeneration(h HostID) uint64
	// FreeGPUs is the number of free allocatable GPUs of domain d.
	FreeGPUs(d DomainID) int
	// FreeMilli is the free milli-GPU on allocatable GPUs of domain d.
	FreeMilli(d DomainID) int64
	// HealthyGPUs is the number of allocatable GPUs of domain d.
	HealthyGPUs(d DomainID) int
	// HostFreeGPUs is the number of free allocatable GPUs on host h.
	HostFreeGPUs(h HostID) int
	// CPUFree is the unallocated CPU of host h in milli-cores.
	CPUFree(h HostID) int64
	// MemoryFree is the unallocated memory of host h in MiB.
	MemoryFree(h HostID) int64
	// GPU is the occupancy and health of GPU g.
	GPU(g GPUID) GPUStatus
	// GPUFreeMilli is the free milli-GPU of g, 0 if not allocatable.
	GPUFreeMilli(g GPUID) int
	// GPUIsFree reports whether g is allocatable and unused.
	GPUIsFree(g GPUID) bool
	// GPUIsIdle reports whether g is healthy and unused, whatever its
	// host's health and cordon.
	GPUIsIdle(g GPUID) bool
	// HostHealth is the health of host h.
	HostHealth(h HostID) Health
	// HostCordoned reports whether host h is cordoned (takes no new work).
	HostCordoned(h HostID) bool
	// HostUsable reports whether host h takes new work: Healthy and not cordoned.
	HostUsable(h HostID) bool
	// BestHost, AscendHosts, BestDomain, AscendDomains, MaxFreeDomain and
	// AscendSharedGPUs are the ordered queries of the same names.
	BestHost(d DomainID, k int, m ModelID) (HostID, bool)
	AscendHosts(d DomainID, m ModelID, minFree int, fn func(h HostID, free int) bool)
	BestDomain(lv Level, k int) (DomainID, bool)
	AscendDomains(lv Level, minFree int, fn func(d DomainID, free int) bool)
	MaxFreeDomain(lv Level) (DomainID, int)
	AscendSharedGPUs(m ModelID, minFreeMilli int, fn func(g GPUID, freeMilli int) bool)
	// NextHost, PrevHost, NextDomain and PrevDomain are the resumable
	// cursors of the same names.
	NextHost(d DomainID, m ModelID, free int, after HostID) (HostID, int, bool)
	PrevHost(d DomainID, m ModelID, free int, before HostID) (HostID, int, bool)
	NextDomain(lv Level, free int, after DomainID) (DomainID, int, bool)
	PrevDomain(lv Level, free int, before DomainID) (DomainID, int, bool)
	// Check recomputes every counter and index and compares; nil when
	// they agree.
	Check() error
	// Clone returns an independent, mutable copy of the ledger.
	Clone() *Ledger
	// Occupancy returns an independent copy of the ledger's occupancy
	// for Allocate and Release what-ifs (no queries).
	Occupancy() *Occupancy
}

// A *Ledger is a LedgerReader for code that owns it.
var _ LedgerReader = (*Ledger)(nil)

// ReadOnly returns a view of l that can read everything and change
// nothing: it forwards the LedgerReader methods to l, so it always shows
// l's current state, and it is not a *Ledger. O(1); it allocates one small
// value.
func (l *Ledger) ReadOnly() LedgerReader { return readOnlyLedger{l} }

// readOnlyLedger embeds the reader interface under an unexported name, so
// that it has the interface's methods and no others: neither a type
// assertion nor reflection reaches the *Ledger behind it.
type readOnlyLedger struct{ ledgerReader }

type ledgerReader = LedgerReader
