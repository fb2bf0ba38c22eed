package simcli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/importers/kube"
)

// kubeRun are sim run's --kube flags: continue a live cluster's state (a
// dump) under a changed Kueue, Volcano or KAI-Scheduler configuration and
// compare with the unchanged one.
type kubeRun struct {
	dump, config, baseline, now string
}

func (k *kubeRun) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&k.dump, "kube", "", "continue from `DUMP` (kubectl get nodes,pods -A -o yaml, plus Kueue workloads; a file or directory) instead of replaying a trace")
	fs.StringVar(&k.config, "config", "", "with --kube: the changed configuration (`DIR` or file of Kueue, Volcano or KAI-Scheduler objects)")
	fs.StringVar(&k.baseline, "baseline", "", "with --kube: the unchanged configuration (`DIR` or file); default: the configuration objects in the dump")
	fs.StringVar(&k.now, "now", "", "with --kube: the time of the dump (RFC 3339); default: the latest time it mentions")
}

// run compares the two configurations from the dump's state over horizon
// (0: 7 days).
func (k *kubeRun) run(cmd *cobra.Command, horizon time.Duration) error {
	if k.config == "" {
		return fmt.Errorf("--kube needs --config DIR: the changed configuration")
	}
	var opt kube.DumpOptions
	if k.now != "" {
		t, err := time.Parse(time.RFC3339, k.now)
		if err != nil {
			return fmt.Errorf("--now: %w", err)
		}
		opt.Now = t
	}
	if horizon <= 0 {
		horizon = 7 * 24 * time.Hour
	}
	base, err := kube.Prepare(k.dump, k.baseline, opt)
	if err != nil {
		return fmt.Errorf("unchanged configuration: %w", err)
	}
	changed, err := kube.Prepare(k.dump, k.config, opt)
	if err != nil {
		return fmt.Errorf("changed configuration: %w", err)
	}
	for _, n := range changed.Notes {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", n)
	}
	c, notes, err := kube.Compare(base, changed, horizon)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", n)
	}
	c.Write(cmd.OutOrStdout())
	return nil
}
