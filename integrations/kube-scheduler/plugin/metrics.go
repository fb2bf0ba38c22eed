package plugin

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/gpusched/gpusched"
)

// Scheduler mode's metrics, served on kube-scheduler's own /metrics (the
// component-base legacy registry it serves). Every figure but the cycle
// duration and the plans kube rejected comes from the library's
// Decision.Stats (gpusched.CycleStats), so an embedder and the simulator
// export the same numbers. Names follow what users already graph in Kueue
// (pending workloads by queue and reason, a queue's nominal quota, usage
// and borrowing, admitted and evicted workloads) and kube-scheduler
// (attempt durations). Every series carries the profile that runs the
// plugin.
const metricsSubsystem = "gpusched"

// The metrics' names, without the "gpusched_" prefix.
const (
	metricPendingJobs   = "pending_jobs"
	metricQueueGPUs     = "queue_gpus"
	metricFreeGPUs      = "free_gpus"
	metricStrandedGPUs  = "stranded_gpus"
	metricCycleDuration = "cycle_duration_seconds"
	metricAdmitted      = "admitted_jobs_total"
	metricEvictions     = "evictions_total"
	metricRefusals      = "eviction_refusals_total"
	metricWithdrawn     = "withdrawn_plans_total"
)

// Kinds of a queue's GPUs (the label "kind" of gpusched_queue_gpus).
const (
	GPUKindNominal  = "nominal"  // the guarantee (governed queues only)
	GPUKindBorrowed = "borrowed" // used and reserved beyond nominal (governed queues only)
	GPUKindUsed     = "used"     // held by running jobs
	GPUKindReserved = "reserved" // held by jobs bound but not yet running
)

// Causes of a withdrawn plan (the label "cause" of
// gpusched_withdrawn_plans_total).
const (
	// WithdrawnExpired: the job's pods were not all bound within
	// admitTimeoutSeconds (Decision.Expired).
	WithdrawnExpired = "Expired"
	// WithdrawnNodeRejected: kube's filters rejected the planned node
	// (PostFilter).
	WithdrawnNodeRejected = "NodeRejected"
	// WithdrawnBindFailed: a pod of the job could not be reserved or
	// bound (Unreserve).
	WithdrawnBindFailed = "BindFailed"
	// WithdrawnPlanConflict: kube's filters refuse a pod of the plan next
	// to the pods planned before it in the same cycle (its gang's, other
	// jobs'); taken back before any pod was activated.
	WithdrawnPlanConflict = "PlanConflict"
)

// metricSet is the collectors of scheduler mode's metrics. One set is
// registered with kube-scheduler's registry (defaultMetrics); tests make
// their own on a registry of their own.
type metricSet struct {
	pending   *metrics.GaugeVec     // profile, queue, reason
	queueGPUs *metrics.GaugeVec     // profile, queue, kind
	free      *metrics.GaugeVec     // profile
	stranded  *metrics.GaugeVec     // profile, level
	duration  *metrics.HistogramVec // profile, phase
	admitted  *metrics.CounterVec   // profile, queue
	evictions *metrics.CounterVec   // profile, kind
	refusals  *metrics.CounterVec   // profile
	withdrawn *metrics.CounterVec   // profile, cause
}

// newMetricSet makes the collectors, not registered.
func newMetricSet() *metricSet {
	gauge := func(name, help string, labels ...string) *metrics.GaugeVec {
		return metrics.NewGaugeVec(&metrics.GaugeOpts{Subsystem: metricsSubsystem, Name: name, Help: help,
			StabilityLevel: metrics.ALPHA}, append([]string{"profile"}, labels...))
	}
	counter := func(name, help string, labels ...string) *metrics.CounterVec {
		return metrics.NewCounterVec(&metrics.CounterOpts{Subsystem: metricsSubsystem, Name: name, Help: help,
			StabilityLevel: metrics.ALPHA}, append([]string{"profile"}, labels...))
	}
	return &metricSet{
		pending: gauge(metricPendingJobs, "Jobs waiting, by leaf queue and reason token (WaitingForQuota, TopologyPlacementFailed, Fragmentation, WaitingForPreemptedWorkloads, ...), as of the last gpusched cycle.",
			"queue", "reason"),
		queueGPUs: gauge(metricQueueGPUs, "A queue's GPUs by kind: nominal (its guarantee), borrowed (beyond nominal), used (running jobs), reserved (bound, not yet running); nominal and borrowed only for queues a GPU quota governs.",
			"queue", "kind"),
		free: gauge(metricFreeGPUs, "Free allocatable GPUs of the cluster gpusched schedules."),
		stranded: gauge(metricStrandedGPUs, "Free GPUs that no waiting job's shape can use, per topology level (domains at that level holding fewer free GPUs than every waiting shape needs in one of them).",
			"level"),
		duration: metrics.NewHistogramVec(&metrics.HistogramOpts{Subsystem: metricsSubsystem, Name: metricCycleDuration,
			Help:    "Duration of gpusched cycles: phase schedule is the library's decision alone, phase cycle the whole cycle (listing, deciding, API writes).",
			Buckets: metrics.ExponentialBuckets(0.0005, 2, 16), StabilityLevel: metrics.ALPHA}, []string{"profile", "phase"}),
		admitted:  counter(metricAdmitted, "Jobs admitted (bound to nodes and GPUs) by gpusched, by leaf queue.", "queue"),
		evictions: counter(metricEvictions, "Running jobs gpusched asked to stop, by kind: Preemption, Shrink, Migration, Recovery.", "kind"),
		refusals:  counter(metricRefusals, "Evictions the Eviction API refused (a PodDisruptionBudget)."),
		withdrawn: counter(metricWithdrawn, "Bindings withdrawn before their pods all bound, by cause: Expired (not bound within admitTimeoutSeconds), NodeRejected (kube's filters rejected the planned node), BindFailed, PlanConflict (kube's filters refuse the plan next to the pods planned with it; taken back before any pod was activated).",
			"cause"),
	}
}

