package preempt

import (
	"fmt"
	"math"
	"time"

	"github.com/gpusched/gpusched/topology"
)

// DefragBudget bounds the migrations a host carries out (disruption
// budgets, in the spirit of KAI-Scheduler #2144): how many per hour, how
// much GPU time they may lose per hour, and what a plan must buy for what
// it costs. A DefragPlan is admitted whole or not at all: a part of a
// plan does not let the gang place. How often one job may move is
// Config.MaxMigrations (the search leaves such jobs alone). The zero
// value admits every plan.
type DefragBudget struct {
	// PerHour is the most migrations issued in any window of one hour
	// (the plan's included); 0 means no limit.
	PerHour int
	// LostPerHour is the most GPU time migrations may lose in any window
	// of one hour (the plan's included); 0 means no limit.
	LostPerHour GPUTime
	// MinValue is the least value of a plan: the GPUs the blocked gang
	// gets per GPU-hour the migrations lose (Value). 0 means any.
	MinValue float64
}

// Validate reports a budget field out of range.
func (b DefragBudget) Validate() error {
	switch {
	case b.PerHour < 0:
		return fmt.Errorf("preempt: DefragBudget.PerHour: negative %d", b.PerHour)
	case b.LostPerHour < 0:
		return fmt.Errorf("preempt: DefragBudget.LostPerHour: negative %d", b.LostPerHour)
	case !(b.MinValue >= 0) || math.IsInf(b.MinValue, 1):
		return fmt.Errorf("preempt: DefragBudget.MinValue: %v is not a finite non-negative number", b.MinValue)
	}
	return nil
}

// Value returns what plan p buys per GPU-hour it loses: the gang's GPUs
// (the whole GPUs of its placement, shares as their fraction; MIG
// instances not counted) divided by the GPU-hours its migrations lose; +Inf when they lose
// nothing.
func Value(p *DefragPlan) float64 {
	var lost GPUTime
	for _, m := range p.Migrations {
		lost += m.Lost
	}
	var milli int64
	if p.Placement != nil {
		for _, cl := range p.Placement.Claims {
			for _, g := range cl.GPUs {
				switch g.Kind {
				case topology.ClaimWhole:
					milli += topology.MilliPerGPU
				case topology.ClaimShare:
					milli += int64(g.Milli)
				}
			}
		}
	}
	if lost <= 0 {
		return math.Inf(1)
	}
	return float64(milli) / 1000 / (lost.GPUSeconds() / 3600)
}

// DefragRefusal says why a budget refuses a plan. It is data; Error
// renders it.
type DefragRefusal struct {
	// Reason is "per-hour", "lost-per-hour" or "value".
	Reason string
	// Have is what the window already holds (migrations, or GPU time) or
	// the plan's value; Plan what the plan adds (or needs); Limit the
	// budget's bound.
	Have, Plan, Limit float64
}

// Error renders the refusal for people.
func (x *DefragRefusal) Error() string {
	switch x.Reason {
	case "per-hour":
		return fmt.Sprintf("defragmentation budget: %g migrations in the last hour + %g > %g per hour", x.Have, x.Plan, x.Limit)
	case "lost-per-hour":
		return fmt.Sprintf("defragmentation budget: %.1f GPU-h lost in the last hour + %.1f > %.1f per hour", x.Have, x.Plan, x.Limit)
	}
	return fmt.Sprintf("defragmentation value: %.2f GPUs per GPU-hour lost < %.2f", x.Have, x.Limit)
}

// DefragLog remembers the migrations issued in the last hour, for
// DefragBudget.Admit: a bounded log (older entries are dropped as time
// moves on). Times must not go backwards between calls. The zero value is
// an empty log. Not safe for concurrent use.
type DefragLog struct {
	recent []logEntry // ascending time
	lost   GPUTime    // Σ lost over recent
}

type logEntry struct {
	at   time.Time
	lost GPUTime
}

// window drops entries older than one hour before now.
func (g *DefragLog) window(now time.Time) {
	k := 0
	for k < len(g.recent) && !g.recent[k].at.After(now.Add(-time.Hour)) {
		g.lost -= g.recent[k].lost
		k++
	}
	if k > 0 {
		g.recent = append(g.recent[:0], g.recent[k:]...)
	}
}

// LastHour returns the migrations and the GPU time they lost in the hour
// before now.
func (g *DefragLog) LastHour(now time.Time) (int, GPUTime) {
	g.window(now)
	return len(g.recent), g.lost
}

// Record adds the migrations of p, issued at now.
func (g *DefragLog) Record(p *DefragPlan, now time.Time) {
	g.window(now)
	for _, m := range p.Migrations {
		g.recent = append(g.recent, logEntry{at: now, lost: m.Lost})
		g.lost += m.Lost
	}
}

// Admit reports whether plan p fits the budget at now, given what log
// holds: nil, or a *DefragRefusal naming the first bound it breaks (per
// hour, then lost per hour, then value). It does not record p: call
// log.Record when the plan is issued.
func (b DefragBudget) Admit(log *DefragLog, p *DefragPlan, now time.Time) *DefragRefusal {
	n, lost := log.LastHour(now)
	var pl GPUTime
	for _, m := range p.Migrations {
		pl += m.Lost
	}
	if b.PerHour > 0 && n+len(p.Migrations) > b.PerHour {
		return &DefragRefusal{Reason: "per-hour", Have: float64(n), Plan: float64(len(p.Migrations)), Limit: float64(b.PerHour)}
	}
	if b.LostPerHour > 0 && lost+pl > b.LostPerHour {
		h := func(x GPUTime) float64 { return x.GPUSeconds() / 3600 }
		return &DefragRefusal{Reason: "lost-per-hour", Have: h(lost), Plan: h(pl), Limit: h(b.LostPerHour)}
	}
	if v := Value(p); b.MinValue > 0 && v < b.MinValue {
		return &DefragRefusal{Reason: "value", Have: v, Limit: b.MinValue}
	}
	return nil
}
