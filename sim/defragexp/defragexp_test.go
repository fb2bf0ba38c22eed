package defragexp

import (
	"fmt"
	"os"
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

// TestDocGenerated checks that docs/defrag.md's result blocks are the
// generator's output for the current experiment: each machine's block
// opens with Describe of the default options, carries Table's header
// and one row per variant in order, and one line per variant and seed;
// and that Splice replaces a block in place. (Rerunning the experiment
// itself takes minutes: `go run ./examples/defrag -write docs/defrag.md
// -plots docs/img`.)
func TestDocGenerated(t *testing.T) {
	b, err := os.ReadFile("../../docs/defrag.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, m := range Machines {
		o := Options{Machine: m}
		o.defaults()
		block, err := Extract(doc, m)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(block, Describe(o)+"\n") {
			t.Errorf("%s: block does not open with %q:\n%.300s", m, Describe(o), block)
		}
		if !strings.Contains(block, tableHeader) {
			t.Errorf("%s: block lacks the table header of Table", m)
		}
		var names []string
		for _, line := range strings.Split(block, "\n") {
			if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| variant") {
				names = append(names, strings.TrimSpace(strings.Split(line, "|")[1]))
			}
		}
		var want []string
		for _, v := range o.Variants {
			want = append(want, v.Name)
			for _, s := range o.Seeds {
				if !strings.Contains(block, fmt.Sprintf("\n%s seed %d: big p95 ", v.Name, s)) {
					t.Errorf("%s: no figures for %s seed %d", m, v.Name, s)
				}
			}
		}
		if !reflect.DeepEqual(names, want) {
			t.Errorf("%s: table rows %q, want %q", m, names, want)
		}
		if _, err := os.Stat("../../docs/img/" + PlotName(m)); err != nil {
			t.Error(err)
		}
	}
	out, err := Splice(doc, Machines[0], "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := Extract(out, Machines[0]); got != "new\n" {
		t.Errorf("Splice then Extract: %q", got)
	}
	if _, err := Splice("no markers", "x", ""); err == nil {
		t.Error("Splice without markers: no error")
	}
}
