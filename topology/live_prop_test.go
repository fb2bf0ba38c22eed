package topology

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestLiveChanges applies random live changes (hosts removed and added
// into existing or new switches, new templates, hosts changing shape under
// their name, new multi-host fabrics) to random clusters whose ledger holds
// random work and health, and checks after each change that
//   - the cluster's lists agree with a naive recomputation from parent
//     pointers and ancestors (checkLiveStructure);
//   - Build(c.Spec()) is the same cluster, IDs included (sameCluster);
//   - the ledger that followed the change equals one made fresh for the
//     rebuilt cluster with the same claims and health: same state, same
//     answers to the ordered queries, and Check holds on both.
func TestLiveChanges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := specGen{ch: rapidChooser{t}}
		c, err := Build(g.spec())
		if err != nil {
			t.Fatalf("valid spec rejected: %v", err)
		}
		l := NewLedger(c)
		w := &liveWork{}
		versions := []*Cluster{c}
		steps := rapid.IntRange(1, 5).Draw(t, "steps")
		for step := range steps {
			w.churn(t, l)
			ch := genChange(t, c, step)
			next, err := c.Apply(ch)
			if err != nil {
				t.Fatalf("step %d: valid change rejected: %v\n%+v", step, err, ch)
			}
			if err := l.Follow(next); err == nil && len(ch.Remove) > 0 && w.holdsOn(c, ch.Remove) {
				t.Fatalf("step %d: Follow accepted removing hosts that hold work", step)
			}
			w.releaseOn(t, l, c, ch.Remove)
			if l.Cluster() != next {
				if err := l.Follow(next); err != nil {
					t.Fatalf("step %d: Follow: %v", step, err)
				}
			}
			c = next
			versions = append(versions, c)
			checkLiveStructure(t, c)
			fresh, err := Build(c.Spec())
			if err != nil {
				t.Fatalf("step %d: rebuilding the changed cluster: %v", step, err)
			}
			sameCluster(t, c, fresh)
			fl := NewLedger(fresh)
			w.replay(t, fl)
			sameLedger(t, l, fl)
		}
		// Older versions are untouched by the changes made from them, and a
		// change applied to one (a branch: its arrays are copied first)
		// leaves the newer versions alone.
		old := versions[rapid.IntRange(0, len(versions)-1).Draw(t, "branch from")]
		branch, err := old.Apply(genChange(t, old, 99))
		if err != nil {
			t.Fatalf("valid change of an older version rejected: %v", err)
		}
		versions = append(versions, branch)
		for _, v := range versions {
			checkLiveStructure(t, v)
			fresh, err := Build(v.Spec())
			if err != nil {
				t.Fatalf("rebuilding a version: %v", err)
			}
			sameCluster(t, v, fresh)
		}
	})
}

