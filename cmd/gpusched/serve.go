package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/livepage"
	"github.com/gpusched/gpusched/snapshot"
)

// newServeCmd builds `gpusched serve`: the live page (package livepage)
// of a saved state, served until interrupted.
func newServeCmd() *cobra.Command {
	var state, addr string
	cmd := &cobra.Command{
		Use:   "serve --state FILE",
		Short: "Serve the live page of a saved state (queues, waiting jobs, the cluster)",
		Long: `Serve loads a saved scheduler state (the format of gpusched explain --help;
"gpusched sim run --save-state AT" and package snapshot write one), runs
its scheduling cycle at the state's time as explain does, and serves the
live page of the result, the same page the kube-scheduler plugin serves
on its liveAddress (package livepage):

  GET /            the page: the queues with their GPU guarantee, usage,
                   reservations and borrowing; the waiting jobs with their
                   reason token and reason; the cluster as a box per network
                   domain with a cell per host coloured by occupancy (orange
                   where its free GPUs are stranded: fewer than any waiting
                   job needs there), a mark per GPU, GB200 NVL72 racks drawn
                   as racks
  GET /state.json  the same as JSON

It prints the page's URL and serves until interrupted (Ctrl-C). The page
is read-only and has no authentication: keep --addr on a trusted
interface.`,
		Example: `  gpusched serve --state cmd/gpusched/testdata/serve/state.yaml
  gpusched serve --state out/state-3h.yaml --addr :8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if state == "" {
				return errors.New("--state: want a saved state file (its format: gpusched explain --help)")
			}
			st, err := loadStateWith(cmd, state, snapshot.Options{NoPreemption: true, Stats: true})
			if err != nil {
				return err
			}
			for _, n := range st.notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %s\n", st.name, n)
			}
			d := st.sched.Schedule(st.now)
			page := livepage.Build(st.sched, livepage.FromDecision(&d), livepage.Options{
				Title: "state " + st.name,
				Status: fmt.Sprintf("The state at %s after its cycle then (as gpusched explain runs it): %d jobs would start, %d wait.",
					st.now.UTC().Format(time.RFC3339), len(d.Bindings), len(d.Pending)),
			})
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("--addr %q: %w", addr, err)
			}
			srv := &http.Server{Handler: livepage.Handler(func() *livepage.Page { return page }), ReadHeaderTimeout: 10 * time.Second}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			served := make(chan error, 1)
			go func() { served <- srv.Serve(l) }()
			fmt.Fprintf(cmd.OutOrStdout(), "serving the live page of %s at %s (JSON: state.json); Ctrl-C stops\n", st.name, pageURL(l.Addr()))
			select {
			case err := <-served:
				return fmt.Errorf("serve: %w", err)
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				return fmt.Errorf("serve: stopping: %w", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "stopped")
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&state, "state", "", "the saved state file to show (YAML or JSON)")
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "the address to listen on (host:port; port 0 picks a free one)")
	return cmd
}

// pageURL is the URL of the page served on a: http://HOST:PORT/, with
// localhost for an unspecified host.
func pageURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + "/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
