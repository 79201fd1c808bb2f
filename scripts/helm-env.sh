#!/usr/bin/env bash
# Helm for the chart tests, built once from Go modules (scripts/helm-env/go.mod) like
# the control plane of scripts/k8s-env.sh, and cached per Helm version.
#
#   scripts/helm-env.sh   build if needed; last line: HELM=<path>
#
# Environment (all optional):
#   UHLP_HELM_CACHE_DIR   where helm is built, per version   (~/.cache/uhlp/helm)
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module_dir="$script_dir/helm-env"
version=$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" { print $3; exit }' "$module_dir/go.mod")
[[ -n "$version" ]] || { echo "helm-env: no helm.sh/helm/v3 requirement in $module_dir/go.mod" >&2; exit 1; }
cache_dir=${UHLP_HELM_CACHE_DIR:-$HOME/.cache/uhlp/helm}
bin="$cache_dir/$version/bin/helm"

log() { echo "helm-env: $*" >&2; }
die() { log "$*"; exit 1; }

if [[ ! -x "$bin" ]]; then
  command -v go > /dev/null || die "go is not installed; it builds helm from scripts/helm-env/go.mod"
  mkdir -p "$cache_dir/$version"
  exec 9> "$cache_dir/$version/build.lock"
  flock 9
  if [[ ! -x "$bin" ]]; then # another run may have built it while we waited
    tmp="$cache_dir/$version/bin.tmp.$$"
    started=$SECONDS
    rm -rf "$tmp" && mkdir -p "$tmp"
    log "building helm $version into $(dirname "$bin") (once)"
    # As helm's Makefile does: the Kubernetes version `helm template` and `helm lint` assume
    # follows the client-go helm is built with (v0.N.x is Kubernetes 1.N).
    client_go=$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$module_dir/go.mod")
    kube_minor=$(echo "$client_go" | cut -d. -f2)
    [[ -n "$kube_minor" ]] || die "no k8s.io/client-go in $module_dir/go.mod"
    ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
    for pkg in pkg/lint/rules pkg/chartutil; do
      ldflags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$kube_minor"
    done
    # Into a temporary directory first: an interrupted build never leaves a binary that looks complete.
    (
      cd "$module_dir"
      GOFLAGS="-trimpath -buildvcs=false -mod=readonly" CGO_ENABLED=0 nice -n 10 \
        go build -ldflags="$ldflags" -o "$tmp/" helm.sh/helm/v3/cmd/helm
    ) > "$cache_dir/$version/build.log" 2>&1 || { tail -20 "$cache_dir/$version/build.log" >&2; die "build failed; see $cache_dir/$version/build.log"; }
    rm -rf "$(dirname "$bin")" && mv "$tmp" "$(dirname "$bin")"
    log "built in $((SECONDS - started))s"
  fi
fi
echo "HELM=$bin"
