package slurmharness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Installed reports whether the Slurm daemons and munge are on PATH, and
// if not, which is missing.
func Installed() (bool, string) {
	for _, b := range []string{"slurmctld", "slurmd", "munged", "sbatch", "scontrol", "squeue"} {
		if _, err := exec.LookPath(b); err != nil {
			return false, b
		}
	}
	return true, ""
}

// Cluster is a running local Slurm: slurmctld and one slurmd per node,
// with state, logs and fake GPU devices under Run.
type Cluster struct {
	Run     string // run directory (slurm-up.sh's RUNDIR)
	Scripts string // the scripts directory
	Conf    string // Run/etc/slurm.conf
}

// Start runs scripts/slurm-up.sh with the configuration in site, and with
// extra (not empty) the accounting additions in that directory: MariaDB,
// slurmdbd, and extra's slurm.conf and topology.conf lines.
func Start(ctx context.Context, scripts, run, site, extra string) (*Cluster, error) {
	c := &Cluster{Run: run, Scripts: scripts, Conf: filepath.Join(run, "etc", "slurm.conf")}
	args := []string{run, site}
	if extra != "" {
		args = append(args, extra)
	}
	// The reaper first: it stops the daemons and removes run once this
	// process is gone, however it ends (a go test timeout or a signal
	// skips deferred and t.Cleanup functions).
	if err := startReaper(scripts, run); err != nil {
		return nil, err
	}
	up := exec.CommandContext(ctx, filepath.Join(scripts, "slurm-up.sh"), args...)
	out, err := up.CombinedOutput()
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("slurm-up.sh: %v\n%s", err, out)
	}
	return c, nil
}

// startReaper starts scripts/slurm-reaper.sh for this process and run, in
// a process group of its own so that a signal to the test's group does
// not end it; it is not waited for.
func startReaper(scripts, run string) error {
	r := exec.Command(filepath.Join(scripts, "slurm-reaper.sh"), strconv.Itoa(os.Getpid()), run)
	r.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.Start(); err != nil {
		return fmt.Errorf("slurm-reaper.sh: %w", err)
	}
	go func() { _ = r.Wait() }() // reaped if it ends first (it never does before us)
	return nil
}

// Stop stops the daemons (slurm-down.sh).
func (c *Cluster) Stop() {
	_ = exec.Command(filepath.Join(c.Scripts, "slurm-down.sh"), c.Run).Run()
}

// Cmd runs a Slurm client command against the cluster and returns its
// standard output.
func (c *Cluster) Cmd(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	cmd.Dir = c.Run
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// SetPartition sets the partition's state (UP or DOWN).
func (c *Cluster) SetPartition(ctx context.Context, part, state string) error {
	_, err := c.Cmd(ctx, "scontrol", "update", "PartitionName="+part, "State="+state)
	return err
}

// Submit submits j with sbatch and returns its Slurm job ID. begin, when
// not zero, is the job's earliest start (sbatch --begin).
func (c *Cluster) Submit(ctx context.Context, j JobSpec, begin time.Time) (int, error) {
	args := []string{"--parsable", "-J", j.Name, "-N", strconv.Itoa(j.Nodes), "--ntasks-per-node=1",
		"-c", strconv.Itoa(j.CPUs), "--mem=" + strconv.FormatInt(j.MemMiB, 10),
		"-t", strconv.Itoa(int(j.Limit / time.Minute)), "-o", "/dev/null", "-e", "/dev/null"}
	if j.GPUs > 0 {
		g := "gpu:"
		if j.Type != "" {
			g += j.Type + ":"
		}
		args = append(args, "--gres="+g+strconv.Itoa(j.GPUs))
	}
	if !begin.IsZero() {
		args = append(args, "--begin="+begin.Format("2006-01-02T15:04:05"))
	}
	args = append(args, "--wrap", "sleep "+strconv.FormatFloat(j.Sleep.Seconds(), 'f', -1, 64))
	out, err := c.Cmd(ctx, "sbatch", args...)
	if err != nil {
		return 0, err
	}
	id, err := strconv.Atoi(strings.TrimSpace(strings.Split(out, ";")[0]))
	if err != nil {
		return 0, fmt.Errorf("sbatch: unexpected output %q", out)
	}
	return id, nil
}

// Jobs returns scontrol -d show job for every job Slurm still knows.
func (c *Cluster) Jobs(ctx context.Context) ([]JobInfo, error) {
	out, err := c.Cmd(ctx, "scontrol", "-d", "show", "job")
	if err != nil {
		return nil, err
	}
	return ParseJobs(out)
}

// Starts returns squeue --start's expected start time per pending job ID.
func (c *Cluster) Starts(ctx context.Context) (map[int]time.Time, error) {
	out, err := c.Cmd(ctx, "squeue", "--start", "-h", "-t", "PD", "-o", "%i %S")
	if err != nil {
		return nil, err
	}
	return ParseStarts(out)
}

// CancelAll cancels every job and waits until no job runs or waits.
func (c *Cluster) CancelAll(ctx context.Context) error {
	if _, err := c.Cmd(ctx, "scancel", "--user=root"); err != nil {
		return err
	}
	for {
		out, err := c.Cmd(ctx, "squeue", "-h", "-o", "%i")
		if err != nil {
			return err
		}
		busy, err := c.Cmd(ctx, "sinfo", "-h", "-N", "-t", "alloc,mix,comp", "-o", "%N")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) == "" && strings.TrimSpace(busy) == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}
