package slurmharness

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	slurmconf "github.com/gpusched/gpusched/importers/slurm"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
)

// FSAccount is an account of scenario (c)'s association tree.
type FSAccount struct {
	Name, Parent string
	Shares       int
}

// FSUser is a user association of scenario (c): its shares, and the cores
// of the job that builds its usage history (0: no usage).
type FSUser struct {
	Account, User string
	Shares        int
	CPUs          int
}

// FairTreeAssociations is scenario (c)'s tree, below Slurm's root account
// (whose user root holds the usage of every other scenario's jobs). Users
// are system users every Debian has (nobody, daemon, bin, sys): the
// usage jobs run as them (sbatch --uid). It has a sub-account level (cs:
// ml, theory), a user beside sub-accounts (cs:nobody), users with no usage
// (bio:bin; all of chem: two tied users under an account tied at +Inf),
// and the same user under several accounts.
func FairTreeAssociations() ([]FSAccount, []FSUser) {
	return []FSAccount{
			{"physics", "root", 40}, {"bio", "root", 30}, {"cs", "root", 30}, {"chem", "root", 10},
			{"ml", "cs", 2}, {"theory", "cs", 1},
		}, []FSUser{
			{"physics", "nobody", 1, 8}, {"physics", "daemon", 1, 2},
			{"bio", "nobody", 2, 4}, {"bio", "bin", 1, 0},
			{"ml", "sys", 1, 6}, {"ml", "daemon", 1, 3},
			{"theory", "bin", 1, 2},
			{"cs", "nobody", 1, 12},
			{"chem", "nobody", 1, 0}, {"chem", "daemon", 1, 0},
		}
}

// ShareRow is one line of sshare -l -P -a.
type ShareRow struct {
	Account, User string
	Depth         int     // the Account column's indentation
	RawUsage      float64 // as printed (whole units)
	EffectvUsage  float64
	FairShare     float64 // users only (NaN for accounts)
	LevelFS       float64 // +Inf for "inf"; NaN for root
}

// Name is the association's queue name in gpusched's imported tree: the
// account, or slurmconf.LeafName(account, user).
func (r ShareRow) Name() string {
	if r.User == "" {
		return r.Account
	}
	return slurmconf.LeafName(r.Account, r.User)
}