// TestApplyRejects checks that invalid changes get a *SpecError naming the
// field, and leave the cluster as it was.
func TestApplyRejects(t *testing.T) {
	base := Spec{Version: SpecVersion, Name: "c",
		Levels:       []LevelSpec{{Name: "spine"}, {Name: "tor"}},
		Accelerators: []AcceleratorSpec{{Model: "H100"}},
		Templates:    []HostTemplate{{Name: "dgx", CPUMilli: 1000, MemoryMiB: 1000, Accelerator: "H100", GPUs: 2, Fabrics: []HostFabricSpec{{Kind: FabricNVSwitch, GPUs: []int{0, 1}}}}, {Name: "box", CPUMilli: 1000, MemoryMiB: 1000, Accelerator: "H100", GPUs: 2}},
		Switches:     []SwitchGroup{{Name: "s1", Level: "spine"}, {Name: "t[1-2]", Level: "tor", Parent: "s1"}},
		Hosts:        []HostGroup{{Name: "h[1-4]", Template: "dgx", Parent: "t[1-2]"}},
	}
	c, err := Build(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ch   Change
		path string
	}{
		{Change{Remove: []string{"nope"}}, "remove[0]"},
		{Change{Remove: []string{"h1", "h1"}}, "remove[1]"},
		{Change{Hosts: []HostGroup{{Name: "h1", Template: "dgx", Parent: "t1"}}}, "hosts[0].name"},
		{Change{Hosts: []HostGroup{{Name: "t1", Template: "dgx", Parent: "t1"}}}, "hosts[0].name"},
		{Change{Hosts: []HostGroup{{Name: "x", Template: "nope", Parent: "t1"}}}, "hosts[0].template"},
		{Change{Hosts: []HostGroup{{Name: "x", Template: "dgx", Parent: "s1"}}}, "hosts[0].parent"},
		{Change{Hosts: []HostGroup{{Name: "x", Template: "dgx"}}}, "hosts[0].parent"},
		{Change{Hosts: []HostGroup{{Name: "x", Template: "dgx", Parent: "t9"}}}, "hosts[0].parent"},
		{Change{Hosts: []HostGroup{{Name: "x/y", Template: "dgx", Parent: "t1"}}}, "hosts[0].name"},
		{Change{Hosts: []HostGroup{{Name: "x[1-3]", Template: "dgx", Parent: "t[1-2]"}}}, "hosts[0].parent"},
		{Change{Hosts: []HostGroup{{Name: "x", Template: "dgx", Parent: "t1", GPUs: []GPUIdentity{{Index: 5}}}}}, "hosts[0].gpuIDs[0].index"},
		{Change{Hosts: []HostGroup{{Name: "x", Template: "dgx", Parent: "t1", GPUs: []GPUIdentity{{Index: 0, BusID: "zz"}}}}}, "hosts[0].gpuIDs[0].busID"},
		{Change{Switches: []SwitchGroup{{Name: "t3", Level: "tor"}}}, "switches[0].parent"},
		{Change{Switches: []SwitchGroup{{Name: "t3", Level: "rack", Parent: "s1"}}}, "switches[0].level"},
		{Change{Switches: []SwitchGroup{{Name: "t2", Level: "tor", Parent: "s1"}}}, "switches[0].name"},
		{Change{Switches: []SwitchGroup{{Name: "s2", Level: "spine", Parent: "s1"}}}, "switches[0].parent"},
		{Change{Templates: []HostTemplate{{Name: "dgx"}}}, "templates[0].name"},
		{Change{Templates: []HostTemplate{{Name: "new", GPUs: 2, Accelerator: "B200"}}}, "templates[0].accelerator"},
		{Change{Templates: []HostTemplate{{Name: "new", GPUs: -1}}}, "templates[0].gpus"},
		{Change{Fabrics: []FabricGroup{{Name: "f", Kind: FabricMNNVL, Hosts: "h1"}}}, "fabrics[0].hosts"},
		{Change{Hosts: []HostGroup{{Name: "x", Template: "dgx", Parent: "t1"}}, Fabrics: []FabricGroup{{Name: "f", Kind: FabricMNNVL, Hosts: "x"}}}, "fabrics[0].hosts"},
		{Change{Hosts: []HostGroup{{Name: "x", Template: "box", Parent: "t1"}}, Fabrics: []FabricGroup{{Name: "f", Kind: "", Hosts: "x"}}}, "fabrics[0].kind"},
		{Change{Hosts: []HostGroup{{Name: "x", Template: "box", Parent: "t1"}}, Fabrics: []FabricGroup{{Name: "h2", Kind: FabricMNNVL, Hosts: "x"}}}, "fabrics[0].name"},
	} {
		_, err := c.Apply(tc.ch)
		var se *SpecError
		if !errorsAs(err, &se) || se.Path != tc.path {
			t.Errorf("%+v: got %v, want an error at %s", tc.ch, err, tc.path)
		}
	}
	fresh, _ := Build(base)
	sameCluster(t, c, fresh)
	if fresh.SameLineage(c) || !c.SameLineage(c) {
		t.Error("SameLineage of two builds")
	}
	// A ledger follows only the version made from its own.
	next, err := c.Apply(Change{Remove: []string{"h1"}})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger(c)
	if err := l.Allocate(Claim{Host: 0, GPUs: []GPUClaim{{GPU: 0}}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Follow(next); err == nil {
		t.Error("Follow accepted removing a host that holds a GPU")
	}
	if err := l.Release(Claim{Host: 0, GPUs: []GPUClaim{{GPU: 0}}}); err != nil {
		t.Fatal(err)
	}
	later, _ := next.Apply(Change{Remove: []string{"h2"}})
	if !later.SameLineage(c) || !c.SameLineage(later) {
		t.Error("versions of one cluster are not of one lineage")
	}
	if err := l.Follow(later); err == nil {
		t.Error("Follow skipped a version")
	}
	if err := l.Follow(next); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHostHealth(0, Healthy); err == nil {
		t.Error("SetHostHealth accepted a removed host")
	}
}

// liveWork is the work and health a test put on a ledger, to replay it.
type liveWork struct {
	claims []Claim
	health []hostHealth
	cordon []hostCordon
}

type hostCordon struct {
	h  HostID
	on bool
}

type hostHealth struct {
	h  HostID
	hh Health
}

// churn allocates and releases a few random claims and changes the health
// of a host.
func (w *liveWork) churn(t *rapid.T, l *Ledger) {
	c := l.Cluster()
	for range rapid.IntRange(0, 6).Draw(t, "allocations") {
		h := HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "host"))
		if c.Removed(h) {
			continue
		}
		first, n := c.HostGPUs(h)
		cl := Claim{Host: h, CPUMilli: int64(rapid.IntRange(0, 2).Draw(t, "cpu")), MemoryMiB: int64(rapid.IntRange(0, 2).Draw(t, "mem"))}
		if n > 0 {
			g := first + GPUID(rapid.IntRange(0, n-1).Draw(t, "gpu"))
			gc := GPUClaim{GPU: g}
			if rapid.Bool().Draw(t, "share") {
				gc.Kind, gc.Milli = ClaimShare, int32(rapid.IntRange(1, 1000).Draw(t, "milli"))
			}
			cl.GPUs = []GPUClaim{gc}
		}
		if l.Allocate(cl) == nil {
			w.claims = append(w.claims, cl)
		}
	}
	if len(w.claims) > 0 && rapid.Bool().Draw(t, "release") {
		i := rapid.IntRange(0, len(w.claims)-1).Draw(t, "released")
		if err := l.Release(w.claims[i]); err != nil {
			t.Fatalf("releasing a held claim: %v", err)
		}
		w.claims = slices.Delete(w.claims, i, i+1)
	}
	if rapid.Bool().Draw(t, "health?") {
		h := HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "sick host"))
		hh := Health(rapid.IntRange(0, 2).Draw(t, "health"))
		if !c.Removed(h) {
			if err := l.SetHostHealth(h, hh); err != nil {
				t.Fatalf("SetHostHealth: %v", err)
			}
			w.health = append(w.health, hostHealth{h, hh})
		}
	}
	if rapid.Bool().Draw(t, "cordon?") {
		h := HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "cordoned host"))
		on := rapid.Bool().Draw(t, "cordon")
		if !c.Removed(h) {
			if err := l.SetHostCordoned(h, on); err != nil {
				t.Fatalf("SetHostCordoned: %v", err)
			}
			w.cordon = append(w.cordon, hostCordon{h, on})
		}
	}
}

