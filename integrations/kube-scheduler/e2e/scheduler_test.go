package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"k8s.io/component-base/configz"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/klog/v2/textlogger"

	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// schedulerRunner starts a kube-scheduler against a control plane with the
// given KubeSchedulerConfiguration (YAML, without clientConnection, which the
// runner fills in) and stops it when the test ends.
type schedulerRunner func(t *testing.T, cp *controlPlane, config string)

// writeConfig writes a scheduler configuration that talks to cp.
func writeConfig(t testing.TB, cp *controlPlane, config string) string {
	t.Helper()
	kc := "  kubeconfig: " + strconv.Quote(cp.Kubeconfig) + "\n"
	if strings.Contains(config, "\nclientConnection:\n") {
		// The configuration sets other client fields (qps, burst).
		config = strings.Replace(config, "\nclientConnection:\n", "\nclientConnection:\n"+kc, 1)
	} else {
		config = strings.TrimRight(config, "\n") + "\nclientConnection:\n" + kc
	}
	return writeFile(t, "kube-scheduler.yaml", config)
}

// runInProcess runs the scheduler inside the test process, built the way
// app.NewSchedulerCommand builds it, with registry options (the gpusched
// plugins) added to the in-tree registry.
func runInProcess(registry ...app.Option) schedulerRunner {
	return func(t *testing.T, cp *controlPlane, config string) {
		t.Helper()
		startInProcess(t, cp, config, registry...)
	}
}

// startInProcess runs the scheduler in this process until the test or
// benchmark ends (see runInProcess).
func startInProcess(t testing.TB, cp *controlPlane, config string, registry ...app.Option) {
	t.Helper()
	// kube-scheduler registers its configuration in component-base's
	// process-wide configz: unregistered when this scheduler has stopped
	// (cleanups run last-in first-out), so the next in-process scheduler
	// of this test binary can start.
	t.Cleanup(func() { configz.Delete("componentconfig") })
	configFile := writeConfig(t, cp, config)
	// The scheduler logs through the context's logger: into the test's
	// log, shown when it fails or runs with -v.
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	if path := os.Getenv("GPUSCHED_SCALE_LOG"); path != "" {
		// A file instead (a benchmark's log is cut to its first lines).
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		v, _ := strconv.Atoi(os.Getenv("GPUSCHED_SCALE_LOGV"))
		logger = textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(cmp.Or(v, 2)), textlogger.Output(f)))
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--config=" + configFile,
		// No serving: nothing scrapes it, and it needs ports and certs.
		"--secure-port=0",
	}
	if err := fs.Parse(args); err != nil {
		cancel()
		t.Fatalf("scheduler flags: %v", err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		cancel()
		t.Fatal(err)
	}
	cc, sched, err := app.Setup(ctx, opts, registry...)
	if err != nil {
		cancel()
		t.Fatalf("scheduler setup: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, cc, sched) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) && err.Error() != "finished without leader elect" {
				t.Logf("scheduler exited: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("scheduler did not stop within 30s")
		}
	})
}

// runBinary runs the built kube-scheduler binary as a separate process (see
// startSchedulerProcess).
func runBinary(bin string) schedulerRunner {
	return func(t *testing.T, cp *controlPlane, config string) {
		t.Helper()
		startSchedulerProcess(t, bin, cp, config)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// schedulerBinary returns the kube-scheduler binary to test: $GPUSCHED_KUBE_SCHEDULER
// when set (hack/ci.sh builds it once), else one built now with `go build`.
func schedulerBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("GPUSCHED_KUBE_SCHEDULER"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gpusched-kube-scheduler")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "kube-scheduler")
		if runtime.GOOS == "windows" {
			builtBin += ".exe"
		}
		cmd := exec.Command("go", "build", "-o", builtBin, "../cmd/kube-scheduler")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}
