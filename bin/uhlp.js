#!/usr/bin/env node
// The CLI is compiled TypeScript; `npm run build` produces dist/.
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
