package gpusched

import (
	"testing"

	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// TestHostLogOracle checks hostLog against a naive oracle that keeps
// every entry: for a key at or after what was dropped, anySince answers
// exactly as the oracle; before it, it answers "changed".
func TestHostLogOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var l hostLog
		type entry struct {
			key  uint64
			host topology.HostID
		}
		var all []entry
		key := uint64(0)
		n := rapid.IntRange(0, 3*maxHostLog).Draw(t, "n")
		for i := 0; i < n; i++ {
			key += uint64(rapid.IntRange(0, 2).Draw(t, "step")) // keys repeat (ledger generations)
			h := topology.HostID(rapid.IntRange(0, 7).Draw(t, "host"))
			l.add(key, h)
			all = append(all, entry{key, h})
		}
		if len(l.entries) > maxHostLog {
			t.Fatalf("%d entries held, bound %d", len(l.entries), maxHostLog)
		}
		for q := 0; q < 20; q++ {
			after := uint64(rapid.IntRange(0, int(key)+1).Draw(t, "after"))
			want := topology.HostID(rapid.IntRange(0, 7).Draw(t, "want"))
			matters := func(h topology.HostID) bool { return h == want }
			oracle := false
			for _, e := range all {
				if e.key > after && matters(e.host) {
					oracle = true
				}
			}
			got := l.anySince(after, matters)
			if after < l.dropped {
				if !got {
					t.Fatalf("after %d < dropped %d: want \"changed\"", after, l.dropped)
				}
				continue
			}
			if got != oracle {
				t.Fatalf("anySince(%d) for host %d = %v, oracle %v (dropped %d)", after, want, got, oracle, l.dropped)
			}
		}
	})
}

// TestHostLogDrops: a full log drops its older half; a key before what
// was dropped answers "changed", one at or after it only what is held.
func TestHostLogDrops(t *testing.T) {
	var l hostLog
	for k := uint64(1); k <= maxHostLog+1; k++ {
		l.add(k, topology.HostID(k%4))
	}
	// maxHostLog entries held when the (maxHostLog+1)th came: the first
	// half (keys 1..maxHostLog/2) was dropped.
	if l.dropped != maxHostLog/2 || len(l.entries) != maxHostLog/2+1 {
		t.Fatalf("dropped %d, %d held; want %d, %d", l.dropped, len(l.entries), maxHostLog/2, maxHostLog/2+1)
	}
	never := func(topology.HostID) bool { return false }
	if !l.anySince(l.dropped-1, never) {
		t.Fatal("a key before the dropped ones must answer changed")
	}
	if l.anySince(l.dropped, never) {
		t.Fatal("a key at the last dropped one must ask the entries")
	}
	if l.next() != maxHostLog+2 || l.latest() != maxHostLog+1 {
		t.Fatalf("next %d latest %d", l.next(), l.latest())
	}
}