// holdsOn reports whether any claim is on a host named in names.
func (w *liveWork) holdsOn(c *Cluster, names []string) bool {
	for _, cl := range w.claims {
		if slices.Contains(names, c.HostName(cl.Host)) && (cl.CPUMilli > 0 || cl.MemoryMiB > 0 || len(cl.GPUs) > 0) {
			return true
		}
	}
	return false
}

// releaseOn releases the claims on the hosts named (of cluster c).
func (w *liveWork) releaseOn(t *rapid.T, l *Ledger, c *Cluster, names []string) {
	w.claims = slices.DeleteFunc(w.claims, func(cl Claim) bool {
		if !slices.Contains(names, c.HostName(cl.Host)) {
			return false
		}
		if err := l.Release(cl); err != nil {
			t.Fatalf("releasing a claim on a removed host: %v", err)
		}
		return true
	})
	w.health = slices.DeleteFunc(w.health, func(x hostHealth) bool { return slices.Contains(names, c.HostName(x.h)) })
	w.cordon = slices.DeleteFunc(w.cordon, func(x hostCordon) bool { return slices.Contains(names, c.HostName(x.h)) })
}

func (w *liveWork) replay(t *rapid.T, l *Ledger) {
	for _, x := range w.health {
		if err := l.SetHostHealth(x.h, x.hh); err != nil {
			t.Fatalf("replaying health: %v", err)
		}
	}
	for _, x := range w.cordon {
		if err := l.SetHostCordoned(x.h, x.on); err != nil {
			t.Fatalf("replaying cordons: %v", err)
		}
	}
	// Health first would refuse claims on unhealthy hosts: replay them as
	// the trial restore does, ignoring health.
	if err := l.TrialRestore(w.claims...); err != nil {
		t.Fatalf("replaying claims: %v", err)
	}
}

