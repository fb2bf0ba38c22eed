package preempt

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
)

// now is when every case plans: ten hours after t0.
var now = t0.Add(10 * time.Hour)

// at returns the offset of now − d (when a job started or checkpointed d
// before now).
func ago(d time.Duration) time.Duration { return 10*time.Hour - d }

func TestWorkedExamples(t *testing.T) {
	type want struct {
		victims []string
		lost    GPUTime
		domain  string   // the domain cleared, if checked
		shrunk  []string // victims that only shrink
		verdict Verdict  // when no plan
	}
	cases := []struct {
		name    string
		hosts   int
		perToR  int
		queues  *queue.Config
		cfg     Config
		jobs    []jobSpec
		pending func(f *fixture) *Pending
		want    want
	}{
		{
			// low loses 8 GPUs × 30 min since its checkpoint = 4 GPU-h;
			// mid loses 8 × 2 h (no checkpoint) = 16 GPU-h; same is not
			// lower priority. The cheaper lower-priority job goes.
			name: "priority preemption", hosts: 3,
			jobs: []jobSpec{
				{id: "low", queue: "q", prio: 0, tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(time.Hour), checkpoint: ago(30 * time.Minute)},
				{id: "mid", queue: "q", prio: 5, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(2 * time.Hour)},
				{id: "same", queue: "q", prio: 10, tasks: []task{{"dgx-h100-3", 0, 8}}, started: ago(time.Minute)},
			},
			pending: func(f *fixture) *Pending { return f.pending(t, "high", "q", 10, 1, 8, "") },
			want:    want{victims: []string{"low"}, lost: 8 * 1800 * 1000},
		},
		{
			// Only lower priority, and only in the job's own queue by
			// default: other is cheaper but in another queue.
			name: "priority within the queue only", hosts: 2,
			jobs: []jobSpec{
				{id: "other", queue: "r", prio: 0, tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(time.Minute)},
				{id: "mine", queue: "q", prio: 0, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(time.Hour)},
			},
			pending: func(f *fixture) *Pending { return f.pending(t, "high", "q", 10, 1, 8, "") },
			want:    want{victims: []string{"mine"}, lost: 8 * 3600 * 1000},
		},
		{
			// Team a is guaranteed 8 of the 16 GPUs and uses none; team b
			// borrows a's 8. b's jobs have the higher priority, but b
			// borrows: a takes its quota back from the cheaper one
			// (b2: 8 × 20 min = 160 GPU-min < b1: 8 × 1 h).
			name: "reclaim of borrowed quota", hosts: 2, queues: twoTeams(8, 8),
			jobs: []jobSpec{
				{id: "b1", queue: "b", prio: 100, tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(time.Hour)},
				{id: "b2", queue: "b", prio: 100, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(2 * time.Hour), checkpoint: ago(20 * time.Minute)},
			},
			pending: func(f *fixture) *Pending { return f.pending(t, "a1", "a", 0, 1, 8, "") },
			want:    want{victims: []string{"b2"}, lost: 8 * 1200 * 1000},
		},
		{
			// c1 is the cheapest, but queue c is within its guarantee;
			// only b borrows, so a reclaims from b.
			name: "reclaim only from a borrowing queue", hosts: 3, queues: threeTeams(),
			jobs: []jobSpec{
				{id: "b1", queue: "b", prio: 0, tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(time.Hour)},
				{id: "b2", queue: "b", prio: 0, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(2 * time.Hour)},
				{id: "c1", queue: "c", prio: 0, tasks: []task{{"dgx-h100-3", 0, 8}}, started: ago(time.Minute)},
			},
			pending: func(f *fixture) *Pending { return f.pending(t, "a1", "a", 0, 1, 8, "") },
			want:    want{victims: []string{"b1"}, lost: 8 * 3600 * 1000},
		},
		{
			// Reclaim takes back only what is borrowed. a (guarantee 24)
			// runs a0 in tor2; b (guarantee 8) borrows 8 with b1 and b2
			// in tor1. a's 16-GPU gang needs one ToR: tor2 holds a0 (not
			// lower priority), and clearing tor1 would take b below its
			// guarantee (the second victim would go while b no longer
			// borrows). So no plan, although the quota alone would allow
			// a1 once b1 is gone.
			name: "reclaim stops at the guarantee", hosts: 4, perToR: 2, queues: twoTeams(24, 8),
			jobs: []jobSpec{
				{id: "b1", queue: "b", prio: 0, tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(time.Hour)},
				{id: "b2", queue: "b", prio: 0, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(time.Hour)},
				{id: "a0", queue: "a", prio: 0, tasks: []task{{"dgx-h100-3", 0, 8}}, started: ago(time.Hour)},
			},
			pending: func(f *fixture) *Pending { return f.pending(t, "a1", "a", 0, 2, 8, "tor") },
			want:    want{verdict: VerdictPlacement},
		},
		{
			// 4 ToRs of 8 hosts (64 GPUs each); every ToR has 2 free hosts
			// and 6 hosts busy with one 8-GPU job each, so 64 GPUs are
			// free, scattered. The 64-GPU gang must have one whole ToR:
			// the 6 jobs of one ToR go. tor2's six cost 6 × 8 × 30 min =
			// 24 GPU-h, the cheapest ToR, although the cheapest six jobs
			// of the cluster (the 10-minute ones) are spread over ToRs.
			name: "64-GPU required-ToR gang clears one ToR", hosts: 32, perToR: 8,
			jobs:    torJobs(),
			pending: func(f *fixture) *Pending { return f.pending(t, "big", "q", 10, 8, 8, "tor") },
			want:    want{victims: []string{"t2-1", "t2-2", "t2-3", "t2-4", "t2-5", "t2-6"}, lost: 6 * 8 * 1800 * 1000, domain: "tor2"},
		},
		{
			// gang has two members (16 GPUs, 1 h without checkpoint: 16
			// GPU-h); one member alone would cost 8 GPU-h, less than
			// single's 12 GPU-h, but a member is not evicted alone: the
			// gang costs 16, so single goes.
			name: "gang member not evicted alone", hosts: 3,
			jobs: []jobSpec{
				{id: "gang", queue: "q", prio: 0, tasks: []task{{"dgx-h100-1", 0, 8}, {"dgx-h100-2", 0, 8}}, started: ago(time.Hour)},
				{id: "single", queue: "q", prio: 0, tasks: []task{{"dgx-h100-3", 0, 8}}, started: ago(90 * time.Minute)},
			},
			pending: func(f *fixture) *Pending { return f.pending(t, "high", "q", 10, 1, 8, "") },
			want:    want{victims: []string{"single"}, lost: 8 * 5400 * 1000},
		},
		{
			// With single protected, the gang goes whole: 16 GPU-h.
			name: "gang evicted whole", hosts: 3,
			jobs: []jobSpec{
				{id: "gang", queue: "q", prio: 0, tasks: []task{{"dgx-h100-1", 0, 8}, {"dgx-h100-2", 0, 8}}, started: ago(time.Hour)},
				{id: "single", queue: "q", prio: 0, tasks: []task{{"dgx-h100-3", 0, 8}}, started: ago(90 * time.Minute), nonPre: true},
			},
			pending: func(f *fixture) *Pending { return f.pending(t, "high", "q", 10, 1, 8, "") },
			want:    want{victims: []string{"gang"}, lost: 16 * 3600 * 1000},
		},
		{
			// An elastic gang (minimum 1 of 2 members) may lose its member
			// above the minimum: 8 GPU-h, cheaper than single.
			name: "elastic gang shrinks", hosts: 3,
			jobs: []jobSpec{
				{id: "gang", queue: "q", prio: 0, min: 1, tasks: []task{{"dgx-h100-1", 0, 8}, {"dgx-h100-2", 0, 8}}, started: ago(time.Hour)},
				{id: "single", queue: "q", prio: 0, tasks: []task{{"dgx-h100-3", 0, 8}}, started: ago(90 * time.Minute)},
			},
			pending: func(f *fixture) *Pending { return f.pending(t, "high", "q", 10, 1, 8, "") },
			want:    want{victims: []string{"gang"}, shrunk: []string{"gang"}, lost: 8 * 3600 * 1000},
		},
		{
			// young is the cheapest (10 min) but inside its minimum run
			// time of 1 h: old goes instead.
			name: "job inside its minimum run time left alone", hosts: 2,
			jobs: []jobSpec{
				{id: "young", queue: "q", prio: 0, tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(10 * time.Minute), minRun: time.Hour},
				{id: "old", queue: "q", prio: 0, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(5 * time.Hour)},
			},
			pending: func(f *fixture) *Pending { return f.pending(t, "high", "q", 10, 1, 8, "") },
			want:    want{victims: []string{"old"}, lost: 8 * 5 * 3600 * 1000},
		},
		{
			// Everything protected: min run time, cap, non-preemptible.
			name: "all protected", hosts: 3,
			jobs: []jobSpec{
				{id: "young", queue: "q", prio: 0, tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(10 * time.Minute), minRun: time.Hour},
				{id: "capped", queue: "q", prio: 0, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(time.Hour), cap: 2, preempted: 2},
				{id: "pinned", queue: "q", prio: 0, tasks: []task{{"dgx-h100-3", 0, 8}}, started: ago(time.Hour), nonPre: true},
			},
			pending: func(f *fixture) *Pending { return f.pending(t, "high", "q", 10, 1, 8, "") },
			want:    want{verdict: VerdictProtected},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			perToR := tc.perToR
			f := newFixture(t, cluster(t, "dgx-h100", tc.hosts, perToR), tc.queues)
			for _, js := range tc.jobs {
				f.run(t, js)
			}
			pend := tc.pending(f)
			s := newSearch(t, tc.cfg)
			gen := f.l.Generation()
			p, np := s.Plan(f.st, pend, now)
			if f.l.Generation() != gen || f.l.Check() != nil {
				t.Fatal("Plan changed the ledger")
			}
			if tc.want.verdict != 0 {
				if np == nil {
					t.Fatalf("got plan %v, want no plan (%s)", p, tc.want.verdict)
				}
				if np.Verdict != tc.want.verdict {
					t.Fatalf("verdict %s, want %s: %s", np.Verdict, tc.want.verdict, np)
				}
				t.Log(np)
				return
			}
			if np != nil {
				t.Fatalf("no plan: %s", np)
			}
			t.Log(p)
			if got := victimIDs(p); !slices.Equal(got, tc.want.victims) {
				t.Fatalf("victims %v, want %v", got, tc.want.victims)
			}
			if p.Cost.Lost != tc.want.lost {
				t.Fatalf("lost %s, want %s", p.Cost.Lost, tc.want.lost)
			}
			if tc.want.domain != "" && f.c.DomainName(p.Domain) != tc.want.domain {
				t.Fatalf("cleared %s, want %s", f.c.DomainName(p.Domain), tc.want.domain)
			}
			for _, v := range p.Victims {
				if v.Whole() == slices.Contains(tc.want.shrunk, v.Job) {
					t.Fatalf("victim %s whole=%v", v.Job, v.Whole())
				}
			}
			if !p.Exact {
				t.Fatal("small case not searched exhaustively")
			}
			checkApplies(t, f, p, pend)
		})
	}
}

