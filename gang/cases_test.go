package gang

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// place runs one policy and fails the test on an unexpected outcome.
func place(t *testing.T, policy string, l *topology.Ledger, j *workload.Job) (*Placement, *Explanation) {
	t.Helper()
	c := l.Cluster()
	r := mustRequest(t, c, j)
	p := &Placement{}
	x := newPolicy(t, policy, c).Place(l, r, p)
	if x == nil {
		checkPlacement(t, l, r, p)
	}
	return p, x
}

func gpusOf(p *Placement) []topology.GPUID {
	var out []topology.GPUID
	for _, cl := range p.Claims {
		for _, gc := range cl.GPUs {
			out = append(out, gc.GPU)
		}
	}
	return out
}

// TestScatteredToRExplainsFragmentation: 125 DGX H100 hosts, 32 to a ToR,
// with every other GPU taken, so each host has 4 free GPUs and each ToR
// 116–128. Two 8-GPU tasks required in one ToR cannot place: every ToR
// has the 16 free GPUs (no ToR is short), but no host has 8; the cluster
// has 500 free GPUs, so it is fragmentation, not capacity.
func TestScatteredToRExplainsFragmentation(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	l := topology.NewLedger(c)
	for g := topology.GPUID(0); int(g) < c.NumGPUs(); g += 2 {
		takeGPUs(t, l, g)
	}
	for _, policy := range PolicyNames() {
		_, x := place(t, policy, l, job("j", 2, workload.TaskGroup{GPUs: 8}, req("tor")))
		if x == nil {
			t.Fatalf("%s: placed 2×8 GPUs with no free host", policy)
		}
		if x.Verdict != VerdictFragmentation || !x.Fragmented() {
			t.Fatalf("%s: verdict %v, want fragmentation: %s", policy, x.Verdict, x)
		}
		// 500 free = 125 hosts × 4; every ToR has ≥ 16 free.
		if x.FreeGPUs != 500 || x.Usable != 500 || x.GPUs != 16 || x.LevelName != "tor" || x.TooSmall != 0 {
			t.Fatalf("%s: %+v", policy, x)
		}
		if x.Best.Short != 0 || x.Best.Tasks != 0 || x.Excluded[ReasonGPU] != 125 {
			t.Fatalf("%s: best %+v, excluded %v", policy, x.Best, x.Excluded)
		}
		if s := x.String(); !strings.Contains(s, "in one tor") || !strings.Contains(s, "fragmentation") || !strings.Contains(s, "gpu 125") {
			t.Fatalf("%s: %s", policy, s)
		}
	}
	// Sixteen 1-GPU tasks do fit in one ToR, and topology-tiered keeps
	// them to 4 hosts (each host's 4 free GPUs behind one NUMA node).
	p, x := place(t, "topology", l, job("k", 16, workload.TaskGroup{GPUs: 1}, req("tor")))
	if x != nil {
		t.Fatal(x)
	}
	if n := len(p.Hosts()); n != 4 || c.LevelName(p.Level) != "tor" {
		t.Fatalf("16 GPUs on %d hosts at level %s", n, c.LevelName(p.Level))
	}
}

// TestNVLinkShortByTwo: every DGX H100 host has 2 of its 8 NVSwitch-joined
// GPUs taken; 8 GPUs required in one NVLink domain do not fit, the best
// domain has 6 free (2 short).
func TestNVLinkShortByTwo(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	l := topology.NewLedger(c)
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		first, _ := c.HostGPUs(h)
		takeGPUs(t, l, first+1, first+6)
	}
	for _, j := range []*workload.Job{
		job("one", 1, workload.TaskGroup{GPUs: 8}, req("nvlink")),
		job("eight", 8, workload.TaskGroup{GPUs: 1}, req("nvlink")),
	} {
		_, x := place(t, "topology", l, j)
		if x == nil {
			t.Fatalf("%s placed", j.ID)
		}
		if x.LevelName != "nvlink" || x.Best.FreeGPUs != 6 || x.Best.Short != 2 || x.Verdict != VerdictFragmentation {
			t.Fatalf("%s: %+v", j.ID, x)
		}
		if s := x.String(); !strings.Contains(s, "needs 8 GPUs") || !strings.Contains(s, "in one nvlink") || !strings.Contains(s, "has 6 free (2 short)") {
			t.Fatalf("%s: %s", j.ID, s)
		}
	}
	// Six fit, on one host, and the placement says so.
	p, x := place(t, "best-fit", l, job("six", 6, workload.TaskGroup{GPUs: 1}, req("nvlink")))
	if x != nil || len(p.Hosts()) != 1 || p.Level != topology.LevelFabric {
		t.Fatalf("six: %v %+v", x, p)
	}
}