// genChange draws a valid change of c.
func genChange(t *rapid.T, c *Cluster, step int) Change {
	var ch Change
	var live []string
	for h := range c.NumHosts() {
		if !c.Removed(HostID(h)) {
			live = append(live, c.HostName(HostID(h)))
		}
	}
	for range rapid.IntRange(0, min(2, len(live))).Draw(t, "removals") {
		i := rapid.IntRange(0, len(live)-1).Draw(t, "removed")
		ch.Remove = append(ch.Remove, live[i])
		live = slices.Delete(live, i, i+1)
	}
	templates := c.Templates()
	if rapid.Bool().Draw(t, "new template?") {
		tm := HostTemplate{Name: fmt.Sprintf("live-t%d", step), CPUMilli: 8, MemoryMiB: 8}
		if n := rapid.IntRange(0, 4).Draw(t, "template gpus"); n > 0 {
			tm.GPUs, tm.Accelerator = n, c.Models()[rapid.IntRange(0, len(c.Models())-1).Draw(t, "model")].Model
			if rapid.Bool().Draw(t, "nvswitch?") {
				tm.Fabrics = []HostFabricSpec{{Kind: FabricNVSwitch, GPUs: seqInts(n)}}
			}
		}
		ch.Templates = append(ch.Templates, tm)
		templates = append(templates, tm.Name)
	}
	nLvl := c.NumLevels() - 3
	var leaves []string
	if nLvl > 0 {
		for _, d := range c.DomainsAt(LevelHost + 1) {
			leaves = append(leaves, c.DomainName(d))
		}
		if rapid.Bool().Draw(t, "new switch?") {
			lv := rapid.IntRange(0, nLvl-1).Draw(t, "switch level") // outermost 0
			sg := SwitchGroup{Name: fmt.Sprintf("live-s%d", step), Level: c.netLvls[lv].Name}
			if lv > 0 {
				ps := c.DomainsAt(c.netLevel(lv - 1))
				sg.Parent = c.DomainName(ps[rapid.IntRange(0, len(ps)-1).Draw(t, "switch parent")])
			}
			ch.Switches = append(ch.Switches, sg)
			if lv == nLvl-1 {
				leaves = append(leaves, sg.Name)
			}
		}
	}
	var added []string
	for i := range rapid.IntRange(0, 3).Draw(t, "new hosts") {
		name := fmt.Sprintf("live-h%d-%d", step, i)
		if i == 0 && len(ch.Remove) > 0 && rapid.Bool().Draw(t, "same name?") {
			name = ch.Remove[0] // the host changes shape
		}
		hg := HostGroup{Name: name, Template: templates[rapid.IntRange(0, len(templates)-1).Draw(t, "host template")]}
		if len(leaves) > 0 {
			hg.Parent = leaves[rapid.IntRange(0, len(leaves)-1).Draw(t, "host parent")]
		} else if nLvl > 0 {
			break // no switch to hang a host under
		}
		ch.Hosts = append(ch.Hosts, hg)
		if tm := liveTemplate(c, &ch, hg.Template); tm.GPUs > 0 && len(tm.Fabrics) == 0 {
			added = append(added, name)
		}
	}
	if len(added) > 0 && rapid.Bool().Draw(t, "new fabric?") {
		ch.Fabrics = []FabricGroup{{Name: fmt.Sprintf("live-f%d", step), Kind: FabricMNNVL, Hosts: added[0]}}
		for _, h := range added[1:] {
			ch.Fabrics[0].Hosts += "," + h
		}
	}
	return ch
}

