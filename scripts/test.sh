#!/usr/bin/env bash
# Sets up everything the tests need on this machine and runs every test.
# This is the README's test command, and exactly what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

# Node 24: the machine's own when it is 24 or newer, else the pinned one from the npm registry.
. scripts/node-env.sh
echo "== install and build (node $(node --version) at $(command -v node))"
npm ci --no-audit --no-fund --loglevel=error
npm run -s build
npx tsc -p tsconfig.check.json

echo "== services"
# Docker Engine and Redis, installed from Debian when missing and started when not running.
scripts/test-env.sh
# A real Kubernetes API server (built once from Go modules, cached under ~/.cache/uhlp/k8s).
# One that was already running is used and left running; one started here is stopped at the end.
stop_at_exit=()
if ! scripts/k8s-env.sh env >/dev/null 2>&1; then stop_at_exit+=(scripts/k8s-env.sh); fi
# The node first, then the control plane: each only when this run started it.
trap 'for s in "${stop_at_exit[@]}"; do "$s" down >/dev/null 2>&1 || true; done' EXIT
kube_line="$(scripts/k8s-env.sh up | tail -n 1)"
case "$kube_line" in KUBECONFIG=*) export "$kube_line" ;; *) echo "k8s-env: unexpected last line: $kube_line" >&2; exit 1 ;; esac
# One node on this machine (kubelet, kube-scheduler, kube-proxy and CoreDNS built once
# from Go modules beside the API server; Debian's containerd, runc and CNI): the pod
# driver's tests and the helm journey run pods on it. Started here, stopped at the end.
if ! scripts/k8s-node.sh env >/dev/null 2>&1; then stop_at_exit=(scripts/k8s-node.sh "${stop_at_exit[@]}"); fi
scripts/k8s-node.sh up >/dev/null
# helm, built once from Go modules (cached under ~/.cache/uhlp/helm) before any test times it.
scripts/helm-env.sh >/dev/null
# kube-score and kubeconform for the chart's lint test, the same way (~/.cache/uhlp/chart-lint).
scripts/chart-lint-env.sh >/dev/null

echo "== generated files are up to date"
npm run -s generate
git diff --exit-code -- crds charts

echo "== tests"
report="$(mktemp -t uhlp-vitest-XXXXXX.json)"
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json="$report" || status=$?

# One plain closing line, whatever the reporter printed above.
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
  if (r.numTotalTests === 0) process.exit(1);
' "$report" || status=1
rm -f "$report"
exit "$status"