// TestPCIeBoxSocketLocality: on the 8-GPU PCIe box (two sockets, each a
// switch above two switches of two GPUs; no NVLink), a 4-GPU task takes
// one socket (its GPUs are PIX/PXB apart, never SYS), and a 2-GPU task
// takes one switch pair, in the socket with the fewest free GPUs.
func TestPCIeBoxSocketLocality(t *testing.T) {
	c := mustPreset(t, "pcie-8gpu")
	for _, policy := range PolicyNames() {
		l := topology.NewLedger(c)
		p, x := place(t, policy, l, job("four", 1, workload.TaskGroup{GPUs: 4}))
		if x != nil {
			t.Fatal(x)
		}
		gs := gpusOf(p)
		for _, a := range gs {
			for _, b := range gs {
				if k := c.Link(a, b).Kind; k > topology.LinkPXB {
					t.Fatalf("%s: GPUs %v include a %v pair", policy, gs, k)
				}
			}
		}
	}
	l := topology.NewLedger(c)
	takeGPUs(t, l, 0)
	// Socket 0 has 3 free (1,2,3), socket 1 has 4: a 4-GPU task goes to
	// socket 1, a 2-GPU task to socket 0's free switch pair (2,3).
	p, _ := place(t, "best-fit", l, job("four", 1, workload.TaskGroup{GPUs: 4}))
	if got := gpusOf(p); !equalIDs(got, 4, 5, 6, 7) {
		t.Fatalf("4-GPU task on %v, want 4 5 6 7", got)
	}
	p, _ = place(t, "best-fit", l, job("two", 1, workload.TaskGroup{GPUs: 2}))
	if got := gpusOf(p); !equalIDs(got, 2, 3) || c.Link(2, 3).Kind != topology.LinkPIX {
		t.Fatalf("2-GPU task on %v, want 2 3 (PIX)", got)
	}
}

func equalIDs(got []topology.GPUID, want ...topology.GPUID) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestAscendHCCSGroup: on an Ascend 910 box (two HCCS groups of four), a
// 4-GPU task stays in one HCCS group; with one NPU of the first group busy,
// it goes to the second.
func TestAscendHCCSGroup(t *testing.T) {
	c := mustPreset(t, "ascend-910")
	l := topology.NewLedger(c)
	p, _ := place(t, "best-fit", l, job("a", 1, workload.TaskGroup{GPUs: 4}))
	if !equalIDs(gpusOf(p), 0, 1, 2, 3) {
		t.Fatalf("got %v", gpusOf(p))
	}
	takeGPUs(t, l, 1)
	p, _ = place(t, "best-fit", l, job("b", 1, workload.TaskGroup{GPUs: 4}))
	if !equalIDs(gpusOf(p), 4, 5, 6, 7) {
		t.Fatalf("got %v", gpusOf(p))
	}
}

