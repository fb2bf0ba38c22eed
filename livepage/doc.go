// Package livepage renders a Scheduler as one read-only web page, the
// same for every host: the kube-scheduler plugin's live page (its
// liveAddress arg), `gpusched serve --state FILE` for a saved state, and
// an embedder's own status port.
//
// The page shows the queues with their GPU guarantee, usage, reservations
// and borrowing; the jobs that waited in the last cycle with their reason
// token (gpusched.Reason.Token: WaitingForQuota, TopologyPlacementFailed,
// …) and reason; and a picture of the cluster: a box per network domain
// (each topology level, e.g. spine and ToR) holding a cell per host, with
// a mark per GPU (used, in part used, free, draining, failed). A host's
// cell is coloured by the share of its GPUs in use; a host or domain whose
// free GPUs are fewer than every waiting shape needs in one of them (they
// are stranded: gpusched.StrandedGPUs) is drawn in orange. The trays of a
// multi-node NVLink domain (a GB200 NVL72 rack) are drawn stacked as one
// rack inside their network domain.
//
// Build reads a Scheduler through its read-only views (Queues, Cluster,
// Ledger) and the last cycle's rows and figures (Decision.Pending and
// Decision.Stats, with Config.Stats set) into a Page, a plain value that
// is also the page's JSON. Page.WriteHTML draws it; Handler serves both.
// The package only renders: it starts no goroutine and reads no clock
// (the cycle's time is passed in). A Scheduler is not safe for concurrent
// use, so a host calls Build where it may read the Scheduler (under its
// own lock, or inside gpusched.Synchronized.Read) and renders the Page
// anywhere.
package livepage