// ParseSshare parses sshare -l -P -a (the header first; columns found by
// name).
func ParseSshare(out string) ([]ShareRow, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("sshare: no rows in %q", out)
	}
	header := strings.Split(lines[0], "|")
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, k := range []string{"Account", "User", "RawUsage", "EffectvUsage", "FairShare", "LevelFS"} {
		if _, ok := col[k]; !ok {
			return nil, fmt.Errorf("sshare: no %s column in %q", k, lines[0])
		}
	}
	num := func(s string, line int, field string) (float64, error) {
		switch s {
		case "":
			return math.NaN(), nil
		case "inf":
			return math.Inf(1), nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("sshare line %d: %s %q: %v", line, field, s, err)
		}
		return v, nil
	}
	var rows []ShareRow
	for i, ln := range lines[1:] {
		f := strings.Split(ln, "|")
		if len(f) < len(header) {
			return nil, fmt.Errorf("sshare line %d: %d fields, want %d", i+2, len(f), len(header))
		}
		acct := f[col["Account"]]
		r := ShareRow{Account: strings.TrimSpace(acct), User: f[col["User"]], Depth: len(acct) - len(strings.TrimLeft(acct, " "))}
		var err error
		for _, p := range []struct {
			dst  *float64
			name string
		}{{&r.RawUsage, "RawUsage"}, {&r.EffectvUsage, "EffectvUsage"}, {&r.FairShare, "FairShare"}, {&r.LevelFS, "LevelFS"}} {
			if *p.dst, err = num(f[col[p.name]], i+2, p.name); err != nil {
				return nil, err
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// ParseSprio parses sprio -h -n -o '%i|%f': each pending job's normalised
// fair-share factor.
func ParseSprio(out string) (map[int]float64, error) {
	m := map[int]float64{}
	for i, ln := range strings.Split(strings.TrimSpace(out), "\n") {
		if ln == "" {
			continue
		}
		id, fs, ok := strings.Cut(strings.TrimSpace(ln), "|")
		n, err := strconv.Atoi(id)
		if !ok || err != nil {
			return nil, fmt.Errorf("sprio line %d: %q: want JOBID|FAIRSHARE", i+1, ln)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(fs), 64)
		if err != nil {
			return nil, fmt.Errorf("sprio line %d: fair-share %q: %v", i+1, fs, err)
		}
		m[n] = v
	}
	return m, nil
}

// Probe is a pending job of scenario (c): its Slurm job ID and association.
type Probe struct {
	ID            int
	Account, User string
}

// FairTreeOutcome is gpusched's Fair Tree on Slurm's associations and
// usage, beside what Slurm reported.
type FairTreeOutcome struct {
	// Assocs are the associations below root in sshare's order.
	Assocs []AssocFS
	// Slurm and Gpusched are the probe jobs in each one's order: Slurm's
	// by sprio's fair-share factor (ties: equal Group), gpusched's as its
	// queue tree serves them.
	Slurm, Gpusched []RankedJob
	// Warnings are the importer's, on sacctmgr's output.
	Warnings []string
}

// AssocFS is one association's Level Fairshare (and, for users, fair-share
// factor) in Slurm and in gpusched.
type AssocFS struct {
	Path                    string // account/…/user, below root
	User                    bool
	RawUsage                float64
	SlurmLevelFS, GLevelFS  float64
	SlurmFS, GFS            float64 // users only
	SameLevelFS, SameFactor bool
}

// RankedJob is a probe job at its place in one order.
type RankedJob struct {
	Probe
	Factor float64 // sprio's normalised fair-share factor (Slurm's order)
	Group  int     // jobs with the same factor share a group (Slurm's order)
}

// CompareFairTree imports sacctmgr's associations (assocOut: sacctmgr show
// assoc -P) with importers/slurm, gives every association the RawUsage sshare
// reported, and ranks them with gpusched's Fair Tree twice: the Level
// Fairshare and fair-share factor of fairshare.FairTree against sshare's,
// and the order in which a queue.Tree under the FairTree policy, its
// usage restored to the same values, serves the probe jobs against
// Slurm's order by sprio's fair-share factor.
func CompareFairTree(assocOut string, share []ShareRow, probes []Probe, sprio map[int]float64, now time.Time) (*FairTreeOutcome, error) {
	a, warns, err := slurmconf.ParseAssoc([]byte(assocOut), "sacctmgr show assoc")
	if err != nil {
		return nil, err
	}
	cfg := a.Queues(0, &warns)
	out := &FairTreeOutcome{}
	for _, w := range warns {
		out.Warnings = append(out.Warnings, w.String())
	}
	usage := map[string]float64{}
	byName := map[string]ShareRow{}
	for _, r := range share {
		if r.Account == "root" && r.User == "" {
			continue
		}
		usage[r.Name()] = r.RawUsage
		byName[r.Name()] = r
	}
	// fairshare.FairTree on the imported tree.
	var conv func(n queue.Node) fairshare.Account
	conv = func(n queue.Node) fairshare.Account {
		w := n.Weight
		if w == 0 {
			w = 1
		}
		acc := fairshare.Account{Name: n.Name, Shares: w, Usage: usage[n.Name]}
		for _, k := range n.Children {
			acc.Children = append(acc.Children, conv(k))
		}
		return acc
	}
	res, err := fairshare.FairTree(conv(cfg.Root))
	if err != nil {
		return nil, err
	}
	glf := map[string]float64{}
	for _, n := range res.Nodes {
		glf[last(n.Path)] = n.LevelFS
	}
	gfs := map[string]float64{}
	for _, u := range res.Users {
		gfs[last(u.Path)] = u.FairShare
	}
	paths := map[string]string{}
	var walk func(n queue.Node, p string)
	walk = func(n queue.Node, p string) {
		for _, k := range n.Children {
			kp := strings.TrimPrefix(p+"/"+displayName(k.Name), "/")
			paths[k.Name] = kp
			walk(k, kp)
		}
	}
	walk(cfg.Root, "")
	for _, r := range share {
		if r.Account == "root" && r.User == "" {
			continue
		}
		n := r.Name()
		x := AssocFS{Path: paths[n], User: r.User != "", RawUsage: r.RawUsage, SlurmLevelFS: r.LevelFS, GLevelFS: glf[n], SlurmFS: r.FairShare, GFS: math.NaN()}
		if x.Path == "" {
			x.Path = n + " (not imported)"
		}
		x.SameLevelFS = sameLevelFS(x.SlurmLevelFS, x.GLevelFS, r.RawUsage)
		if x.User {
			if v, ok := gfs[n]; ok {
				x.GFS = v
			}
			x.SameFactor = math.Abs(x.SlurmFS-x.GFS) < 5e-6
		}
		out.Assocs = append(out.Assocs, x)
	}
	// The queue tree under FairTree, usage restored, one entry per probe.
	tree, err := queue.Build(cfg, queue.Capacity{Resources: workload.Resources{GPUMilli: 1000, CPUMilli: 1000, MemoryMiB: 1}})
	if err != nil {
		return nil, err
	}
	for id := range tree.NumNodes() {
		nid := queue.NodeID(id)
		if err := tree.RestoreUsage(nid, fairshare.Usage{Value: usage[tree.Name(nid)], At: now}); err != nil {
			return nil, err
		}
	}
	dims := len(tree.Capacity())
	for _, p := range probes {
		l, ok := tree.Leaf(slurmconf.LeafName(p.Account, p.User))
		if !ok {
			return nil, fmt.Errorf("probe job %d: association %s:%s is not a leaf of the imported tree", p.ID, p.Account, p.User)
		}
		l.Add(&queue.Entry{ID: strconv.Itoa(p.ID), Submitted: now, Seq: uint64(p.ID), Class: "probe", Demand: make(queue.Vector, dims), Ref: p})
	}
	cursors := map[*queue.Leaf]*queue.Cursor{}
	for _, id := range tree.Leaves() {
		cursors[tree.LeafOf(id)] = tree.LeafOf(id).Begin()
	}
	for {
		l, e, ok := tree.Next()
		if !ok {
			break
		}
		out.Gpusched = append(out.Gpusched, RankedJob{Probe: e.Ref.(Probe)})
		cursors[l].Advance()
	}
	for _, c := range cursors {
		c.End()
	}
	// Slurm's order: by factor, highest first; equal factors are one group.
	for _, p := range probes {
		out.Slurm = append(out.Slurm, RankedJob{Probe: p, Factor: sprio[p.ID]})
	}
	slices.SortStableFunc(out.Slurm, func(a, b RankedJob) int {
		if a.Factor != b.Factor {
			if a.Factor > b.Factor {
				return -1
			}
			return 1
		}
		return a.ID - b.ID
	})
	for i := range out.Slurm {
		if i > 0 && out.Slurm[i].Factor != out.Slurm[i-1].Factor {
			out.Slurm[i].Group = out.Slurm[i-1].Group + 1
		} else if i > 0 {
			out.Slurm[i].Group = out.Slurm[i-1].Group
		}
	}
	return out, nil
}

// JobsAgree returns, per probe job ID, whether gpusched serves it at a
// place inside its Slurm tie group (Slurm's order allows any order among
// jobs with the same fair-share factor).
func (o *FairTreeOutcome) JobsAgree() map[int]bool {
	first, lastPos := map[int]int{}, map[int]int{}
	for i, j := range o.Slurm {
		if _, ok := first[j.Group]; !ok {
			first[j.Group] = i
		}
		lastPos[j.Group] = i
	}
	group := map[int]int{}
	for _, j := range o.Slurm {
		group[j.ID] = j.Group
	}
	ok := map[int]bool{}
	for i, j := range o.Gpusched {
		g, in := group[j.ID]
		ok[j.ID] = in && i >= first[g] && i <= lastPos[g]
	}
	return ok
}

// sameLevelFS compares Level Fairshare values: gpusched computes from
// sshare's RawUsage, which sshare prints cut to whole units, so an
// association with raw usage u agrees within max(1%, 2/u) (both +Inf, or
// both NaN for no value, agree).
func sameLevelFS(a, b, raw float64) bool {
	switch {
	case math.IsInf(a, 1) || math.IsInf(b, 1):
		return math.IsInf(a, 1) && math.IsInf(b, 1)
	case math.IsNaN(a) || math.IsNaN(b):
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= max(0.01, 2/max(raw, 1))*math.Max(math.Abs(a), math.Abs(b))+5e-7
}

func last(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// displayName is a queue name as a path element: "account:user" shows as
// the user.
func displayName(n string) string {
	if _, u, ok := strings.Cut(n, ":"); ok {
		return u
	}
	return n
}

// FormatFS formats a Level Fairshare or factor for the report.
func FormatFS(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "inf"
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}
