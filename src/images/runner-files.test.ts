import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { seccompFilter } from '../sandbox/seccomp-filter.js';
import { PYTHON_SECCOMP_FILE, runnerAppFiles } from './runner-files.js';

describe("the python runner's files", () => {
  it("carry the sandboxes' seccomp program for this machine, byte for byte, beside the runner's directory", async () => {
    // A package root as the build leaves it: the runner's directory under dist/.
    const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-runner-files-'));
    mkdirSync(path.join(root, 'dist/runners/python'), { recursive: true });
    writeFileSync(path.join(root, 'dist/runners/python/main.py'), 'pass\n');
    const files = await runnerAppFiles('python', root);
    expect(files.map((file) => file.name)).toEqual(['dist/runners/python/main.py', PYTHON_SECCOMP_FILE]);
    const program = files.find((file) => file.name === PYTHON_SECCOMP_FILE)!.content;
    expect(program.equals(seccompFilter(process.arch))).toBe(true);
  });
});
