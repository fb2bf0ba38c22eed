package fairshare

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Decay returns usage u decayed over elapsed with the given half-life:
// u × 2^(−elapsed/halfLife). A half-life ≤ 0 means no decay, and a negative
// elapsed time is treated as zero.
func Decay(u float64, elapsed, halfLife time.Duration) float64 {
	if halfLife <= 0 || elapsed <= 0 {
		return u
	}
	return u * math.Exp2(-float64(elapsed)/float64(halfLife))
}

// Usage is usage decayed with a half-life, as Slurm's PriorityDecayHalfLife
// does: what was used long ago counts less. It is a value; Advance returns
// the advanced copy.
type Usage struct {
	// Value is the decayed usage at At, in resource-seconds (e.g.
	// GPU-seconds).
	Value float64
	// At is when Value was last brought up to date.
	At time.Time
}

// Advance returns u brought forward to now, with usage accruing at rate
// (resource units, e.g. GPUs) over [u.At, now] and everything decaying with
// halfLife: the exact integral of a constant rate under exponential decay,
// Value·d + rate·h/ln2·(1−d) with d = 2^(−Δ/h), h the half-life in seconds.
// With halfLife ≤ 0 it is Value + rate·Δ. If now is before u.At, only the
// time is left as it is and nothing accrues. A zero u.At means "start now".
func (u Usage) Advance(now time.Time, rate float64, halfLife time.Duration) Usage {
	if u.At.IsZero() {
		return Usage{Value: u.Value, At: now}
	}
	dt := now.Sub(u.At)
	if dt <= 0 {
		return u
	}
	secs := dt.Seconds()
	if halfLife <= 0 {
		return Usage{Value: u.Value + rate*secs, At: now}
	}
	h := halfLife.Seconds()
	d := math.Exp2(-secs / h)
	return Usage{Value: u.Value*d + rate*h/math.Ln2*(1-d), At: now}
}

// Account is a node of a Fair Tree association tree: an account whose
// children are sub-accounts and users, or, with no children, a user.
type Account struct {
	// Name identifies the account or user; siblings that tie on every
	// criterion are ordered by name.
	Name string
	// Shares is the raw number of shares among siblings (≥ 0). Zero shares
	// gives the lowest Level Fairshare.
	Shares float64
	// Usage is a user's raw (decayed) usage; ignored for accounts, whose
	// usage is the sum of their children's.
	Usage float64
	// Children are sub-accounts and users; nil for a user.
	Children []Account
}

// UserRank is one user's place in the Fair Tree order.
type UserRank struct {
	// Path is the account names from below the root down to the user,
	// joined by "/".
	Path string
	// Rank counts down from the number of users: the most deserving user
	// has Rank N, the least 1. Tied users share a rank.
	Rank int
	// FairShare is Rank/N, in (0, 1]; the Slurm fairshare factor.
	FairShare float64
	// LevelFS is the user's Level Fairshare among its siblings.
	LevelFS float64
}

// NodeFS is the Level Fairshare of one association, as `sshare -l` shows
// it in its "Level FS" column.
type NodeFS struct {
	Path    string  // names below the root, joined by "/"
	Shares  float64 // S: shares normalised among siblings
	Usage   float64 // U: usage normalised among siblings
	LevelFS float64 // S/U, +Inf for S > 0 and U = 0, 0 for S = 0
}

// FairTreeResult is the outcome of FairTree.
type FairTreeResult struct {
	// Users in descending priority order (highest Rank first).
	Users []UserRank
	// Nodes are every association below the root in depth-first order of
	// the sorted tree.
	Nodes []NodeFS
}

// FairTree ranks the users of an association tree with Slurm's Fair Tree
// algorithm (https://slurm.schedmd.com/fair_tree.html):
//
//   - For each association, Level Fairshare LF = S/U, where S is its shares
//     over the sum of its own and its siblings' shares and U its usage over
//     the sum of its own and its siblings' usage. S = 0 gives LF = 0; U = 0
//     with S > 0 gives LF = +Inf.
//   - Children are sorted by LF, highest first (users before accounts on
//     equal LF, then by name), and the tree is walked depth first; users
//     are ranked in the order they are reached, starting at N (the number of
//     users) and counting down. FairShare = rank/N.
//   - Ties: sibling users with equal LF share a rank; sibling accounts with
//     equal LF have their children merged before descending; a user with the
//     same LF as a sibling account gets the rank of that account's highest
//     user.
//
// So if accounts A and B are siblings and A has the higher LF, every user
// under A ranks above every user under B. It returns an *InputError for
// negative or non-finite shares or usage. Cost O(n log n) for n nodes.
func FairTree(root Account) (FairTreeResult, error) {
	var nusers int
	if err := checkAccount(&root, "root", &nusers); err != nil {
		return FairTreeResult{}, err
	}
	ft := &fairTree{n: nusers}
	ft.rank, ft.rnt = nusers, nusers
	kids := make([]*ftNode, 0, len(root.Children))
	for i := range root.Children {
		kids = append(kids, ft.build(&root.Children[i], ""))
	}
	levelFS(kids)
	ft.walk(kids, false)
	return ft.res, nil
}

