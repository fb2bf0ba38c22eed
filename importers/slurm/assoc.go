package slurm

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/queue"
)

// Assoc is an association tree as sacctmgr show assoc -P prints it.
type Assoc struct {
	// File is the name the file was read under.
	File string
	// Rows are the associations in file order.
	Rows []AssocRow
}

// AssocRow is one association: an account (User empty) or a user of an
// account.
type AssocRow struct {
	Line      int
	Account   string
	User      string
	Partition string
	Parent    string // the parent account of an account row ("" for root)
	Share     int64  // Fairshare shares; -1 for "parent"
	GrpGPUs   int64  // GrpTRES gres/gpu, or -1
	GrpCPUs   int64  // GrpTRES cpu, or -1
}

// LeafName is the queue name of a user association: "account:user".
func LeafName(account, user string) string { return account + ":" + user }

// ReadAssoc reads sacctmgr output from path (see ParseAssoc).
func ReadAssoc(path string) (*Assoc, []Warning, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	return ParseAssoc(b, path)
}

// ParseAssoc parses the output of
//
//	sacctmgr show assoc -P format=Cluster,Account,User,Partition,ParentName,Share,GrpTRES
//
// (any columns, any order; "|" separated, the first line the header). The
// parent of an account comes from the ParentName column ("Par Name"); without
// it, from the indentation of Account that the tree option prints. Columns
// the importer does not model are listed once each as warnings.
func ParseAssoc(data []byte, name string) (*Assoc, []Warning, error) {
	if len(data) > MaxFileBytes {
		return nil, nil, errAt(name, 0, "", "file is larger than %d bytes", MaxFileBytes)
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	var w warnings
	hdrNo := -1
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			hdrNo = i
			break
		}
	}
	if hdrNo < 0 {
		return nil, nil, errAt(name, 1, "", "empty file: want sacctmgr show assoc -P output")
	}
	hdr := strings.Split(lines[hdrNo], "|")
	col := map[string]int{}
	for i, h := range hdr {
		key := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(h), " ", ""))
		switch key {
		case "cluster", "account", "user", "partition", "share", "grptres":
			col[key] = i
		case "parname", "parentname":
			col["parent"] = i
		case "":
		default:
			w.add(name, hdrNo+1, strings.TrimSpace(h), "column not modelled (ignored)")
		}
	}
	if _, ok := col["account"]; !ok {
		return nil, nil, errAt(name, hdrNo+1, "Account", "no Account column in the header %q", clip(lines[hdrNo]))
	}
	a := &Assoc{File: name}
	field := func(rec []string, k string) string {
		if i, ok := col[k]; ok && i < len(rec) {
			return rec[i]
		}
		return ""
	}
	var stack []string // the tree option's indentation: account per depth
	cluster := ""
	for i := hdrNo + 1; i < len(lines); i++ {
		no := i + 1
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		rec := strings.Split(lines[i], "|")
		if len(rec) < len(hdr) {
			return nil, nil, errAt(name, no, "", "%d fields; the header has %d", len(rec), len(hdr))
		}
		if c := field(rec, "cluster"); c != "" {
			if cluster != "" && c != cluster {
				return nil, nil, errAt(name, no, "Cluster", "associations of two clusters (%s, %s); give one", cluster, c)
			}
			cluster = c
		}
		raw := field(rec, "account")
		acct := strings.TrimSpace(raw)
		r := AssocRow{Line: no, Account: acct, User: strings.TrimSpace(field(rec, "user")), Partition: field(rec, "partition"), Share: 1, GrpGPUs: -1, GrpCPUs: -1}
		if acct == "" {
			return nil, nil, errAt(name, no, "Account", "empty account")
		}
		if r.Partition != "" {
			w.add(name, no, "Partition", "association for partition %s: partitions are not modelled; merged with the account's", r.Partition)
		}
		switch s := strings.TrimSpace(field(rec, "share")); {
		case s == "":
		case strings.EqualFold(s, "parent"):
			r.Share = -1
		default:
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < 0 || v > 1<<40 {
				return nil, nil, errAt(name, no, "Share", "%q: want a non-negative integer or parent", s)
			}
			r.Share = v
		}
		if tres := field(rec, "grptres"); tres != "" {
			for _, kv := range strings.Split(tres, ",") {
				k, v, ok := strings.Cut(kv, "=")
				n, err := strconv.ParseInt(v, 10, 64)
				if !ok || err != nil || n < 0 {
					return nil, nil, errAt(name, no, "GrpTRES", "%q: want TRES=COUNT,…", kv)
				}
				switch {
				case k == "gres/gpu" || strings.HasPrefix(k, "gres/gpu:"):
					if k != "gres/gpu" {
						w.add(name, no, "GrpTRES", "%s: per-type GPU limits are modelled as limits on all GPUs", k)
					}
					r.GrpGPUs = n
				case k == "cpu":
					r.GrpCPUs = n
				default:
					w.add(name, no, "GrpTRES", "%s: not modelled (ignored)", k)
				}
			}
		}
		if r.User == "" {
			if _, ok := col["parent"]; ok {
				r.Parent = strings.TrimSpace(field(rec, "parent"))
			} else {
				depth := len(raw) - len(strings.TrimLeft(raw, " "))
				if depth > len(stack) {
					return nil, nil, errAt(name, no, "Account", "indented %d deep below an account %d deep; want ParentName or the tree option's indentation", depth, len(stack)-1)
				}
				stack = append(stack[:depth], acct)
				if depth > 0 {
					r.Parent = stack[depth-1]
				}
			}
		}
		a.Rows = append(a.Rows, r)
	}
	if err := a.check(); err != nil {
		return nil, nil, err
	}
	return a, w, nil
}