func liveTemplate(c *Cluster, ch *Change, name string) HostTemplate {
	for _, tm := range ch.Templates {
		if tm.Name == name {
			return tm
		}
	}
	for i := range c.templates {
		if c.templates[i].name == name {
			return *c.templates[i].spec
		}
	}
	return HostTemplate{}
}

func seqInts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// removedDomain reports whether d belongs to a removed host.
func removedDomain(c *Cluster, d DomainID) bool {
	h := c.domains[d].host
	return h != NoHost && c.Removed(h)
}

// checkLiveStructure recomputes every list of c from parent pointers,
// host ancestors and GPU fabrics and compares.
func checkLiveStructure(t fataler, c *Cluster) {
	t.Helper()
	nd := c.NumDomains()
	hosts := make([][]HostID, nd)
	gpus := make([][]GPUID, nd)
	kids := make([][]DomainID, nd)
	leaves := make([][]DomainID, nd)
	levels := make([][]DomainID, c.NumLevels())
	for d := DomainID(0); int(d) < nd; d++ {
		x := c.Domain(d)
		if removedDomain(c, d) {
			if _, ok := c.DomainByName(x.Name); ok && c.domains[d].kind != KindHost {
				if got, _ := c.DomainByName(x.Name); got == d {
					t.Fatalf("domain %s of a removed host still found by name", x.Name)
				}
			}
			continue
		}
		if got, ok := c.DomainByName(x.Name); !ok || got != d {
			t.Fatalf("DomainByName(%s) = %d, %v; want %d", x.Name, got, ok, d)
		}
		if x.Parent != NoDomain {
			kids[x.Parent] = append(kids[x.Parent], d)
		}
		if x.Level >= 0 {
			levels[x.Level] = append(levels[x.Level], d)
		}
		if x.Kind == KindNetwork && x.Level == LevelHost+1 {
			for a := d; a != NoDomain; a = c.DomainParent(a) {
				leaves[a] = append(leaves[a], d)
			}
		}
	}
	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		if c.Removed(h) {
			if got, ok := c.HostByName(c.HostName(h)); ok && got == h {
				t.Fatalf("removed host %s still found by name", c.HostName(h))
			}
			continue
		}
		if got, ok := c.HostByName(c.HostName(h)); !ok || got != h {
			t.Fatalf("HostByName(%s) = %d, %v", c.HostName(h), got, ok)
		}
		first, n := c.HostGPUs(h)
		for d := c.HostDomain(h); d != NoDomain; d = c.DomainParent(d) {
			hosts[d] = append(hosts[d], h)
			for g := first; g < first+GPUID(n); g++ {
				gpus[d] = append(gpus[d], g)
			}
		}
		for g := first; g < first+GPUID(n); g++ {
			anc := c.Ancestors(g)
			for i := 0; i+1 < len(anc); i++ {
				if c.DomainParent(anc[i]) != anc[i+1] {
					t.Fatalf("GPU %s: ancestors %v do not follow parents", c.GPUName(g), anc)
				}
			}
			if anc[len(anc)-1] != c.Root() || c.GPUAt(g, LevelHost) != c.HostDomain(h) || c.HostAt(h, c.LevelCluster()) != c.Root() {
				t.Fatalf("GPU %s: ancestors %v", c.GPUName(g), anc)
			}
			if f := c.GPUFabric(g); f != NoDomain && c.Domain(f).Host == NoHost {
				gpus[f] = append(gpus[f], g)
			}
		}
	}
	for d := DomainID(0); int(d) < nd; d++ {
		x := c.Domain(d)
		if removedDomain(c, d) {
			continue
		}
		switch x.Kind {
		case KindCluster, KindNetwork, KindHost:
			if !slices.Equal(c.DomainHostList(d), hosts[d]) {
				t.Fatalf("hosts of %s: %v, recomputed %v", x.Name, c.DomainHostList(d), hosts[d])
			}
			lo, hi := c.DomainHosts(d)
			if len(hosts[d]) > 0 && (lo != hosts[d][0] || hi != hosts[d][len(hosts[d])-1]+1) || len(hosts[d]) == 0 && lo != hi {
				t.Fatalf("host range of %s: [%d, %d) for hosts %v", x.Name, lo, hi, hosts[d])
			}
			if !slices.Equal(c.DomainGPUs(d), gpus[d]) {
				t.Fatalf("GPUs of %s: %v, recomputed %v", x.Name, c.DomainGPUs(d), gpus[d])
			}
			if !slices.Equal(c.DomainChildren(d), kids[d]) {
				t.Fatalf("children of %s: %v, recomputed %v", x.Name, c.DomainChildren(d), kids[d])
			}
			if x.Kind != KindHost && !slices.Equal(c.DomainLeaves(d), leaves[d]) {
				t.Fatalf("leaves of %s: %v, recomputed %v", x.Name, c.DomainLeaves(d), leaves[d])
			}
		case KindFabric:
			if x.Host == NoHost && !slices.Equal(c.DomainGPUs(d), gpus[d]) {
				t.Fatalf("GPUs of fabric %s: %v, recomputed %v", x.Name, c.DomainGPUs(d), gpus[d])
			}
		}
	}
	for lv := Level(0); int(lv) < c.NumLevels(); lv++ {
		if !slices.Equal(c.DomainsAt(lv), levels[lv]) {
			t.Fatalf("domains at %s: %v, recomputed %v", c.LevelName(lv), c.DomainsAt(lv), levels[lv])
		}
	}
}

