#!/usr/bin/env bash
# ci.sh builds and tests the kube-scheduler integration, its own Go module:
# the replaces are checked against kubernetes' go.mod, the scheduler binary is
# built, and the end-to-end tests run it in-process and as that binary against
# an etcd and a kube-apiserver started inside `go test`.
#
# The root's .ci/run calls it. Nothing here needs a cluster, Docker or an etcd
# binary; the first run on an empty Go build cache compiles kube-apiserver,
# kube-scheduler and etcd (see README.md for the measured times).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== kube-scheduler: %s (%s)\n' "$*" "$(date +%T)"; }
start=$(date +%s)

# Stripping the symbol table and DWARF (-s -w) roughly halves the link time of
# these ~120 MB binaries. It must not be -trimpath: the apiserver's test server
# finds its certificate fixtures by the absolute path of its source file.
# The -X flags stamp the version kube-scheduler reports (--version, metrics)
# as the kubernetes release it is built from.
kver=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
kminor=${kver#v1.}; kminor=${kminor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${kver}+gpusched"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${kminor}"

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go') || true)
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi

step "replaces match kubernetes' go.mod"
hack/gen-replaces.sh -check

step "go build (kube-scheduler binary)"
bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT
go build -ldflags="$ldflags" -o "$bindir/kube-scheduler" ./cmd/kube-scheduler
"$bindir/kube-scheduler" --version

step "go vet"
go vet ./...

step "go test (unit and end-to-end)"
GPUSCHED_KUBE_SCHEDULER="$bindir/kube-scheduler" go test -count=1 -ldflags="$ldflags" -timeout 15m ./...

step "race detector on the plugin (its extension points, cycle goroutine and informer handlers share the host)"
go test -race -count=1 ./plugin

step "scale benchmark: 300 fake GPU nodes, the three profiles' binaries one after the other (one run)"
# One run (the benchmark's default is 3) at 300 nodes with 1,000 1-GPU
# pods keeps CI's run short: scheduler mode's reclaim in the cluster
# workload takes about one preemption per 200 ms cycle, whatever the
# machine, so 1,000 nodes would add minutes. The README gives the command
# of the full figures (1,000 and 5,000 nodes, three runs).
GPUSCHED_KUBE_SCHEDULER="$bindir/kube-scheduler" GPUSCHED_SCALE_NODES=300 GPUSCHED_SCALE_RUNS=1 GPUSCHED_SCALE_SINGLES=1000 \
	go test -count=1 -ldflags="$ldflags" -timeout 20m \
	-run '^$' -bench 'BenchmarkScale/nodes=300$' -benchtime=1x ./e2e/

step "done in $(( $(date +%s) - start ))s"
