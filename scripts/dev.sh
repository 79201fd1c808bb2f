#!/usr/bin/env bash
# The quick start: installs the project on Node 24 (the pinned one from the npm registry
# when the machine's Node is older, scripts/node-env.sh) and runs `uhlp dev examples`.
# Arguments go to `uhlp dev` (for example --port 8081 or --driver docker).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/node-env.sh
npm ci --no-audit --no-fund --loglevel=error
exec npm run -s dev -- "$@"
