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
# shellcheck source=lib/go-build-once.sh
. "$script_dir/lib/go-build-once.sh"

# As helm's Makefile does: the Kubernetes version `helm template` and `helm lint` assume
# follows the client-go helm is built with (v0.N.x is Kubernetes 1.N).
client_go=$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$module_dir/go.mod")
kube_minor=$(echo "$client_go" | cut -d. -f2)
[[ -n "$kube_minor" ]] || die "no k8s.io/client-go in $module_dir/go.mod"
ldflags="-X helm.sh/helm/v3/internal/version.version=$version"
for pkg in pkg/lint/rules pkg/chartutil; do
  ldflags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$kube_minor"
done
go_build_once "helm $version" "$module_dir" "$(dirname "$bin")" "$cache_dir/$version/build" helm "$ldflags" helm.sh/helm/v3/cmd/helm
echo "HELM=$bin"
