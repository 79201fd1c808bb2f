#!/usr/bin/env bash
# The third-party linters of the chart tests, built once from Go modules
# (scripts/chart-lint-env/go.mod) like helm in scripts/helm-env.sh, and cached per version:
# kube-score (best practices of the rendered objects) and kubeconform (the objects against
# the OpenAPI schemas of the Kubernetes version the test cluster runs, which it cannot
# download here: they come from that release's module, k8s.io/kubernetes in
# scripts/k8s-env/go.mod, through the module cache).
#
#   scripts/chart-lint-env.sh   build if needed; prints, last:
#                               KUBE_SCORE=<path>
#                               KUBECONFORM=<path>
#                               KUBERNETES_VERSION=<vX.Y.Z>
#                               KUBERNETES_OPENAPI=<path of that release's api/openapi-spec/swagger.json>
#
# Environment (all optional):
#   UHLP_CHART_LINT_CACHE_DIR   where the linters are built, per version   (~/.cache/uhlp/chart-lint)
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module_dir="$script_dir/chart-lint-env"
kube_module_dir="$script_dir/k8s-env"
require() { awk -v mod="$1" '($1 == mod) || ($1 == "require" && $2 == mod) { print ($1 == "require" ? $3 : $2); exit }' "$2"; }
kube_score_version=$(require github.com/zegl/kube-score "$module_dir/go.mod")
kubeconform_version=$(require github.com/yannh/kubeconform "$module_dir/go.mod")
kubernetes_version=$(require k8s.io/kubernetes "$kube_module_dir/go.mod")
[[ -n "$kube_score_version" && -n "$kubeconform_version" ]] || { echo "chart-lint-env: no kube-score or kubeconform requirement in $module_dir/go.mod" >&2; exit 1; }
[[ -n "$kubernetes_version" ]] || { echo "chart-lint-env: no k8s.io/kubernetes requirement in $kube_module_dir/go.mod" >&2; exit 1; }
cache_dir=${UHLP_CHART_LINT_CACHE_DIR:-$HOME/.cache/uhlp/chart-lint}
version_dir="$cache_dir/kube-score-$kube_score_version-kubeconform-$kubeconform_version"
bin_dir="$version_dir/bin"

log() { echo "chart-lint-env: $*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=lib/go-build-once.sh
. "$script_dir/lib/go-build-once.sh"

go_build_once "kube-score $kube_score_version and kubeconform $kubeconform_version" "$module_dir" "$bin_dir" "$version_dir/build" \
  "kube-score kubeconform" "-X main.version=$kube_score_version" github.com/zegl/kube-score/cmd/kube-score github.com/yannh/kubeconform/cmd/kubeconform

# The release's own OpenAPI document, from the module cache (fetched through the proxy once).
kube_dir=$(cd "$kube_module_dir" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$kubernetes_version" | awk -F'"' '$2 == "Dir" { print $4; exit }')
openapi="$kube_dir/api/openapi-spec/swagger.json"
[[ -s "$openapi" ]] || die "no $openapi in the module cache (go mod download k8s.io/kubernetes@$kubernetes_version)"

echo "KUBE_SCORE=$bin_dir/kube-score"
echo "KUBECONFORM=$bin_dir/kubeconform"
echo "KUBERNETES_VERSION=$kubernetes_version"
echo "KUBERNETES_OPENAPI=$openapi"
