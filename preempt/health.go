package preempt

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gpusched/gpusched/topology"
)

// Counter is a kind of GPU error a HealthProfile counts.
type Counter uint8

// Counters.
const (
	// CounterECC counts ECC errors (e.g. single-bit errors corrected, or
	// rows remapped).
	CounterECC Counter = iota
	// CounterXid counts Xid events (driver-reported GPU errors).
	CounterXid
	// CounterNVLink counts NVLink errors (CRC, replay, recovery).
	CounterNVLink
	// NumCounters is the number of counters.
	NumCounters
)

var counterNames = [...]string{"ecc", "xid", "nvlink"}

// String returns "ecc", "xid" or "nvlink".
func (c Counter) String() string {
	if int(c) < len(counterNames) {
		return counterNames[c]
	}
	return "Counter(" + strconv.Itoa(int(c)) + ")"
}

// Threshold is how many errors of one counter within the window make a GPU
// draining or failed; 0 disables a level.
type Threshold struct {
	Drain, Fail int
}

// HealthConfig configures a HealthProfile. The zero value uses the
// defaults below.
type HealthConfig struct {
	// Window is how far back errors count; 0 means 24 hours.
	Window time.Duration
	// Thresholds per counter, errors within Window. Zero values mean the
	// defaults: ECC drain at 10, fail at 100; Xid drain at 3, fail at 10;
	// NVLink drain at 20, fail at 200. Set a level to -1 to disable it.
	ECC, Xid, NVLink Threshold
	// FatalXids are Xid codes that fail a GPU at once. Nil means 48
	// (double-bit ECC error), 79 (GPU fallen off the bus) and 95
	// (uncontained ECC error); an empty non-nil slice means none.
	FatalXids []int
	// MaxEvents bounds the events kept per GPU (the oldest are dropped,
	// as they would leave the window first); 0 means 1024.
	MaxEvents int
}

// Event is one observation of errors on a GPU.
type Event struct {
	At      time.Time
	Counter Counter
	// Count is how many errors it reports (a counter delta); 0 means 1.
	Count int
	// Xid is the Xid code, for CounterXid.
	Xid int
}

// GPUHealth is a GPU's health verdict.
type GPUHealth struct {
	GPU    topology.GPUID
	Health topology.Health
	// Why says what decided it, e.g. "xid: 4 in 24h0m0s ≥ 3" or
	// "fatal Xid 79".
	Why string
}

// HealthProfile keeps error counters per GPU over a sliding window and
// turns them into a health verdict: Failed when a fatal Xid was seen or a
// counter reaches its fail threshold within the window, Draining when a
// counter reaches its drain threshold, Healthy otherwise. Failed is
// sticky: it stays until Reset (the GPU was repaired or replaced), while
// Draining clears when the errors age out of the window. Time is always an
// argument. Not safe for concurrent use.
type HealthProfile struct {
	c     *topology.Cluster
	cfg   HealthConfig
	th    [NumCounters]Threshold
	fatal map[int]bool
	logs  []*gpuLog // by GPU; nil until the first event
	seen  []topology.GPUID
}

type gpuLog struct {
	events   []Event // ring, oldest first after trimming
	fatal    string  // why it failed for good; "" if not
	reported topology.Health
}

// NewHealthProfile returns an empty profile for the GPUs of c.
func NewHealthProfile(c *topology.Cluster, cfg HealthConfig) (*HealthProfile, error) {
	if cfg.Window < 0 || cfg.MaxEvents < 0 {
		return nil, fmt.Errorf("preempt: HealthConfig: negative Window or MaxEvents")
	}
	if cfg.Window == 0 {
		cfg.Window = 24 * time.Hour
	}
	if cfg.MaxEvents == 0 {
		cfg.MaxEvents = 1024
	}
	if cfg.FatalXids == nil {
		cfg.FatalXids = []int{48, 79, 95}
	}
	p := &HealthProfile{c: c, cfg: cfg, fatal: map[int]bool{}, logs: make([]*gpuLog, c.NumGPUs())}
	defaults := [NumCounters]Threshold{{10, 100}, {3, 10}, {20, 200}}
	given := [NumCounters]Threshold{cfg.ECC, cfg.Xid, cfg.NVLink}
	for k := range p.th {
		t := given[k]
		if t.Drain == 0 {
			t.Drain = defaults[k].Drain
		}
		if t.Fail == 0 {
			t.Fail = defaults[k].Fail
		}
		if t.Drain < -1 || t.Fail < -1 {
			return nil, fmt.Errorf("preempt: HealthConfig.%s: thresholds below -1", Counter(k))
		}
		p.th[k] = t
	}
	for _, x := range cfg.FatalXids {
		p.fatal[x] = true
	}
	return p, nil
}

