// Package gang places gangs: all the tasks of a job on exact GPUs at once,
// or none of them, inside the topology domains the job asks for, choosing
// the GPUs so that free capacity stays usable; and when a job does not fit,
// it says why, as data.
//
// # The loop
//
//	r, err := gang.NewRequest(cluster, &job) // validate and resolve names; errors name the field
//	placer, _ := gang.New("topology", gang.Options{})
//	var p gang.Placement
//	if why := placer.Place(ledger, r, &p); why != nil {
//		log.Print(why) // "job j: needs 16 GPUs (2 tasks) in one tor; best tor03 has 12 free (4 short); …: fragmentation"
//		return
//	}
//	tx, err := gang.Commit(ledger, &p) // all claims at once, or none
//	…
//	tx.Undo() // idempotent
//
// Place never changes the ledger (native policies keep tentative tasks in
// an overlay; policies delegating to package frag trial-allocate on the
// ledger and roll back exactly, leaving Generation unchanged), does no I/O,
// reads no clock and is deterministic given the ledger state, the request
// and Request.Seed. A Placer reuses its scratch space, so placing allocates
// nothing in the steady state; it is not safe for concurrent use.
//
// # Requests
//
// A Request is a workload.Job resolved against a cluster: task groups (a
// count, an optional minimum for elastic groups, whole GPUs, a milli-GPU
// share or a MIG profile per task, CPU, memory, acceptable models) and
// topology constraints per level, required or preferred. Required levels
// must hold: all tasks in one domain at that level ("nvlink": every GPU in
// one accelerator fabric domain; "host"; a network level such as "tor";
// "cluster"). Preferred levels are tried innermost first and given up in
// turn; Placement.Relaxed records those the placement does not honour,
// checked on the claims themselves. AllowHost and AllowGPU filter hosts and
// GPUs (quota, reserved cells); hosts they reject count as "quota" in
// explanations.
//
// Elastic groups (Min < Count) are placed whole if any domain can hold the
// whole gang; otherwise at Min, then grown towards Count inside the same
// domain.
//
// # Policies
//
// New builds a Placer by name (PolicyNames). Each looks for a domain at the
// required level (the cluster when none), tries to place every task there,
// and moves on to the next domain in its order when that fails:
//
//   - first-fit: domains and hosts in ascending ID order; each host is
//     filled before the next.
//   - best-fit: domains in ascending order of free GPUs (the smallest that
//     can hold the gang, so large holes stay whole); each task on the host
//     with the fewest free GPUs that fits it, ties to the lowest HostID.
//     Tasks are placed largest first (whole GPUs by size, then MIG, shares,
//     CPU-only), so this is best-fit decreasing.
//   - worst-fit: domains in descending order of free GPUs; each task on the
//     host with the most free GPUs (spread), ties to the highest HostID.
//   - random: a random domain and, for each task, a random host (cyclic
//     from a uniformly drawn start, seeded by Request.Seed).
//   - topology: topology-tiered. For each level from the innermost up to
//     the required one (nvlink fabric domains — skipped for gangs of at most
//     one GPU —, hosts, then each network level, then the cluster), the
//     domains with enough free GPUs in ascending order of free GPUs, and
//     best-fit hosts inside; the first level whose domain holds the whole
//     gang wins. Preferred levels are thus honoured whenever possible. A
//     single task skips the tiers between the fabric and the top, which
//     hold it anyway.
//   - buddy: HiveD-style buddy cells (below).
//   - dot-product, gpu-packing, gpu-clustering, fgd: the host of each task
//     (and the GPU of a share) is chosen by package frag's node-level
//     policy of that name, task by task, inside the best-fit domain at the
//     required level; each placed task is trial-allocated on the ledger so
//     that the next choice sees it. MIG tasks, which frag does not place,
//     are placed as best-fit does.
//
// Before trying a domain, every policy checks by counting that the hosts of
// the domain offer enough task slots for each multi-GPU group (one pass
// over the ledger's index) and enough CPU and memory for each CPU-only
// group, so crowded domains are skipped cheaply.
//
// # Gangs of several groups
//
// Groups are placed one after the other (whole GPUs largest first, then
// MIG, shares, CPU-only tasks), each task where the policy puts it. That
// greedy order can miss a fit: an MPI job's 8-GPU worker takes the host
// whose cores its 60-core launcher needed. So for a gang of several
// groups the policy first checks that the domain's hosts could hold all
// the tasks together (counting each host for the most tasks of the gang
// it could take at once, at most as many as it holds at the gang's
// smallest demand), which turns most hopeless domains away at the cost of
// one count; and when the greedy order then fails, it tries the groups in
// other orders (hungriest for CPU first, for memory first, reversed), and
// then searches task → host assignments depth first, taking back
// tentative tasks on the overlay, with the tasks of one group on hosts in
// ascending order and hosts in the same state tried once. The search is
// bounded: 2,048 host checks per domain (a few hundred microseconds), at
// most 8 hosts per task. Each domain gets the whole budget, so whether a
// gang fits a domain depends on that domain's state alone: taking
// capacity from one domain cannot hand another the budget to find a fit
// (the root Scheduler's failure cache assumes losses never make a failed
// gang fit). It is complete on small domains (a tiny-cluster property test
// checks every policy against a brute-force oracle over task → host
// assignments; buddy is exempt, its free-cell rule being stricter than
// capacity), and a feasibility rescue on large ones, where the policy's
// own choices come first. GPUs inside each host are chosen as usual; the
// delegating policies' node scores are not consulted by the search.
//
// # GPUs inside a host
//
// Whole GPUs are chosen by locality, for every policy: inside one
// accelerator fabric domain of the host if one can hold them (best fit
// among them: on an Ascend 910 box, one HCCS group), then down the host's
// tree of NUMA nodes, PCIe host bridges and switches: if one child holds
// all the GPUs, recurse into the child with the fewest available GPUs that
// can (best fit); otherwise take the fullest child whole and repeat. So 4
// GPUs on an 8-GPU PCIe box land behind one socket's switches (PIX/PXB),
// 2 GPUs behind one switch, and the other socket stays whole. Shares pack
// onto the partly used GPU with the least room that fits, MIG instances
// onto a GPU already in MIG mode at a legal start slot (the one leaving the
// most placements possible), before a free GPU is opened.
//
// # Buddy cells
//
// The buddy policy derives a cell hierarchy from the cluster: inside each
// host, the locality tree above with chains of equal GPU sets collapsed
// (DGX H100: GPU (1) → NUMA node (4) → host (8); DGX A100: GPU → PCIe
// switch pair (2) → host (8); 8-GPU PCIe box: GPU → switch (2) → socket
// (4) → host (8)); above hosts, multi-host fabric domains where they exist
// (a GB200 NVL72 rack, 72 GPUs), then each network level and the cluster.
// Cells split and merge like a buddy allocator without keeping state of
// their own: a cell is free when all its GPUs are free on the ledger, so
// releasing the last task of a cell merges it back. A task of k GPUs takes
// a wholly free cell of the smallest size ≥ k in its host (on DGX H100 a
// 3-GPU task takes a free NUMA node), chosen in the most split part of the
// tree: the host with the fewest free GPUs that has such a cell, and there
// the cell whose parent has the fewest free GPUs. The gang takes the
// lowest cell level above hosts that holds it, best fit among those cells.
// Per-tenant cell guarantees (HiveD's virtual clusters) are the caller's
// AllowHost/AllowGPU filters.
//
// # Explanations
//
// When a request does not fit, Place returns an Explanation: the verdict
// (capacity, quota, fragmentation, too large), what the gang needs, the
// level it must fit in, how many domains there are too small and the best
// candidate with how far short it fell, the hosts each Reason rules out,
// and the cluster's free, usable and allowed GPUs. Under DetailFull (the
// default) host counts come from a census of the ledger kept per
// Generation for requests of whole-GPU tasks without CPU, memory or
// filters, and from a scan of the hosts otherwise; the scan looks at every
// group on every host, so the explanation does not depend on the order of
// the job's groups.
//
// A gang larger than every domain at its level is too large; so is a gang
// with one task larger than every host it may run on (9 GPUs on 8-GPU
// hosts, more cores or memory than any host has: a task is always on one
// host), with Explanation.Limit saying which resource. A gang with a group
// no host has the free CPU or memory for (every host it may use falls
// short on those) is capacity with Limit ReasonCPU or ReasonMemory, not
// fragmentation.
//
// # Fragmentation per level
//
// Stranded measures, for a set of pending requests, the free GPUs that no
// request could use at each topology level. The node- and cluster-level FGD
// fragmentation measure belongs to package frag.
package gang