// TestGB200RackJob: two GB200 NVL72 racks (18 trays of 4 GPUs each, one
// multi-node NVLink domain per rack). A 64-GPU job required in one NVLink
// domain lands inside one rack; with 20 GPUs of rack 1 busy (52 free) it
// goes to rack 2, while a 16-GPU job takes rack 1 (best fit, 52 ≥ 16).
func TestGB200RackJob(t *testing.T) {
	s, err := topology.Generator{Name: "nvl72x2", Machine: "gb200-nvl72", Hosts: 36}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	l := topology.NewLedger(c)
	for g := topology.GPUID(0); g < 20; g++ {
		takeGPUs(t, l, g)
	}
	rack2 := c.GPUFabric(topology.GPUID(c.NumGPUs() - 1))
	for _, policy := range []string{"topology", "best-fit", "buddy", "fgd"} {
		p, x := place(t, policy, l, job("big", 16, workload.TaskGroup{GPUs: 4}, req("nvlink")))
		if x != nil {
			t.Fatalf("%s: %s", policy, x)
		}
		for _, g := range gpusOf(p) {
			if c.GPUFabric(g) != rack2 {
				t.Fatalf("%s: GPU %s outside rack 2", policy, c.GPUName(g))
			}
		}
	}
	p, x := place(t, "topology", l, job("small", 4, workload.TaskGroup{GPUs: 4}))
	if x != nil {
		t.Fatal(x)
	}
	if p.Level != topology.LevelFabric || p.Domain != c.GPUFabric(0) {
		t.Fatalf("16 GPUs at %s %s, want rack 1's NVLink domain", c.LevelName(p.Level), c.DomainName(p.Domain))
	}
	// 73 GPUs never fit one rack: too large.
	_, x = place(t, "topology", l, job("huge", 73, workload.TaskGroup{GPUs: 1}, req("nvlink")))
	if x == nil || x.Verdict != VerdictTooLarge || x.Largest != 72 {
		t.Fatalf("73 GPUs: %v", x)
	}
}

// TestElasticGang: 8 tasks of 8 GPUs wanted, at least 4; only 5 hosts are
// free, so 5 place. With 3 free hosts it does not fit.
func TestElasticGang(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	for _, policy := range PolicyNames() {
		l := topology.NewLedger(c)
		for h := topology.HostID(5); int(h) < c.NumHosts(); h++ {
			first, _ := c.HostGPUs(h)
			takeGPUs(t, l, first)
		}
		j := job("e", 8, workload.TaskGroup{GPUs: 8, MinCount: 4})
		p, x := place(t, policy, l, j)
		if x != nil || p.Placed[0] != 5 {
			t.Fatalf("%s: placed %v, %v", policy, p.Placed, x)
		}
		takeGPUs(t, l, 0, 8)
		_, x = place(t, policy, l, j)
		if x == nil || x.Tasks != 4 || x.GPUs != 32 {
			t.Fatalf("%s: %v", policy, x)
		}
	}
}

