#!/usr/bin/env bash
# ci.sh builds and tests the Kueue conformance harness, its own Go module,
# and Kueue's manager (integrations/kueue/manager, a module of its own that
# requires sigs.k8s.io/kueue at the version its go.mod names, with the
# Kubernetes libraries Kueue itself requires).
#
# The root's .ci/run calls it. Nothing here needs a cluster, Docker or an
# etcd binary: etcd and kube-apiserver run inside `go test` (the same
# versions as integrations/kube-scheduler, so the two modules share the
# build cache), and Kueue's manager runs as a process beside them.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== kueue: %s (%s)\n' "$*" "$(date +%T)"; }
start=$(date +%s)

step "gofmt"
unformatted=$(gofmt -l $(find . -name '*.go') || true)
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi

step "go build (Kueue's manager, from sigs.k8s.io/kueue)"
bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT
(cd manager && go vet ./... && go build -ldflags='-s -w' -o "$bindir/kueue-manager" .)

step "go vet"
go vet ./...

step "go test (gpusched side, then conformance against the real Kueue)"
report="$bindir/kueue-conformance.md"
GPUSCHED_KUEUE_MANAGER="$bindir/kueue-manager" GPUSCHED_KUEUE_REPORT="$report" \
	go test -count=1 -ldflags='-s -w' -timeout 20m ./...

step "agreement report"
if ! diff -u ../../docs/kueue-conformance.md "$report"; then
	echo "docs/kueue-conformance.md differs from what Kueue did in this run (above);"
	echo "regenerate it: GPUSCHED_KUEUE_REPORT=\$PWD/docs/kueue-conformance.md go test ./conformance (in integrations/kueue)"
	exit 1
fi

step "done in $(( $(date +%s) - start ))s"
