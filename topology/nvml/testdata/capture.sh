#!/usr/bin/env bash
# capture.sh NAME: record a golden discovery case on a host with NVIDIA GPUs.
#
# Run it from a gpusched checkout on a machine with the NVIDIA driver (and Go
# with cgo and a C compiler). It saves, side by side, in
# topology/nvml/testdata/golden/NAME/:
#
#   topo-m.txt          nvidia-smi topo -m        (the driver's GPU matrix)
#   nvidia-smi-q.txt    nvidia-smi -q             (serial numbers masked)
#   nvlink-s.txt        nvidia-smi nvlink -s      (per-link state and speed)
#   mig-lgip.txt        nvidia-smi mig -lgip      (MIG profiles, if MIG is on)
#   mig-lgipp.txt       nvidia-smi mig -lgipp     (their placements)
#   discover.yaml       gpusched topology discover --hostname NAME
#   discover.stderr     its warnings and summary line
#   versions.txt        driver, NVML and gpusched versions
#
# TestGoldenCaptures then checks discover.yaml against topo-m.txt on every
# test run (GPU pairs NV#/PIX/PXB/PHB/NODE/SYS, NUMA affinity). Review the
# files before committing them: they hold GPU UUIDs and PCI bus IDs. Never
# edit or fabricate them; a golden case is only worth what the machine said.
#
# NAME should say what the machine is, e.g. dgx-h100-siteA or gb200-tray.
set -euo pipefail

name=${1:?usage: capture.sh NAME   (e.g. dgx-h100-siteA)}
case $name in
*/* | .* | "") echo "capture.sh: NAME must be a plain directory name" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
dir="$here/golden/$name"

command -v nvidia-smi >/dev/null || { echo "capture.sh: nvidia-smi not found; run this on a host with the NVIDIA driver" >&2; exit 1; }
mkdir -p "$dir"

nvidia-smi topo -m >"$dir/topo-m.txt"
nvidia-smi -q | sed -E 's/^([[:space:]]*Serial Number[[:space:]]*:).*/\1 (masked)/' >"$dir/nvidia-smi-q.txt"
nvidia-smi nvlink -s >"$dir/nvlink-s.txt" 2>&1 || true
nvidia-smi mig -lgip >"$dir/mig-lgip.txt" 2>&1 || true
nvidia-smi mig -lgipp >"$dir/mig-lgipp.txt" 2>&1 || true
{
	nvidia-smi --query-gpu=index,name,driver_version,vbios_version --format=csv
	(cd "$repo" && git describe --always --dirty 2>/dev/null || echo "gpusched: unknown revision")
	go version
} >"$dir/versions.txt"

(cd "$repo" && CGO_ENABLED=1 go run ./cmd/gpusched topology discover --hostname "$name") \
	>"$dir/discover.yaml" 2>"$dir/discover.stderr" || {
	echo "capture.sh: gpusched topology discover failed:" >&2
	cat "$dir/discover.stderr" >&2
	exit 1
}
cat "$dir/discover.stderr"
echo "capture.sh: saved $dir; now run: go test ./topology/nvml -run TestGoldenCaptures -v"
