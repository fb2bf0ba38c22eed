// Package e2e tests the gpusched kube-scheduler end to end: an etcd and a
// kube-apiserver run inside the test process, Nodes and Pods are created
// through the API, and the scheduler (in this process, or the built binary)
// binds the pods.
//
// The scenarios take a minute or two on two cores; `go test -short` skips
// building the binary unless $GPUSCHED_KUBE_SCHEDULER names one.
package e2e

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"
)

func TestMain(m *testing.M) {
	// Components that log through the global klog logger would write to
	// stderr around the test output; contextual loggers (the apiserver's
	// and the scheduler's, see runInProcess) go to each test's log.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin)) // the binary schedulerBinary built
	}
	os.Exit(code)
}