// sameCluster checks that a and b are the same cluster through every query.
func sameCluster(t fataler, a, b *Cluster) {
	t.Helper()
	if a.NumHosts() != b.NumHosts() || a.NumGPUs() != b.NumGPUs() || a.NumDomains() != b.NumDomains() || a.NumRemoved() != b.NumRemoved() {
		t.Fatalf("sizes differ: %s vs %s", a, b)
	}
	if !reflect.DeepEqual(a.Spec(), b.Spec()) {
		t.Fatalf("specs differ")
	}
	for h := HostID(0); int(h) < a.NumHosts(); h++ {
		if a.Host(h) != b.Host(h) {
			t.Fatalf("host %d: %+v vs %+v", h, a.Host(h), b.Host(h))
		}
	}
	for g := GPUID(0); int(g) < a.NumGPUs(); g++ {
		if a.GPU(g) != b.GPU(g) || !slices.Equal(a.Ancestors(g), b.Ancestors(g)) {
			t.Fatalf("GPU %d: %+v vs %+v", g, a.GPU(g), b.GPU(g))
		}
	}
	for d := DomainID(0); int(d) < a.NumDomains(); d++ {
		if a.Domain(d) != b.Domain(d) || !slices.Equal(a.DomainGPUs(d), b.DomainGPUs(d)) ||
			!slices.Equal(a.DomainChildren(d), b.DomainChildren(d)) || !slices.Equal(a.DomainHostList(d), b.DomainHostList(d)) ||
			!slices.Equal(a.DomainLeaves(d), b.DomainLeaves(d)) {
			t.Fatalf("domain %d: %+v vs %+v", d, a.Domain(d), b.Domain(d))
		}
	}
	for lv := Level(0); int(lv) < a.NumLevels(); lv++ {
		if !slices.Equal(a.DomainsAt(lv), b.DomainsAt(lv)) {
			t.Fatalf("level %d differs", lv)
		}
	}
}

