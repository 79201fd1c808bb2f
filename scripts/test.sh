#!/usr/bin/env bash
# Sets up everything the tests need on this machine and runs every test.
# This is the README's test command, and exactly what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== install and build"
npm ci --no-audit --no-fund --loglevel=error
npm run -s build
npx tsc -p tsconfig.check.json

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
