import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importClosure, importSpecifiers, packageName } from './import-closure.js';

describe('importSpecifiers', () => {
  it.each([
    ["import { a } from './a.js';", ['./a.js']],
    ["import x, { y as z } from \"pkg\";", ['pkg']],
    ["import './side-effect.js';", ['./side-effect.js']],
    ["export { b } from '../b.js';", ['../b.js']],
    ["export * from '@scope/p/sub';", ['@scope/p/sub']],
    ["const m = await import('./lazy.js');", ['./lazy.js']],
    ['const m = await import(scriptPath);', []],
    ["const s = 'import nothing from here';", []],
  ])('%s', (source, expected) => {
    expect(importSpecifiers(source)).toEqual(expected);
  });
});

describe('packageName', () => {
  it.each([
    ['@sinclair/typebox/compiler', '@sinclair/typebox'],
    ['undici', 'undici'],
    ['yaml/util', 'yaml'],
  ])('%s -> %s', (specifier, expected) => {
    expect(packageName(specifier)).toBe(expected);
  });
});

describe('importClosure', () => {
  it('follows relative imports across directories and collects bare packages, skipping builtins', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-closure-'));
    mkdirSync(path.join(root, 'dist', 'runner'), { recursive: true });
    mkdirSync(path.join(root, 'dist', 'contract'), { recursive: true });
    writeFileSync(path.join(root, 'dist', 'runner', 'main.js'), "import fs from 'node:fs';\nimport { s } from './server.js';\n");
    writeFileSync(path.join(root, 'dist', 'runner', 'server.js'), "import { c } from '../contract/c.js';\nimport { Type } from '@sinclair/typebox';\nimport http from 'http';\n");
    writeFileSync(path.join(root, 'dist', 'contract', 'c.js'), "import { TypeCompiler } from '@sinclair/typebox/compiler';\n");
    writeFileSync(path.join(root, 'dist', 'unrelated.js'), "import 'fastify';\n");
    expect(await importClosure(root, 'dist/runner/main.js')).toEqual({
      files: ['dist/contract/c.js', 'dist/runner/main.js', 'dist/runner/server.js'].map((f) => path.normalize(f)),
      packages: ['@sinclair/typebox'],
    });
  });
});
