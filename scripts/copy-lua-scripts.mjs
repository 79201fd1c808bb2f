#!/usr/bin/env node
// Copies the Redis Lua scripts next to the compiled store: tsc emits only .js, and
// src/state/lua-scripts.ts reads the .lua files relative to its own module URL.
// Usage: node scripts/copy-lua-scripts.mjs [outDir]   (default: dist)
import { cpSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const outDir = path.resolve(root, process.argv[2] ?? 'dist');
const from = path.join(root, 'src', 'state', 'lua');
const to = path.join(outDir, 'state', 'lua');
mkdirSync(to, { recursive: true });
cpSync(from, to, { recursive: true, filter: (source) => !source.endsWith('.md') });
console.log(`copied ${path.relative(root, from)} -> ${path.relative(root, to)}`);
