#!/usr/bin/env bash
# ci.sh installs Debian's Slurm packages (slurmctld, slurmd, slurm-client,
# munge, and for the Fair Tree scenario slurmdbd and mariadb-server) unless
# they are there, then runs the conformance harness, its own
# Go module: a real slurmctld and 16 slurmd started with -D on this host,
# the scenarios of TestConformance, and docs/slurm-conformance.md written
# from what Slurm did. The root's .ci/run calls it; it needs root (apt, mknod,
# slurmd running jobs). About 8 minutes, most of it the real-time scenarios.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
step() { printf '\n== slurm: %s (%s)\n' "$*" "$(date +%T)"; }

step "install slurmctld slurmd slurm-client munge slurmdbd mariadb-server"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null ||
	! command -v slurmdbd >/dev/null || ! command -v mariadbd >/dev/null; then
	if [ "$(id -u)" != 0 ]; then
		echo "not root: cannot install Slurm; TestConformance will skip"
	else
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge slurmdbd mariadb-server >/dev/null
	fi
fi
installed=$(date +%s)
echo "install: $((installed - start)) s"

step "gofmt, vet"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi
go vet ./...

step "conformance (real Slurm, real time)"
GPUSCHED_SLURM_REPORT="$(cd ../.. && pwd)/docs/slurm-conformance.md" go test -count=1 -timeout 12m -v ./... 2>&1 | grep -v '^=== RUN' 
echo "slurm step: install $((installed - start)) s, total $(($(date +%s) - start)) s"