// TestMIGLegalSlots: seven 1g.10gb instances pack onto one H100 at legal
// starts, each leaving the most placements possible; an eighth opens a
// second GPU; a 7g.80gb needs a free GPU.
func TestMIGLegalSlots(t *testing.T) {
	c := mustPreset(t, "dgx-h100")
	l := topology.NewLedger(c)
	for _, policy := range []string{"best-fit", "topology", "first-fit", "fgd"} {
		p, x := place(t, policy, l, job("m", 8, workload.TaskGroup{MIGProfile: "1g.10gb"}))
		if x != nil {
			t.Fatal(x)
		}
		perGPU := map[topology.GPUID]int{}
		for _, cl := range p.Claims {
			gc := cl.GPUs[0]
			perGPU[gc.GPU]++
			if gc.Start < 0 || gc.Start > 6 {
				t.Fatalf("%s: start %d", policy, gc.Start)
			}
		}
		if len(perGPU) != 2 {
			t.Fatalf("%s: 8 instances over %d GPUs, want 2", policy, len(perGPU))
		}
		tx, err := Commit(l, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Check(); err != nil {
			t.Fatal(err)
		}
		if err := tx.Undo(); err != nil {
			t.Fatal(err)
		}
	}
	// The first 1g instance goes to start 6: it blocks no 4-slot profile
	// at start 0.
	p, _ := place(t, "best-fit", l, job("one", 1, workload.TaskGroup{MIGProfile: "1g.10gb"}))
	if p.Claims[0].GPUs[0].Start != 6 {
		t.Fatalf("first 1g at start %d, want 6", p.Claims[0].GPUs[0].Start)
	}
	if _, err := Commit(l, p); err != nil {
		t.Fatal(err)
	}
	// A 4g.40gb still fits that GPU at start 0 and goes there (MIG GPUs first).
	p, _ = place(t, "best-fit", l, job("four", 1, workload.TaskGroup{MIGProfile: "4g.40gb"}))
	if gc := p.Claims[0].GPUs[0]; gc.GPU != 0 || gc.Start != 0 {
		t.Fatalf("4g at %+v", gc)
	}
}

// TestModelConstraint: a cluster of H100 and L40S hosts; tasks pinned to
// L40S land only there, and an unknown model is a field error.
func TestModelConstraint(t *testing.T) {
	_, h, _ := topology.MachineTemplate("dgx-h100")
	ht, _, _ := topology.MachineTemplate("dgx-h100")
	lt, la, _ := topology.MachineTemplate("pcie-8gpu")
	c, err := topology.Build(topology.Spec{
		Version: topology.SpecVersion, Name: "mixed",
		Accelerators: []topology.AcceleratorSpec{h, la},
		Templates:    []topology.HostTemplate{ht, lt},
		Hosts: []topology.HostGroup{
			{Name: "h[1-3]", Template: ht.Name},
			{Name: "l[1-2]", Template: lt.Name},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := topology.NewLedger(c)
	for _, policy := range PolicyNames() {
		p, x := place(t, policy, l, job("l", 4, workload.TaskGroup{GPUs: 2, Models: []string{la.Model}}))
		if x != nil {
			t.Fatalf("%s: %s", policy, x)
		}
		for _, cl := range p.Claims {
			if c.Model(c.HostModel(cl.Host)).Model != la.Model {
				t.Fatalf("%s: task on %s", policy, c.HostName(cl.Host))
			}
		}
	}
	// 17 L40S GPUs: only 16 exist. Capacity, and 3 hosts excluded by model.
	_, x := place(t, "best-fit", l, job("big", 17, workload.TaskGroup{GPUs: 1, Models: []string{la.Model}}))
	if x == nil || x.Verdict != VerdictCapacity || x.Excluded[ReasonModel] != 3 || x.Usable != 16 {
		t.Fatalf("%+v", x)
	}
	_, err = NewRequest(c, job("bad", 1, workload.TaskGroup{GPUs: 1, Models: []string{la.Model, "B300"}}))
	var fe *workload.FieldError
	if !errors.As(err, &fe) || fe.Field != "groups[0].models[1]" {
		t.Fatalf("unknown model: %v", err)
	}
}

// TestRequiredHostAndPreferredRelaxed: two 4-GPU tasks required on one
// host share it; preferred nvlink that cannot hold 16 GPUs is relaxed and
// recorded.
func TestRequiredHostAndPreferredRelaxed(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	l := topology.NewLedger(c)
	p, x := place(t, "best-fit", l, job("h", 2, workload.TaskGroup{GPUs: 4}, req("host")))
	if x != nil || len(p.Hosts()) != 1 {
		t.Fatalf("%v %v", x, p.Hosts())
	}
	for _, policy := range PolicyNames() {
		p, x = place(t, policy, l, job("r", 2, workload.TaskGroup{GPUs: 8}, pref("nvlink"), pref("tor")))
		if x != nil {
			t.Fatal(x)
		}
		if len(p.Relaxed) != 1 || p.Relaxed[0] != topology.LevelFabric {
			t.Fatalf("%s: relaxed %v", policy, p.Relaxed)
		}
	}
	p, _ = place(t, "topology", l, job("t", 2, workload.TaskGroup{GPUs: 8}, pref("tor")))
	if len(p.Relaxed) != 0 || !holds(c, p, 2) {
		t.Fatalf("topology relaxed %v", p.Relaxed)
	}
}

// TestBuddyCells: on a DGX H100 (cells GPU 1 → NUMA 4 → host 8), a 3-GPU
// task takes a wholly free NUMA cell; once both NUMA nodes are split, a
// 2-GPU task does not fit even with 4 free GPUs, while best-fit places it.
func TestBuddyCells(t *testing.T) {
	c := mustPreset(t, "dgx-h100")
	l := topology.NewLedger(c)
	p, _ := place(t, "buddy", l, job("three", 1, workload.TaskGroup{GPUs: 3}))
	for _, g := range gpusOf(p) {
		if c.GPU(g).NUMA != c.GPU(0).NUMA {
			t.Fatalf("3-GPU task spans NUMA nodes: %v", gpusOf(p))
		}
	}
	takeGPUs(t, l, 0, 1, 4, 5)
	if _, x := place(t, "buddy", l, job("two", 1, workload.TaskGroup{GPUs: 2})); x == nil {
		t.Fatal("buddy placed a 2-GPU task with no free 4-GPU cell")
	}
	if _, x := place(t, "best-fit", l, job("two", 1, workload.TaskGroup{GPUs: 2})); x != nil {
		t.Fatal(x)
	}
	if _, x := place(t, "buddy", l, job("one", 2, workload.TaskGroup{GPUs: 1})); x != nil {
		t.Fatal(x)
	}
}

// TestQuotaVerdict: hosts held back by AllowHost count as quota.
func TestQuotaVerdict(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	l := topology.NewLedger(c)
	r := mustRequest(t, c, job("q", 4, workload.TaskGroup{GPUs: 8}))
	r.AllowHost = func(h topology.HostID) bool { return h < 3 }
	for _, policy := range PolicyNames() {
		var p Placement
		x := newPolicy(t, policy, c).Place(l, r, &p)
		if x == nil || x.Verdict != VerdictQuota || x.Excluded[ReasonQuota] != 122 || x.Allowed != 24 {
			t.Fatalf("%s: %v", policy, x)
		}
		if s := x.String(); !strings.Contains(s, "24 within quota: quota") || !strings.Contains(s, "quota 122") {
			t.Errorf("%s: String() = %q", policy, s)
		}
	}
	// A caller's own name for its filter replaces "quota" in the text.
	r.FilterLabel = "node filters"
	var p Placement
	x := newPolicy(t, "topology", c).Place(l, r, &p)
	if s := x.String(); !strings.Contains(s, "24 within node filters: node filters") || !strings.Contains(s, "node filters 122") {
		t.Errorf("String() with FilterLabel = %q", s)
	}
}

// TestTooLargeAndBadRequests: a request larger than the cluster is an
// explanation; malformed requests are field errors.
func TestTooLargeAndBadRequests(t *testing.T) {
	c := mustPreset(t, "dgx-h100")
	l := topology.NewLedger(c)
	for _, policy := range PolicyNames() {
		_, x := place(t, policy, l, job("huge", 1000, workload.TaskGroup{GPUs: 8}))
		if x == nil || x.Verdict != VerdictTooLarge {
			t.Fatalf("%s: %v", policy, x)
		}
		_, x = place(t, policy, l, job("wide", 1, workload.TaskGroup{GPUs: 9}))
		if x == nil || x.Verdict != VerdictTooLarge {
			t.Fatalf("%s: %v", policy, x)
		}
	}
	for _, tc := range []struct {
		job   *workload.Job
		field string
	}{
		{&workload.Job{ID: "z"}, "groups"},
		{job("z", 0, workload.TaskGroup{GPUs: 1}), "groups[0].count"},
		{job("z", 1, workload.TaskGroup{GPUs: -1}), "groups[0].gpus"},
		{job("z", 1, workload.TaskGroup{GPUMilli: 1001}), "groups[0].gpuMilli"},
		{job("z", 2, workload.TaskGroup{GPUs: 1, MinCount: 3}), "groups[0].minCount"},
		{job("z", 1, workload.TaskGroup{GPUs: 1, Models: []string{"TPUv5"}}), "groups[0].models[0]"},
		{job("z", 1, workload.TaskGroup{MIGProfile: "9g.99gb"}), "groups[0].migProfile"},
		{job("z", 1, workload.TaskGroup{GPUs: 1}, req("rack")), "topology[0].level"},
		{job("z", 1, workload.TaskGroup{GPUs: 1}, req("host"), pref("node")), "topology[1].level"},
	} {
		_, err := NewRequest(c, tc.job)
		var fe *workload.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: error %v, want field %s", tc.job, err, tc.field)
		}
	}
}

// TestTxn: Commit is all or nothing, Undo idempotent, a stale placement
// fails to commit and leaves the ledger as it was.
func TestTxn(t *testing.T) {
	c := mustPreset(t, "dgx-h100")
	l := topology.NewLedger(c)
	p, _ := place(t, "best-fit", l, job("a", 2, workload.TaskGroup{GPUs: 2}))
	q, _ := place(t, "best-fit", l, job("b", 1, workload.TaskGroup{GPUs: 2}))
	tx, err := Commit(l, p)
	if err != nil {
		t.Fatal(err)
	}
	before := snap(l)
	// q was placed on the empty host and overlaps p.
	var ae *topology.AllocError
	if _, err := Commit(l, q); !errors.As(err, &ae) {
		t.Fatalf("stale commit: %v", err)
	}
	if d := before.diff(snap(l)); d != "" {
		t.Fatalf("failed commit changed the ledger: %s", d)
	}
	copyTx := tx
	if err := tx.Undo(); err != nil {
		t.Fatal(err)
	}
	if err := copyTx.Undo(); err != nil || tx.Applied() || copyTx.Applied() {
		t.Fatalf("copy undo: %v", err)
	}
	if l.FreeGPUs(c.Root()) != 8 {
		t.Fatal("undo did not release")
	}
	// Re-commit, then the old Txn must not undo the new commit.
	tx2, err := Commit(l, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Undo(); err != nil || !tx2.Applied() || l.FreeGPUs(c.Root()) != 4 {
		t.Fatal("stale Txn undid a later commit")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("placing into a committed placement did not panic")
		}
	}()
	newPolicy(t, "best-fit", c).Place(l, mustRequest(t, c, job("c", 1, workload.TaskGroup{GPUs: 1})), p)
}

// TestStranded: with every host of h100-1k at 4 free GPUs and a pending
// 8-GPU task, all 500 free GPUs are stranded at every level; add a
// pending 4-GPU task and none are; a 2×4 gang required per host strands
// all at host level only.
func TestStranded(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	l := topology.NewLedger(c)
	for g := topology.GPUID(0); int(g) < c.NumGPUs(); g += 2 {
		takeGPUs(t, l, g)
	}
	eight := mustRequest(t, c, job("8", 1, workload.TaskGroup{GPUs: 8}))
	four := mustRequest(t, c, job("4", 1, workload.TaskGroup{GPUs: 4}))
	pair := mustRequest(t, c, job("2x4", 2, workload.TaskGroup{GPUs: 4}))
	for _, f := range Stranded(l, []*Request{eight}) {
		if f.Free != 500 || f.Stranded != 500 || f.Ratio() != 1 {
			t.Fatalf("8-GPU task: %+v", f)
		}
	}
	for _, f := range Stranded(l, []*Request{eight, four}) {
		if f.Stranded != 0 {
			t.Fatalf("with a 4-GPU task: %+v", f)
		}
	}
	for _, f := range Stranded(l, []*Request{pair}) {
		want := 0
		if f.Level <= topology.LevelHost {
			want = 500
		}
		if f.Stranded != want {
			t.Fatalf("2×4 gang at %s: %d stranded, want %d", f.Name, f.Stranded, want)
		}
	}
}

// TestOptions: DetailBrief answers from counters only; MaxDomains bounds
// the domains tried; Node replaces the frag policy built by name; bad
// options are errors.
func TestOptions(t *testing.T) {
	c := mustPreset(t, "h100-1k")
	l := topology.NewLedger(c)
	for g := topology.GPUID(0); int(g) < c.NumGPUs(); g += 2 {
		takeGPUs(t, l, g)
	}
	r := mustRequest(t, c, job("j", 2, workload.TaskGroup{GPUs: 8}, req("tor")))
	brief, err := New("best-fit", Options{Explain: DetailBrief, MaxDomains: 1})
	if err != nil {
		t.Fatal(err)
	}
	var p Placement
	x := brief.Place(l, r, &p)
	if x == nil || x.Verdict != VerdictFragmentation || x.Excluded != [NumReasons]int{} || x.Usable != 500 || x.Tried != 1 {
		t.Fatalf("brief: %+v", x)
	}
	// Only the first of the ToRs that would fit 16 1-GPU tasks is tried.
	one := mustRequest(t, c, job("k", 16, workload.TaskGroup{GPUs: 1}, req("tor")))
	if x := brief.Place(l, one, &p); x != nil {
		t.Fatal(x)
	}
	node, err := frag.NewPolicy("first-fit", frag.Options{})
	if err != nil {
		t.Fatal(err)
	}
	viaNode, err := New("fgd", Options{Node: node})
	if err != nil {
		t.Fatal(err)
	}
	// The best-fit ToR is tor4 (29 hosts, 116 free); frag's first-fit
	// takes its first host.
	if x := viaNode.Place(l, one, &p); x != nil || c.DomainName(p.Domain) != "tor4" || p.Claims[0].Host != 96 {
		t.Fatalf("node policy: %v, %s, first host %d", x, c.DomainName(p.Domain), p.Claims[0].Host)
	}
	for _, o := range []Options{{Explain: 9}, {MaxDomains: -1}} {
		if _, err := New("best-fit", o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := New("fgd", Options{}); err == nil {
		t.Error("fgd without a workload distribution accepted")
	}
	if _, err := New("tetris", Options{}); err == nil || !strings.Contains(err.Error(), "known: best-fit") {
		t.Errorf("unknown policy: %v", err)
	}
}

// TestPlacementAccessors: GPUs counts distinct GPUs (shares of one GPU
// once), Hosts the distinct hosts, Clone is deep and not committed.
func TestPlacementAccessors(t *testing.T) {
	c := mustPreset(t, "dgx-h100")
	l := topology.NewLedger(c)
	p, x := place(t, "best-fit", l, &workload.Job{ID: "m", Groups: []workload.TaskGroup{
		{Name: "w", Count: 2, GPUs: 2}, {Name: "s", Count: 3, GPUMilli: 300},
	}})
	if x != nil {
		t.Fatal(x)
	}
	// 2×2 whole GPUs and three 300m shares packed on one GPU.
	if p.GPUs() != 5 || len(p.Hosts()) != 1 || p.Len() != 5 {
		t.Fatalf("GPUs %d, hosts %v, tasks %d", p.GPUs(), p.Hosts(), p.Len())
	}
	if _, err := Commit(l, p); err != nil {
		t.Fatal(err)
	}
	q := p.Clone()
	q.Claims[0].GPUs[0].GPU = 7
	if p.Claims[0].GPUs[0].GPU == 7 {
		t.Fatal("Clone shares GPU claims")
	}
	q.Reset() // a clone is not committed: no panic
	r := mustRequest(t, c, job("x", 1, workload.TaskGroup{GPUs: 1}))
	if r.Cluster() != c || r.FullDemand().GPUs != 1 || TaskWhole.String() != "whole" || ReasonCPU.String() != "cpu" {
		t.Fatal("accessors")
	}
	if s := fmt.Sprint(newPolicy(t, "buddy", c)); s != "buddy" {
		t.Fatalf("policy name %q", s)
	}
}
