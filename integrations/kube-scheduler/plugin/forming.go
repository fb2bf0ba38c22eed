package plugin

import "time"

// formingGrace is how long after its newest pod was created a gang that
// is not complete yet counts as still being created.
const formingGrace = 3 * time.Second

// forming reports whether j, a gang some of whose pods do not exist yet,
// is still being created: its newest pod is younger than formingGrace. Its
// pods then get no pending reason yet (no event, no PodScheduled patch):
// a gang's controller creates its pods one by one, and noting the gang as
// incomplete at every pod that arrives would cost each member an event
// and a status patch before the gang could bind. A gang that stays
// incomplete is reported once it stops growing.
func forming(j *podJob, now time.Time) bool {
	var newest time.Time
	for _, g := range j.pods {
		for _, p := range g {
			if t := p.CreationTimestamp.Time; t.After(newest) {
				newest = t
			}
		}
	}
	return now.Sub(newest) < formingGrace
}