// Record adds an event for GPU g and returns g's verdict at the event's
// time. Events may arrive out of order; those already outside the window
// of the latest event count for nothing.
func (p *HealthProfile) Record(g topology.GPUID, e Event) (GPUHealth, error) {
	if g < 0 || int(g) >= len(p.logs) {
		return GPUHealth{}, fmt.Errorf("preempt: HealthProfile.Record: GPU %d out of range 0..%d", g, len(p.logs)-1)
	}
	if e.Counter >= NumCounters {
		return GPUHealth{}, fmt.Errorf("preempt: HealthProfile.Record: unknown counter %d", e.Counter)
	}
	if e.Count < 0 {
		return GPUHealth{}, fmt.Errorf("preempt: HealthProfile.Record: negative count %d", e.Count)
	}
	if e.Count == 0 {
		e.Count = 1
	}
	lg := p.logs[g]
	if lg == nil {
		lg = &gpuLog{}
		p.logs[g] = lg
		p.seen = append(p.seen, g)
	}
	if e.Counter == CounterXid && p.fatal[e.Xid] && lg.fatal == "" {
		lg.fatal = "fatal Xid " + strconv.Itoa(e.Xid)
	}
	// Keep events in time order; most arrive in order.
	i := len(lg.events)
	for i > 0 && lg.events[i-1].At.After(e.At) {
		i--
	}
	lg.events = slices.Insert(lg.events, i, e)
	if len(lg.events) > p.cfg.MaxEvents {
		lg.events = slices.Delete(lg.events, 0, len(lg.events)-p.cfg.MaxEvents)
	}
	return p.verdict(g, lg, e.At), nil
}

// Health returns GPU g's verdict at time now.
func (p *HealthProfile) Health(g topology.GPUID, now time.Time) GPUHealth {
	if g < 0 || int(g) >= len(p.logs) || p.logs[g] == nil {
		return GPUHealth{GPU: g, Health: topology.Healthy}
	}
	return p.verdict(g, p.logs[g], now)
}

// Counts returns the errors of each counter within the window ending at
// now.
func (p *HealthProfile) Counts(g topology.GPUID, now time.Time) [NumCounters]int {
	var n [NumCounters]int
	if g < 0 || int(g) >= len(p.logs) || p.logs[g] == nil {
		return n
	}
	from := now.Add(-p.cfg.Window)
	for _, e := range p.logs[g].events {
		if e.At.After(from) && !e.At.After(now) {
			n[e.Counter] += e.Count
		}
	}
	return n
}

func (p *HealthProfile) verdict(g topology.GPUID, lg *gpuLog, now time.Time) GPUHealth {
	if lg.fatal != "" {
		return GPUHealth{GPU: g, Health: topology.Failed, Why: lg.fatal}
	}
	n := p.Counts(g, now)
	out := GPUHealth{GPU: g, Health: topology.Healthy}
	for k, t := range p.th {
		switch {
		case t.Fail > 0 && n[k] >= t.Fail:
			lg.fatal = fmt.Sprintf("%s: %d in %v ≥ %d", Counter(k), n[k], p.cfg.Window, t.Fail)
			return GPUHealth{GPU: g, Health: topology.Failed, Why: lg.fatal}
		case t.Drain > 0 && n[k] >= t.Drain && out.Health == topology.Healthy:
			out.Health, out.Why = topology.Draining, fmt.Sprintf("%s: %d in %v ≥ %d", Counter(k), n[k], p.cfg.Window, t.Drain)
		}
	}
	return out
}

// Changes returns, in GPU order, the GPUs whose verdict at now differs
// from the last one Changes returned for them (initially Healthy), and
// remembers these verdicts: call it after recording a batch of events and
// turn the result into faults (GPUFault) for Recover.
func (p *HealthProfile) Changes(now time.Time) []GPUHealth {
	slices.Sort(p.seen)
	var out []GPUHealth
	for _, g := range p.seen {
		lg := p.logs[g]
		v := p.verdict(g, lg, now)
		if v.Health != lg.reported {
			lg.reported = v.Health
			out = append(out, v)
		}
	}
	return out
}

// Reset forgets GPU g's errors and a sticky failure (after a repair or a
// replacement); its verdict becomes Healthy, and the next Changes reports
// it if it was reported unhealthy.
func (p *HealthProfile) Reset(g topology.GPUID) {
	if g < 0 || int(g) >= len(p.logs) || p.logs[g] == nil {
		return
	}
	lg := p.logs[g]
	lg.events, lg.fatal = lg.events[:0], ""
}
