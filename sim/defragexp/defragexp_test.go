package defragexp

import (
	"reflect"
	"strings"
	"testing"
)

// TestSmallRun runs the experiment on 4 racks and 300 jobs, one seed:
// every variant completes, the figures are sane, and a second run gives
// the same outcomes (determinism).
func TestSmallRun(t *testing.T) {
	o := Options{Racks: 4, Jobs: 300, Seeds: []uint64{7}}
	rows, outs, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(Variants) || len(outs) != len(Variants) {
		t.Fatalf("%d rows, %d outcomes", len(rows), len(outs))
	}
	for _, x := range outs {
		if x.BigJobs == 0 || x.Allocation <= 0 || x.Allocation > 1 || x.BigP95 < x.BigP50 {
			t.Fatalf("implausible outcome %+v", x)
		}
	}
	_, again, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(outs, again) {
		t.Fatalf("not deterministic:\n%+v\n%+v", outs, again)
	}
	if tab := Table(rows); !strings.Contains(tab, "preempt+defrag+protect+frag-victims") {
		t.Fatal(tab)
	}
}

func TestBootstrap(t *testing.T) {
	s := bootstrap([]float64{1, 2, 3, 4, 5}, 1)
	if s.Median != 3 || s.Lo > 3 || s.Hi < 3 || s.Lo < 1 || s.Hi > 5 {
		t.Fatalf("%+v", s)
	}
}