// sameLedger checks that a (followed live) and b (made fresh) agree in
// state and in the answers to ordered queries, and that both pass Check.
func sameLedger(t fataler, a, b *Ledger) {
	t.Helper()
	if err := a.Check(); err != nil {
		t.Fatalf("live ledger: %v", err)
	}
	if err := b.Check(); err != nil {
		t.Fatalf("fresh ledger: %v", err)
	}
	if sa, sb := ledgerState(a), ledgerState(b); sa != sb {
		t.Fatalf("ledger states differ:\nlive:\n%s\nfresh:\n%s", sa, sb)
	}
	c := a.Cluster()
	for lv := Level(0); int(lv) < c.NumLevels(); lv++ {
		if qa, qb := levelWalk(a, lv), levelWalk(b, lv); qa != qb {
			t.Fatalf("AscendDomains(%s): live %s, fresh %s", c.LevelName(lv), qa, qb)
		}
		for _, d := range c.DomainsAt(lv) {
			if lv == LevelFabric || lv == LevelHost {
				continue
			}
			for k := 0; k <= 2; k++ {
				ha, oka := a.BestHost(d, k, NoModel)
				hb, okb := b.BestHost(d, k, NoModel)
				if ha != hb || oka != okb {
					t.Fatalf("BestHost(%s, %d): live %d, fresh %d", c.DomainName(d), k, ha, hb)
				}
			}
		}
	}
	for m := range c.Models() {
		var wa, wb []GPUID
		a.AscendSharedGPUs(ModelID(m), 0, func(g GPUID, _ int) bool { wa = append(wa, g); return true })
		b.AscendSharedGPUs(ModelID(m), 0, func(g GPUID, _ int) bool { wb = append(wb, g); return true })
		if !slices.Equal(wa, wb) {
			t.Fatalf("shared GPUs of model %d: live %v, fresh %v", m, wa, wb)
		}
	}
}

func levelWalk(l *Ledger, lv Level) string {
	var o obs
	l.AscendDomains(lv, 0, func(d DomainID, free int) bool {
		if removedDomain(l.Cluster(), d) {
			o.str("REMOVED")
		}
		o.num(int(d), free)
		return true
	})
	return o.String()
}

func errorsAs(err error, target any) bool { return err != nil && errors.As(err, target) }

// liveFile is a cluster file with live changes, the seed of FuzzLoadLive.
const liveFile = `version: 1
name: c
levels: [{name: spine}, {name: tor}]
accelerators: [{model: H100}]
templates:
  - {name: dgx, cpuMilli: 1000, memoryMiB: 1000, accelerator: H100, gpus: 2, fabrics: [{kind: nvswitch, gpus: [0, 1]}]}
switches:
  - {name: s1, level: spine}
  - {name: "t[1-2]", level: tor, parent: s1}
hosts:
  - {name: "h[1-4]", template: dgx, parent: "t[1-2]"}
live:
  - hosts: [{name: h5, template: dgx, parent: t1}]
  - remove: [h2]
    templates: [{name: box, cpuMilli: 8, memoryMiB: 8, accelerator: H100, gpus: 1}]
    switches: [{name: t3, level: tor, parent: s1}]
    hosts: [{name: h2, template: box, parent: t3}, {name: "n[1-2]", template: box, parent: t1}]
    fabrics: [{name: rack1, kind: mnnvl, hosts: "h2,n[1-2]"}]
`

