#!/usr/bin/env node
// The CLI is compiled TypeScript; `npm run build` produces dist/.
// uhlp runs on Node 24 (package.json engines); an older Node would fail later, on the
// isolate engine's native addon, with a message that names neither.
if (Number(process.versions.node.split('.')[0]) < 24) {
  process.stderr.write(`uhlp: needs Node 24 or newer, this is ${process.version}; \`. scripts/node-env.sh\` puts the pinned Node 24 first on PATH\n`);
  process.exit(1);
}
// `uhlp ledger` loads only the ledger's modules (cli/ledger-command.ts): a
// verification runs in constant memory, and the core's modules would be most of it.
const ledger = process.argv[2] === 'ledger';
const run = ledger
  ? import('../dist/cli/ledger-command.js').then(({ ledgerMain }) => ledgerMain(process.argv.slice(2)))
  : import('../dist/cli/main.js').then(({ main }) => main(process.argv.slice(2)));

run.then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`uhlp: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