func (a *Assoc) check() error {
	accts := map[string]int{}
	roots := 0
	for _, r := range a.Rows {
		if r.User != "" {
			continue
		}
		if _, ok := accts[r.Account]; ok && r.Partition == "" {
			return errAt(a.File, r.Line, "Account", "account %s listed twice", r.Account)
		}
		accts[r.Account] = r.Line
		if r.Parent == "" {
			roots++
		}
	}
	if roots != 1 {
		return errAt(a.File, 0, "ParentName", "%d accounts without a parent; want exactly one root", roots)
	}
	for _, r := range a.Rows {
		p := r.Parent
		if r.User != "" {
			p = r.Account
		}
		if p == "" {
			continue
		}
		if _, ok := accts[p]; !ok {
			return errAt(a.File, r.Line, "ParentName", "parent account %s is not listed", p)
		}
	}
	// Cycles among accounts.
	parent := map[string]string{}
	for _, r := range a.Rows {
		if r.User == "" {
			parent[r.Account] = r.Parent
		}
	}
	for acct, line := range accts {
		seen := map[string]bool{}
		for cur := acct; cur != ""; cur = parent[cur] {
			if seen[cur] {
				return errAt(a.File, line, "ParentName", "account %s is its own ancestor", acct)
			}
			seen[cur] = true
		}
	}
	return nil
}

// Queues returns the association tree as a queue tree with Fair Tree:
// accounts are inner queues (or leaves when they have neither users nor
// sub-accounts), users are leaves named LeafName(account, user), Share is
// the weight ("parent" and 0 become 1, with a warning: gpusched has no
// share inheritance and reads weight 0 as 1), GrpTRES gres/gpu and cpu are
// Max quotas. halfLife is PriorityDecayHalfLife (0: Slurm's 7 days).
func (a *Assoc) Queues(halfLife time.Duration, w *[]Warning) queue.Config {
	ww := (*warnings)(w)
	kids := map[string][]AssocRow{}
	var root AssocRow
	for _, r := range a.Rows {
		switch {
		case r.User != "":
			kids[r.Account] = append(kids[r.Account], r)
		case r.Parent == "":
			root = r
		default:
			if r.Partition == "" {
				kids[r.Parent] = append(kids[r.Parent], r)
			}
		}
	}
	var build func(r AssocRow) queue.Node
	build = func(r AssocRow) queue.Node {
		n := queue.Node{Name: r.Account}
		if r.User != "" {
			n.Name = LeafName(r.Account, r.User)
		}
		switch {
		case r.Share < 0:
			ww.add(a.File, r.Line, "Share", "parent: share inheritance is not modelled; weight 1")
		case r.Share == 0:
			ww.add(a.File, r.Line, "Share", "0 shares: gpusched reads weight 0 as 1")
		default:
			n.Weight = float64(r.Share)
		}
		if r.GrpGPUs >= 0 {
			n.Quotas = append(n.Quotas, queue.Quota{Resource: queue.ResourceGPU, Max: queue.Limit(r.GrpGPUs)})
		}
		if r.GrpCPUs >= 0 {
			n.Quotas = append(n.Quotas, queue.Quota{Resource: queue.ResourceCPU, Max: queue.Limit(r.GrpCPUs)})
		}
		if r.User == "" {
			seen := map[string]bool{}
			for _, k := range kids[r.Account] {
				key := k.Account + "|" + k.User
				if seen[key] {
					continue // per-partition duplicates
				}
				seen[key] = true
				n.Children = append(n.Children, build(k))
			}
		}
		return n
	}
	cfg := queue.Config{Root: build(root)}
	cfg.Root.Weight = 0
	cfg.Fairness.Policy = queue.FairTree
	cfg.Fairness.HalfLife = halfLife
	return cfg
}

// Leaves returns the leaf queue names of the tree in order.
func Leaves(c queue.Config) []string {
	var out []string
	var walk func(n queue.Node)
	walk = func(n queue.Node) {
		if len(n.Children) == 0 {
			out = append(out, n.Name)
		}
		for _, k := range n.Children {
			walk(k)
		}
	}
	walk(c.Root)
	return slices.Clip(out)
}
