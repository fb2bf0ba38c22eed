package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/importers/kube"
)

// kubeFlags are explain's --kube/--config flags: read a Kubernetes
// cluster's dump and its Kueue, Volcano or KAI-Scheduler configuration
// instead of a state file.
type kubeFlags struct {
	dump, config string
	now          string
	horizon      time.Duration
}

func (k *kubeFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&k.dump, "kube", "", "read `DUMP` (kubectl get nodes,pods -A -o yaml, plus Kueue workloads; a file or a directory) instead of a state file")
	fs.StringVar(&k.config, "config", "", "with --kube: the Kueue, Volcano or KAI-Scheduler configuration (`DIR` or file); default: the configuration objects in the dump")
	fs.StringVar(&k.now, "now", "", "with --kube: the time of the dump (RFC 3339); default: the latest time it mentions")
	fs.DurationVar(&k.horizon, "forecast", 7*24*time.Hour, "with --kube: how far ahead to forecast starts")
}

func (k *kubeFlags) options() (kube.DumpOptions, error) {
	var opt kube.DumpOptions
	if k.now != "" {
		t, err := time.Parse(time.RFC3339, k.now)
		if err != nil {
			return opt, fmt.Errorf("--now: %w", err)
		}
		opt.Now = t
	}
	return opt, nil
}

// loadKube reads the dump and configuration into a loaded state for
// explain, printing the mapping report to standard error.
func loadKube(cmd *cobra.Command, k *kubeFlags) (*loadedState, *kube.Setup, error) {
	opt, err := k.options()
	if err != nil {
		return nil, nil, err
	}
	s, err := kube.Prepare(k.dump, k.config, opt)
	if err != nil {
		return nil, nil, err
	}
	l, notes, err := s.Load()
	if err != nil {
		return nil, nil, err
	}
	for _, n := range append(s.Notes, notes...) {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", n)
	}
	return &loadedState{name: k.dump, now: l.State.Now, cluster: l.Cluster, sched: l.Scheduler, states: l.States}, s, nil
}

// writeKubeForecast runs the state forward and prints expected starts.
func writeKubeForecast(cmd *cobra.Command, s *kube.Setup, k *kubeFlags) error {
	f, _, err := s.Forecast(k.horizon)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout())
	kube.WriteForecast(cmd.OutOrStdout(), f)
	return nil
}

// explainKube is explain --kube: the cycle's explanations, then the
// forecast of when each waiting job starts.
func explainKube(cmd *cobra.Command, k *kubeFlags, args []string, jsonOut bool, only []string, quota bool) error {
	if len(args) > 0 {
		return fmt.Errorf("--kube reads a dump; no state file %q", args[0])
	}
	st, s, err := loadKube(cmd, k)
	if err != nil {
		return err
	}
	d := st.sched.Schedule(st.now)
	if jsonOut {
		return writeExplainJSON(cmd.OutOrStdout(), st, d, only, quota)
	}
	writeExplainText(cmd.OutOrStdout(), st, d, only, quota)
	return writeKubeForecast(cmd, s, k)
}
