#!/usr/bin/env node
// Puts the python runner next to the compiled Node runners: its .py files, copied
// (tsc emits only .js), and execute-contract.json, the /execute request schema it
// checks requests against, written from the one source of the contract
// (src/contract/execute-contract.ts, compiled) so that the runner never keeps a
// copy of its own. Run after tsc.
// Usage: node scripts/copy-python-runner.mjs [outDir]   (default: dist)
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const outDir = path.resolve(root, process.argv[2] ?? 'dist');
const from = path.join(root, 'src', 'runners', 'python');
const to = path.join(outDir, 'runners', 'python');
rmSync(to, { recursive: true, force: true });
mkdirSync(to, { recursive: true });
cpSync(from, to, { recursive: true, filter: (source) => !source.includes('__pycache__') && (source === from || source.endsWith('.py')) });

// The contract's schema, from its one source (src/contract/execute-contract-json.ts, compiled).
const { EXECUTE_CONTRACT_JSON, executeContractJson } = await import(pathToFileURL(path.join(outDir, 'contract', 'execute-contract-json.js')).href);
writeFileSync(path.join(to, EXECUTE_CONTRACT_JSON), executeContractJson());
console.log(`copied ${path.relative(root, from)} -> ${path.relative(root, to)} (with ${EXECUTE_CONTRACT_JSON})`);
