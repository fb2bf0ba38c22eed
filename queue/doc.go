// Package queue decides who goes next: a tree of queues (cluster →
// organisation → team) with quotas per resource and per GPU model, job
// ordering inside each leaf queue, fair-share order across queues, and the
// quota view a dashboard shows. It does no placement: the root gpusched
// Scheduler asks it which job to try next and whether a job's demand fits
// the quotas, and places the job with package gang.
//
// # Quotas
//
// Each node has, per resource ("gpu", "gpu/MODEL", "cpu", "memory"), a
// nominal (guaranteed) quota, an optional borrowing limit, an optional
// lending limit and an optional hard maximum — the Kueue ClusterQueue /
// cohort model (https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/)
// laid out top-down: children's guarantees are carved out of their
// parent's, and what a parent does not hand out is a pool its children
// borrow from first. A node may use more than its nominal quota only by
// borrowing its siblings' unused, lendable quota, within its borrowing
// limit; [Tree.Check] enforces every limit on the path to the root, and
// [Tree.Over] audits the whole tree.
//
// # Ordering
//
// Inside a leaf, jobs are ordered by priority (higher first; priority
// classes name the values) and then by [Policy]: StrictFIFO (the head
// blocks the queue), BestEffortFIFO (a blocked job does not), or
// PriorityAging (effective priority grows with waiting time, so waiting is
// bounded). EASY backfill (Lifka, "The ANL/IBM SP scheduling system",
// 1995; Mu'alem and Feitelson, 2001) gives the first blocked job a
// reservation that later jobs may not delay; the Scheduler computes
// reservations because they need placement.
//
// Across queues, a queue whose next job fits in its guarantee comes before
// one that would borrow; then siblings are compared by the fairness policy
// — weighted dominant share (DRF), Slurm Fair Tree level fairshare, or
// Kueue's borrowed share — level by level from the root (hierarchical).
//
// Pending jobs are indexed in btrees and grouped in classes of identical
// demand, so a cycle over 10,000 pending jobs visits classes rather than
// jobs once a class is known not to fit. Nothing here reads a clock, does
// I/O or starts goroutines.
package queue