func checkAccount(a *Account, field string, nusers *int) error {
	if a.Shares < 0 || math.IsNaN(a.Shares) || math.IsInf(a.Shares, 0) {
		return bad(field+".shares", "shares %v; want a finite value ≥ 0", a.Shares)
	}
	if len(a.Children) == 0 {
		if a.Usage < 0 || math.IsNaN(a.Usage) || math.IsInf(a.Usage, 0) {
			return bad(field+".usage", "usage %v; want a finite value ≥ 0", a.Usage)
		}
		if field != "root" {
			*nusers++
		}
		return nil
	}
	for i := range a.Children {
		if err := checkAccount(&a.Children[i], fmt.Sprintf("%s.children[%d]", field, i), nusers); err != nil {
			return err
		}
	}
	return nil
}

type ftNode struct {
	name     string
	path     string
	shares   float64
	usage    float64
	user     bool
	s, u, lf float64
	children []*ftNode
}

type fairTree struct {
	n         int
	rank, rnt int
	res       FairTreeResult
}

func (ft *fairTree) build(a *Account, parent string) *ftNode {
	p := a.Name
	if parent != "" {
		p = parent + "/" + a.Name
	}
	n := &ftNode{name: a.Name, path: p, shares: a.Shares, user: len(a.Children) == 0}
	if n.user {
		n.usage = a.Usage
		return n
	}
	for i := range a.Children {
		c := ft.build(&a.Children[i], p)
		n.usage += c.usage
		n.children = append(n.children, c)
	}
	levelFS(n.children)
	return n
}

// levelFS sets S, U and LF of siblings.
func levelFS(sib []*ftNode) {
	var ss, su float64
	for _, n := range sib {
		ss += n.shares
		su += n.usage
	}
	for _, n := range sib {
		if ss > 0 {
			n.s = n.shares / ss
		}
		if su > 0 {
			n.u = n.usage / su
		}
		switch {
		case n.s == 0:
			n.lf = 0
		case n.u == 0:
			n.lf = math.Inf(1)
		default:
			n.lf = n.s / n.u
		}
	}
}

// walk ranks the users below sib; tied says whether the first of sib is
// tied with the user ranked just before (an account tied with a user).
func (ft *fairTree) walk(sib []*ftNode, tied bool) {
	sort.SliceStable(sib, func(i, j int) bool {
		a, b := sib[i], sib[j]
		if a.lf != b.lf {
			return a.lf > b.lf
		}
		if a.user != b.user {
			return a.user
		}
		return a.name < b.name
	})
	for i := 0; i < len(sib); i++ {
		n := sib[i]
		t := tied && i == 0
		if i > 0 && sib[i-1].lf == n.lf {
			t = true
		}
		ft.res.Nodes = append(ft.res.Nodes, NodeFS{Path: n.path, Shares: n.s, Usage: n.u, LevelFS: n.lf})
		if n.user {
			if !t {
				ft.rank = ft.rnt
			}
			ft.res.Users = append(ft.res.Users, UserRank{Path: n.path, Rank: ft.rank, FairShare: float64(ft.rank) / float64(ft.n), LevelFS: n.lf})
			ft.rnt--
			continue
		}
		// Merge the children of the accounts tied with n.
		kids := append([]*ftNode(nil), n.children...)
		for i+1 < len(sib) && !sib[i+1].user && sib[i+1].lf == n.lf {
			i++
			ft.res.Nodes = append(ft.res.Nodes, NodeFS{Path: sib[i].path, Shares: sib[i].s, Usage: sib[i].u, LevelFS: sib[i].lf})
			kids = append(kids, sib[i].children...)
		}
		ft.walk(kids, t)
	}
}
