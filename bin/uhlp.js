#!/usr/bin/env node
// The CLI is compiled TypeScript; `npm run build` produces dist/.
import { main } from '../dist/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`uhlp: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
