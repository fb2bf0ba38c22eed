package fairshare

import "math"

// BorrowedShare returns the weighted dominant share of what a queue borrows,
// as Kueue's fair sharing defines it for the queues of a cohort: for each
// dimension r, borrowed_r = max(0, usage[r] − nominal[r]) over lendable[r],
// the capacity its cohort can lend in r; the share is the largest of these,
// divided by weight, and dim is the dimension where it is reached (−1 if
// the queue borrows nothing). A queue within its nominal quota has share 0
// whatever its weight; a borrowing queue of weight ≤ 0 has share +Inf (it
// is served last and preempted first). Dimensions where lendable is 0 are
// skipped. It panics if the lengths differ. O(len(usage)).
//
// Kueue admits from the cohort's queue with the lowest share first and
// preempts from the highest; preempting only while the preemptor's share
// after admission stays at or below the target's share before preemption
// cannot cycle (https://kueue.sigs.k8s.io/docs/concepts/fair_sharing/).
func BorrowedShare(usage, nominal, lendable []int64, weight float64) (share float64, dim int) {
	if len(usage) != len(nominal) || len(usage) != len(lendable) {
		panic("fairshare: BorrowedShare: vectors of different length")
	}
	dim = -1
	borrows := false
	for r := range usage {
		b := usage[r] - nominal[r]
		if b <= 0 {
			continue
		}
		borrows = true
		if lendable[r] <= 0 {
			continue
		}
		s := float64(b) / float64(lendable[r])
		if dim < 0 || s > share {
			share, dim = s, r
		}
	}
	if !borrows {
		return 0, -1
	}
	if weight <= 0 {
		return math.Inf(1), dim
	}
	return share / weight, dim
}
