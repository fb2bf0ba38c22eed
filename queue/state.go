package queue

import "fmt"

// State is a job's state as a platform's API shows it.
//
//	Pending ──admit──▶ Admitted ──start──▶ Running ──▶ Succeeded | Failed
//	   ▲                  │                   │
//	   └──── Requeued ◀───┴─── Preempted ◀────┘
//
// Pending, Requeued and Preempted jobs wait in their queue (Requeued and
// Preempted say why they are back); Admitted jobs hold resources but have
// not started; Succeeded, Failed and Cancelled are terminal.
type State uint8

// States.
const (
	Pending State = iota
	Admitted
	Running
	Succeeded
	Failed
	Preempted
	Requeued
	Cancelled
)

var stateNames = [...]string{"pending", "admitted", "running", "succeeded", "failed", "preempted", "requeued", "cancelled"}

// String returns the lower-case name.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// MarshalText returns the name, for JSON and YAML.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a name written by MarshalText.
func (s *State) UnmarshalText(b []byte) error {
	for i, n := range stateNames {
		if n == string(b) {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("queue: unknown job state %q", b)
}

// Waiting reports whether the job is in its queue (Pending, Requeued,
// Preempted).
func (s State) Waiting() bool { return s == Pending || s == Requeued || s == Preempted }

// Holding reports whether the job holds resources (Admitted, Running).
func (s State) Holding() bool { return s == Admitted || s == Running }

// Terminal reports whether the job is done (Succeeded, Failed, Cancelled).
func (s State) Terminal() bool { return s == Succeeded || s == Failed || s == Cancelled }
