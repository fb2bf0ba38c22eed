#!/usr/bin/env bash
# gen-replaces.sh rewrites the k8s.io replace directives of this module's
# go.mod from kubernetes' own go.mod.
#
# k8s.io/kubernetes is not meant to be imported: its go.mod requires every
# staging module (k8s.io/api, k8s.io/client-go, ...) at v0.0.0 and replaces
# them with ./staging/src/... paths that do not exist outside its repository.
# A module that imports it must replace each of those modules with its
# published tag, v0.<minor>.<patch> for kubernetes v1.<minor>.<patch>.
#
# Usage: hack/gen-replaces.sh [-check] [KUBERNETES_VERSION]
#   KUBERNETES_VERSION defaults to the version go.mod requires.
#   -check changes nothing and fails if go.mod's replaces are not what this
#   script would write (CI runs it so).
set -euo pipefail

cd "$(dirname "$0")/.."

check=false
if [[ "${1:-}" == "-check" ]]; then
	check=true
	shift
fi
target=go.mod
if $check; then
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	cp go.mod "$tmp/go.mod"
	target="$tmp/go.mod"
fi

version="${1:-}"
if [[ -z "$version" ]]; then
	version="$(go mod edit -json | sed -n '/"Path": "k8s.io\/kubernetes"/{n;s/.*"Version": "\(.*\)".*/\1/p;}')"
fi
if [[ ! "$version" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
	echo "gen-replaces: want a kubernetes release like v1.37.2, got '${version}'" >&2
	exit 2
fi
staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

# Read kubernetes' go.mod from the module cache (downloading it if needed).
gomod="$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
if [[ ! -f "$gomod" ]]; then
	echo "gen-replaces: could not find go.mod of k8s.io/kubernetes@${version}" >&2
	exit 1
fi

# Every "k8s.io/X => ./staging/src/k8s.io/X" line names one staging module.
mapfile -t mods < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/src/.*#\1#p' "$gomod" | sort -u)
if [[ ${#mods[@]} -eq 0 ]]; then
	echo "gen-replaces: no staging replaces found in ${gomod}" >&2
	exit 1
fi

args=("-require=k8s.io/kubernetes@${version}")
for m in "${mods[@]}"; do
	args+=("-replace=${m}=${m}@${staging}")
done
# Drop every k8s.io replace first (kubernetes may have dropped a staging
# module), then write the current set: go mod edit applies edits in order.
drops=()
while read -r old; do
	drops+=("-dropreplace=${old}")
done < <(sed -n 's#^\(replace[[:space:]]\+\|[[:space:]]\+\)\(k8s\.io/[^[:space:]]*\)[[:space:]].*=>.*#\2#p' "$target" | sort -u)
args=("${drops[@]}" "${args[@]}")
go mod edit "${args[@]}" "$target"

if $check; then
	if ! diff -u go.mod "$target"; then
		echo "gen-replaces: go.mod's k8s.io replaces are stale; run hack/gen-replaces.sh" >&2
		exit 1
	fi
	echo "gen-replaces: go.mod matches k8s.io/kubernetes ${version} (${#mods[@]} staging modules at ${staging})"
	exit 0
fi
echo "gen-replaces: k8s.io/kubernetes ${version}: replaced ${#mods[@]} staging modules with ${staging}"