// FuzzLoadLive loads mutated cluster files with live changes: a file
// either fails with an error naming its place, or builds a cluster whose
// lists agree with a naive recomputation and whose spec rebuilds it.
func FuzzLoadLive(f *testing.F) {
	f.Add([]byte(liveFile))
	f.Add([]byte(strings.Replace(liveFile, "remove: [h2]", "remove: [h9]", 1)))
	f.Add([]byte(strings.Replace(liveFile, "parent: t3", "parent: s1", 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Load(b, "fuzz.yaml", FormatYAML)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is no *FileError", err, err)
			}
			return
		}
		checkLiveStructure(t, c)
		fresh, err := Build(c.Spec())
		if err != nil {
			t.Fatalf("rebuilding: %v", err)
		}
		sameCluster(t, c, fresh)
		if err := NewLedger(c).Check(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLiveFile(t *testing.T) {
	c, err := Load([]byte(liveFile), "live.yaml", FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	checkLiveStructure(t, c)
	h2, _ := c.HostByName("h2")
	t1, _ := c.DomainByName("t1")
	// h1..h4 are 0..3, h5 is 4, h2 joins again as 5, n1 and n2 are 6, 7.
	if h2 != 5 || !c.Removed(1) || !slices.Equal(c.DomainHostList(t1), []HostID{0, 4, 6, 7}) {
		t.Fatalf("h2 = %d, hosts of t1 %v", h2, c.DomainHostList(t1))
	}
	if lo, hi := c.DomainHosts(t1); lo != 0 || hi != 8 {
		t.Fatalf("range of t1 [%d, %d)", lo, hi)
	}
	_, err = Load([]byte(strings.Replace(liveFile, "parent: t3", "parent: s1", 1)), "live.yaml", FormatYAML)
	if err == nil || !strings.Contains(err.Error(), "live[1].hosts[0].parent") || !strings.Contains(err.Error(), "live.yaml:") {
		t.Fatalf("error %v does not name the file, line and field", err)
	}
}

func TestCordon(t *testing.T) {
	c, err := Load([]byte(liveFile), "live.yaml", FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger(c)
	h, _ := c.HostByName("h1")
	first, _ := c.HostGPUs(h)
	hold := Claim{Host: h, CPUMilli: 1, GPUs: []GPUClaim{{GPU: first}}}
	if err := l.Allocate(hold); err != nil {
		t.Fatal(err)
	}
	root := c.Root()
	free, healthy := l.FreeGPUs(root), l.HealthyGPUs(root)
	if err := l.SetHostCordoned(h, true); err != nil {
		t.Fatal(err)
	}
	// h1 has 2 GPUs, one held: the free count loses 1, the healthy 2.
	if l.FreeGPUs(root) != free-1 || l.HealthyGPUs(root) != healthy-2 || l.HostUsable(h) || l.HostHealth(h) != Healthy {
		t.Fatalf("cordoned: free %d healthy %d", l.FreeGPUs(root), l.HealthyGPUs(root))
	}
	err = l.Allocate(Claim{Host: h, GPUs: []GPUClaim{{GPU: first + 1}}})
	if !errors.Is(err, ErrCordoned) {
		t.Fatalf("allocating on a cordoned host: %v", err)
	}
	if b, ok := l.BestHost(root, 1, NoModel); ok && b == h {
		t.Fatal("BestHost returned a cordoned host")
	}
	if err := l.Release(hold); err != nil { // running work ends normally
		t.Fatal(err)
	}
	if err := l.SetHostHealth(h, Failed); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHostCordoned(h, false); err != nil {
		t.Fatal(err)
	}
	if l.HostUsable(h) || l.HealthyGPUs(root) != healthy-2 {
		t.Fatal("uncordoning made a failed host usable")
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}