// twoTeams is a tree of two leaf queues a and b with GPU guarantees.
func twoTeams(a, b int64) *queue.Config {
	return &queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: a}}},
		{Name: "b", Quotas: []queue.Quota{{Resource: "gpu", Nominal: b}}},
	}}}
}

// threeTeams is a tree of three leaf queues a, b, c with 8 GPUs
// guaranteed each.
func threeTeams() *queue.Config {
	return &queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}},
		{Name: "b", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}},
		{Name: "c", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}},
	}}}
}

// torJobs fills hosts 3..8 of each of 4 ToRs (8 hosts each) with one
// 8-GPU job. In ToR i, jobs lose 8 × cost[i] each, except that the first
// job of every ToR but tor2 is cheap (10 min).
func torJobs() []jobSpec {
	cost := []time.Duration{time.Hour, 30 * time.Minute, 2 * time.Hour, 45 * time.Minute}
	var out []jobSpec
	for tor := 0; tor < 4; tor++ {
		for k := 1; k <= 6; k++ {
			host := tor*8 + 2 + k
			d := cost[tor]
			if k == 1 && tor != 1 {
				d = 10 * time.Minute
			}
			out = append(out, jobSpec{id: "t" + itoa(tor+1) + "-" + itoa(k), queue: "q", prio: 0,
				tasks: []task{{"dgx-h100-" + pad2(host), 0, 8}}, started: ago(d)})
		}
	}
	return out
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + string(rune('0'+i))) }

func pad2(i int) string {
	if i < 10 {
		return "0" + itoa(i)
	}
	return itoa(i/10) + itoa(i%10)
}
