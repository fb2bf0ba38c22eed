package slurmharness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	fsDir       = "testdata/fairshare" // what (c) adds to the site
	fsUsageRun  = 50 * time.Second     // how long each usage job runs
	fsPartition = "fs"
	fsHold      = "fshold" // DOWN: the probe jobs wait there
)

// AccountingInstalled reports whether slurmdbd and MariaDB are on PATH (scenario
// (c) needs them), and if not, which is missing.
func AccountingInstalled() (bool, string) {
	for _, b := range []string{"slurmdbd", "sacctmgr", "sshare", "sprio", "mariadbd", "mariadb-install-db", "mariadb-admin"} {
		if _, err := exec.LookPath(b); err != nil {
			return false, b
		}
	}
	return true, ""
}

// fairTreeRun is scenario (c) in flight: the jobs it submitted.
type fairTreeRun struct {
	began  time.Time
	usage  []int // the usage jobs' IDs
	probes []Probe
}

// setupFairTree creates scenario (c)'s accounts and users with sacctmgr
// (slurmdbd pushes them to slurmctld).
func setupFairTree(ctx context.Context, c *Cluster) error {
	accts, users := FairTreeAssociations()
	for _, a := range accts {
		if _, err := c.Cmd(ctx, "sacctmgr", "-i", "add", "account", a.Name, "parent="+a.Parent, "fairshare="+strconv.Itoa(a.Shares)); err != nil {
			return err
		}
	}
	for _, u := range users {
		if _, err := c.Cmd(ctx, "sacctmgr", "-i", "add", "user", u.User, "account="+u.Account, "fairshare="+strconv.Itoa(u.Shares)); err != nil {
			return err
		}
	}
	return nil
}

// startFairTree submits (c)'s jobs: one usage job per user association
// with CPUs (on fs01, all at once, fsUsageRun long), and one probe job per
// user association, root's included, into the DOWN partition, where they
// wait for the whole run and Slurm recomputes their priority every
// PriorityCalcPeriod.
func startFairTree(ctx context.Context, c *Cluster) (*fairTreeRun, error) {
	_, users := FairTreeAssociations()
	r := &fairTreeRun{began: time.Now()}
	sub := func(part, account, user string, cpus int, sleep time.Duration) (int, error) {
		out, err := c.Cmd(ctx, "sbatch", "--parsable", "-p", part, "-A", account, "--uid="+user, "-c", strconv.Itoa(cpus),
			"--mem=100", "-t", "5", "-D", "/tmp", "-o", "/dev/null", "-e", "/dev/null", "-J", "c-"+account+"-"+user,
			"--wrap", "sleep "+strconv.Itoa(int(sleep.Seconds())))
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimSpace(strings.Split(out, ";")[0]))
	}
	for _, u := range users {
		if u.CPUs == 0 {
			continue
		}
		id, err := sub(fsPartition, u.Account, u.User, u.CPUs, fsUsageRun)
		if err != nil {
			return nil, err
		}
		r.usage = append(r.usage, id)
	}
	for _, u := range append([]FSUser{{Account: "root", User: "root"}}, users...) {
		id, err := sub(fsHold, u.Account, u.User, 1, 10*time.Second)
		if err != nil {
			return nil, err
		}
		r.probes = append(r.probes, Probe{ID: id, Account: u.Account, User: u.User})
	}
	return r, nil
}

// lastDecay is when slurmctld's priority thread last ran (it writes
// priority_last_decay_ran into StateSaveLocation each time).
func lastDecay(c *Cluster) time.Time {
	st, err := os.Stat(filepath.Join(c.Run, "state", "priority_last_decay_ran"))
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// finishFairTree waits until the usage jobs have ended and the priority
// thread has run since (so every job's usage is in), reads sshare, sprio
// and sacctmgr's associations, and compares with gpusched.
func finishFairTree(ctx context.Context, t *testing.T, c *Cluster, r *fairTreeRun) *Scenario {
	accts, users := FairTreeAssociations()
	s := &Scenario{Key: "(c)", Title: "Fair Tree ranking", Target: "identical ranking",
		Header: []string{"association", "RawUsage", "Slurm Level FS", "gpusched Level FS", "Slurm FairShare", "gpusched FairShare", "agree"}}
	s.Setup = fmt.Sprintf("slurmdbd with a MariaDB of its own, `PriorityType=priority/multifactor` (Fair Tree, 22.05's default), "+
		"fair share the only weighted factor; %d accounts and %d user associations created with `sacctmgr` (tree below, from "+
		"`sacctmgr show assoc`). The usage history: one job per user association with cores, all at once for %v on a CPU-only node "+
		"(`fs01`, partitions of its own, not part of the GPU site), while (d) runs (root's user association carries every "+
		"other scenario's jobs). One probe job per user association waits in a DOWN partition. After the priority thread ran "+
		"past the last usage, `sshare -l -P -a` gives RawUsage, Level FS and FairShare, `sprio -n` each probe's fair-share factor. "+
		"gpusched gets the associations through the importer (`slurm.ParseAssoc` on `sacctmgr show assoc -P`) and every "+
		"association's RawUsage from sshare; `fairshare.FairTree` gives Level FS and the factor, and a `queue.Tree` under the "+
		"FairTree policy, its usage restored to the same values, orders the probe jobs. A user association agrees when its factor "+
		"is the same (to sshare's six decimals); a probe job agrees when gpusched serves it within its group of equal factors in "+
		"Slurm's order; Level FS is compared within max(1%%, 2/RawUsage): sshare prints RawUsage cut to whole units, and that is what gpusched gets.", len(accts), len(users), fsUsageRun)
	deadline := time.Now().Add(4 * time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("fair tree: usage jobs or the priority thread did not finish by the deadline")
		}
		// The usage jobs must have ended, and the priority thread run
		// since: their usage is then all in (other scenarios' jobs may
		// still add to root's; sshare and sprio are read between the same
		// two runs of the thread, below).
		ended := time.Time{}
		running := false
		jobs, err := c.Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[int]JobInfo{}
		for _, j := range jobs {
			byID[j.ID] = j
		}
		for _, id := range r.usage {
			j := byID[id]
			switch j.State {
			case "COMPLETED":
			case "PENDING", "RUNNING", "COMPLETING", "CONFIGURING":
				running = true
			default:
				t.Fatalf("fair tree: usage job %d (%s) ended %s (reason %s): no usage history", id, j.Name, j.State, j.Reason)
			}
			if j.End.After(ended) {
				ended = j.End
			}
		}
		if !running && lastDecay(c).After(ended.Add(time.Second)) {
			break
		}
		time.Sleep(time.Second)
	}
	var shareOut, sprioOut string
	for try := 0; ; try++ { // one consistent reading: no priority run in between
		d := lastDecay(c)
		var err error
		if shareOut, err = c.Cmd(ctx, "sshare", "-l", "-P", "-a"); err != nil {
			t.Fatal(err)
		}
		if sprioOut, err = c.Cmd(ctx, "sprio", "-h", "-n", "-o", "%i|%f"); err != nil {
			t.Fatal(err)
		}
		if lastDecay(c).Equal(d) || try > 3 {
			break
		}
	}
	assocOut, err := c.Cmd(ctx, "sacctmgr", "show", "assoc", "-P", "format=Cluster,Account,User,Partition,ParentName,Share,GrpTRES")
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("GPUSCHED_SLURM_KEEP"); dir != "" {
		for name, v := range map[string]string{"sshare.txt": shareOut, "sprio.txt": sprioOut, "assoc.txt": assocOut, "probes.txt": probesText(r.probes)} {
			_ = os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644)
		}
	}
	fillFairTree(t, s, shareOut, sprioOut, assocOut, r.probes)
	return s
}

