# Sourced by the project's scripts: puts a Node 24 first on PATH. A machine whose own Node
# is 24 or newer keeps it; an older one gets the pinned Node from the npm registry
# (scripts/pinned-node.mjs, checked against scripts/node-pin.json). Either way node-gyp
# builds native addons against the pinned Node's headers, with no download.
uhlp_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command -v node >/dev/null 2>&1 || { echo "node-env: a Node (18 or newer) and npm are needed to fetch Node 24" >&2; return 1 2>/dev/null || exit 1; }
uhlp_pinned="$(node "$uhlp_root/scripts/pinned-node.mjs")" || { return 1 2>/dev/null || exit 1; }
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 24 ]; then
  export PATH="$uhlp_pinned/bin:$PATH"
fi
export npm_config_nodedir="$uhlp_pinned"
unset uhlp_root uhlp_pinned
