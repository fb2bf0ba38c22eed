package gpusched

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// TestOnHostSlots: a host's job list starts in its own slots of one array
// for all hosts (jobTable.onHost); a list that outgrows them moves out
// without writing a neighbour's slots and leaves no job behind in them,
// and removals keep the order.
func TestOnHostSlots(t *testing.T) {
	c := testCluster(t, 3, 0)
	tab := newJobTable(c, 0)
	on := func(hosts ...topology.HostID) *job {
		p := &gang.Placement{}
		for _, h := range hosts {
			p.Claims = append(p.Claims, topology.Claim{Host: h})
		}
		j := &job{placement: p}
		tab.index(j)
		return j
	}
	j1 := on(1)
	first := tab.onHost[0][:onHostSlots:onHostSlots]
	var zero []*job
	for i := 0; i < onHostSlots+2; i++ {
		zero = append(zero, on(0))
		if i == onHostSlots-1 && &tab.onHost[0][0] != &first[0] {
			t.Fatalf("host 0's first %d jobs are not in its slots", onHostSlots)
		}
	}
	j01 := on(0, 1)
	if want := append(slices.Clone(zero), j01); !slices.Equal(tab.onHost[0], want) {
		t.Fatalf("host 0 lists %v, want %v", tab.onHost[0], want)
	}
	if want := []*job{j1, j01}; !slices.Equal(tab.onHost[1], want) {
		t.Fatalf("host 1 lists %v, want %v (host 0's list wrote its slots?)", tab.onHost[1], want)
	}
	if i := slices.IndexFunc(first, func(j *job) bool { return j != nil }); i >= 0 {
		t.Fatalf("host 0's first slots still hold a job after it moved out: %v", first)
	}
	tab.unindex(zero[1])
	tab.unindex(j01)
	want := slices.Delete(slices.Clone(zero), 1, 2)
	if !slices.Equal(tab.onHost[0], want) || !slices.Equal(tab.onHost[1], []*job{j1}) {
		t.Fatalf("after removals: host 0 %v (want %v), host 1 %v", tab.onHost[0], want, tab.onHost[1])
	}
	if got := fmt.Sprint(len(tab.onHost[2]), cap(tab.onHost[2])); got != fmt.Sprint(0, onHostSlots) {
		t.Fatalf("host 2's list: len, cap %s", got)
	}
}