// collectors lists the set's collectors, for registration.
func (m *metricSet) collectors() []metrics.Registerable {
	return []metrics.Registerable{m.pending, m.queueGPUs, m.free, m.stranded, m.duration, m.admitted, m.evictions, m.refusals, m.withdrawn}
}

var (
	defaultMetricsOnce sync.Once
	defaultMetricSet   *metricSet
)

// defaultMetrics returns the set registered with kube-scheduler's registry
// (legacyregistry), registering it on the first call: every profile of the
// process shares it, each under its own profile label.
func defaultMetrics() *metricSet {
	defaultMetricsOnce.Do(func() {
		defaultMetricSet = newMetricSet()
		legacyregistry.MustRegister(defaultMetricSet.collectors()...)
	})
	return defaultMetricSet
}

// cycleMetrics records one profile's figures into a metricSet. It keeps
// the gauge series it set, with the cycle that last set each, so that a
// queue, reason or level that went away disappears (a removed queue, a
// level no longer in the cluster); pending jobs are set for every leaf and
// token, so a cause nobody waits for reads 0. Safe for concurrent use.
type cycleMetrics struct {
	set     *metricSet
	profile string

	mu     sync.Mutex
	gen    uint64                    // records so far
	series map[gaugeKey]*gaugeSeries // every series set, by vector and labels
}

// gaugeKey names one series: its vector and its labels but the profile.
type gaugeKey struct {
	v      *metrics.GaugeVec
	labels [2]string
	n      int // labels used
}

// gaugeSeries is one series' handle and the record that last set it.
type gaugeSeries struct {
	m   metrics.GaugeMetric
	gen uint64
}

// newCycleMetrics records profile's figures into set.
func newCycleMetrics(set *metricSet, profile string) *cycleMetrics {
	return &cycleMetrics{set: set, profile: profile, series: map[gaugeKey]*gaugeSeries{}}
}

// gauge sets one series of v (at most two labels besides the profile)
// for this record.
func (c *cycleMetrics) gauge(v *metrics.GaugeVec, val float64, labels ...string) {
	k := gaugeKey{v: v, n: len(labels)}
	copy(k.labels[:], labels)
	x := c.series[k]
	if x == nil {
		x = &gaugeSeries{m: v.WithLabelValues(append([]string{c.profile}, labels...)...)}
		c.series[k] = x
	}
	x.m.Set(val)
	x.gen = c.gen
}

// record exports cycle d's figures (d.Stats must be set) and schedule, how
// long the library's Schedule took.
func (c *cycleMetrics) record(d *gpusched.Decision, schedule time.Duration) {
	st := d.Stats
	if c == nil || st == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.set
	s.duration.WithLabelValues(c.profile, "schedule").Observe(schedule.Seconds())
	c.gen++
	// Pending: every leaf and token, 0 included, so that a cause with no
	// waiting job reads 0 rather than missing.
	counts := map[[2]string]int{}
	for _, p := range st.PendingBy {
		counts[[2]string{p.Queue, p.Token}] = p.Jobs
	}
	tokens := gpusched.ReasonTokens()
	for i, q := range st.Queues {
		if q.Leaf {
			for _, tok := range tokens {
				c.gauge(s.pending, float64(counts[[2]string{q.Queue, tok}]), q.Queue, tok)
			}
		}
		if i == 0 {
			continue // the root: its figures are the cluster's
		}
		if q.Governed {
			c.gauge(s.queueGPUs, q.Nominal, q.Queue, GPUKindNominal)
			c.gauge(s.queueGPUs, q.Borrowed, q.Queue, GPUKindBorrowed)
		}
		c.gauge(s.queueGPUs, q.Used, q.Queue, GPUKindUsed)
		c.gauge(s.queueGPUs, q.Reserved, q.Queue, GPUKindReserved)
	}
	c.gauge(s.free, float64(st.FreeGPUs))
	for _, x := range st.Stranded {
		c.gauge(s.stranded, float64(x.GPUs), x.Name)
	}
	for k, x := range c.series {
		if x.gen != c.gen {
			k.v.DeleteLabelValues(append([]string{c.profile}, k.labels[:k.n]...)...)
			delete(c.series, k)
		}
	}
	for _, b := range d.Bindings {
		s.admitted.WithLabelValues(c.profile, b.Queue).Inc()
	}
	for _, e := range [...]struct {
		kind string
		n    int
	}{{"Preemption", st.Preemptions}, {"Shrink", st.Shrinks}, {"Migration", st.Migrations}, {"Recovery", st.Recoveries}} {
		if e.n > 0 {
			s.evictions.WithLabelValues(c.profile, e.kind).Add(float64(e.n))
		}
	}
	if st.Refusals > 0 {
		s.refusals.WithLabelValues(c.profile).Add(float64(st.Refusals))
	}
	if st.Expired > 0 {
		s.withdrawn.WithLabelValues(c.profile, WithdrawnExpired).Add(float64(st.Expired))
	}
}

// cycle records the duration of a whole cycle.
func (c *cycleMetrics) cycle(d time.Duration) {
	if c != nil {
		c.set.duration.WithLabelValues(c.profile, "cycle").Observe(d.Seconds())
	}
}

// withdrew counts a binding withdrawn for cause (WithdrawnNodeRejected,
// WithdrawnBindFailed, WithdrawnPlanConflict).
func (c *cycleMetrics) withdrew(cause string) {
	if c != nil {
		c.set.withdrawn.WithLabelValues(c.profile, cause).Inc()
	}
}