func probesText(ps []Probe) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%d %s %s\n", p.ID, p.Account, p.User)
	}
	return b.String()
}

// fillFairTree compares Slurm's readings with gpusched and fills s.
func fillFairTree(t *testing.T, s *Scenario, shareOut, sprioOut, assocOut string, probes []Probe) {
	share, err := ParseSshare(shareOut)
	if err != nil {
		t.Fatal(err)
	}
	prio, err := ParseSprio(sprioOut)
	if err != nil {
		t.Fatal(err)
	}
	o, err := CompareFairTree(assocOut, share, probes, prio, time.Unix(1_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	users, sameLF := 0, 0
	for _, a := range o.Assocs {
		agree := "—"
		if a.SameLevelFS {
			sameLF++
		}
		if a.User {
			users++
			agree = yesNo(a.SameFactor && a.SameLevelFS)
			if a.SameFactor && a.SameLevelFS {
				s.Agree++
			} else {
				s.Disagreements = append(s.Disagreements, fmt.Sprintf("%s: Slurm's FairShare %s (Level FS %s), gpusched's %s (Level FS %s).",
					a.Path, FormatFS(a.SlurmFS), FormatFS(a.SlurmLevelFS), FormatFS(a.GFS), FormatFS(a.GLevelFS)))
			}
			s.Total++
		} else if !a.SameLevelFS {
			agree = "**no**"
			s.Disagreements = append(s.Disagreements, fmt.Sprintf("account %s: Slurm's Level FS %s, gpusched's %s.", a.Path, FormatFS(a.SlurmLevelFS), FormatFS(a.GLevelFS)))
		}
		s.Rows = append(s.Rows, []string{a.Path, strconv.FormatFloat(a.RawUsage, 'f', 0, 64), FormatFS(a.SlurmLevelFS), FormatFS(a.GLevelFS), FormatFS(a.SlurmFS), FormatFS(a.GFS), agree})
	}
	ok := o.JobsAgree()
	jobsAgree := 0
	var so, gorder []string
	for _, j := range o.Slurm {
		so = append(so, fmt.Sprintf("%s:%s (%s)", j.Account, j.User, strconv.FormatFloat(j.Factor, 'f', 4, 64)))
	}
	for i, j := range o.Gpusched {
		gorder = append(gorder, j.Account+":"+j.User)
		s.Total++
		if ok[j.ID] {
			s.Agree++
			jobsAgree++
		} else {
			s.Disagreements = append(s.Disagreements, fmt.Sprintf("probe job %d (%s:%s): gpusched serves it %d., outside its group of equal factors in Slurm's order.", j.ID, j.Account, j.User, i+1))
		}
	}
	s.Met = s.Agree == s.Total && sameLF == len(o.Assocs)
	s.Notes = append(s.Notes,
		fmt.Sprintf("User associations with the same fair-share factor: %d of %d; associations with the same Level FS: %d of %d; "+
			"probe jobs in the same order (within ties): %d of %d.", s.Agree-jobsAgree, users, sameLF, len(o.Assocs), jobsAgree, len(o.Gpusched)),
		"Probe jobs, Slurm (sprio's fair-share factor, highest first): "+strings.Join(so, " → ")+
			"\n\ngpusched (queue.Tree under FairTree): "+strings.Join(gorder, " → "))
	if len(o.Warnings) > 0 {
		s.Notes = append(s.Notes, "Importer warnings on sacctmgr's output: "+strings.Join(o.Warnings, "; ")+".")
	}
}
