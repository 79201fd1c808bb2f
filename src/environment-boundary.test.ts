/**
 * Only src/config.ts reads the environment (the style guide's third rule): it
 * validates each variable once, names the bad one, freezes what it read, and
 * the rest of the core and the CLI take the values it gives. Checked on the
 * source, like the import boundary.
 *
 * Excepted, each for its reason:
 * - tests (`*.test.ts`): they read the test environment (a Redis URL, a fuzz
 *   seed) and hand it to the processes they start, as a user's shell would;
 * - the runners' two touches of their own process environment (below): a
 *   runner is a program of its own in a sandbox, configured by its command
 *   line and the sandbox's environment, and it may not import config.ts (the
 *   import boundary); neither reads a setting from the environment.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.dirname(fileURLToPath(import.meta.url));

/** Files that touch process.env other than config.ts, with the reason. */
const EXCEPTED: Readonly<Record<string, string>> = {
  // The csjs runner's entry point tells isolated-vm's addon loader its libc before the addon loads (it cannot read /etc in the sandbox).
  'runners/csjs/main.ts': 'sets LIBC for the addon loader of its own process',
  // A script's temporary files go to its turn's directory: the runner points its own process's TMPDIR there for each execution.
  'runners/jit/jit-executor.ts': "sets the runner process's TMPDIR to the turn's directory",
  // The stdio MCP server runs inside the mcp-host's own process (a sandbox cannot fork): its declared variables are set there.
  'runners/mcp-host/main.ts': "sets the hosted server's declared variables in its own process",
};

/** `process.env`, `process['env']`, or `env` taken out of `process` by destructuring. */
const READS_ENV = /\bprocess\s*(?:\?\.|\.)\s*env\b|\bprocess\s*\[\s*['"`]env['"`]\s*\]|\{[^{}]*\benv\b[^{}]*\}\s*=\s*(?:globalThis\s*\.\s*)?process\b/;

function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => path.relative(SRC, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'));
}

/** Lines that read the environment, comments left out (they may name process.env). */
export function environmentReads(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  return code.split('\n').filter((line) => READS_ENV.test(line)).map((line) => line.trim());
}

describe('the environment boundary', () => {
  it.each([
    ['process.env.UHLP_PORT', true],
    ["process['env']", true],
    ['process?.env', true],
    ['const { env } = process;', true],
    ['const { env: e, argv } = globalThis.process;', true],
    ['const env = loadConfig().hostEnv;', false],
    ['// process.env is read by config.ts only', false],
    ['/** reads process.env once */ const x = 1;', false],
    ['options.env ?? {}', false],
  ] as const)('sees %s as a read: %s', (line, reads) => {
    expect(environmentReads(line).length > 0).toBe(reads);
  });

  it('is read by src/config.ts only, but for the runners\' stated exceptions', () => {
    const readers = sourceFiles().filter((file) => file !== 'config.ts' && environmentReads(readFileSync(path.join(SRC, file), 'utf8')).length > 0);
    expect(readers.filter((file) => !(file in EXCEPTED))).toEqual([]);
    // An exception no longer needed is dropped from the list, so that the list stays the truth.
    expect(Object.keys(EXCEPTED).filter((file) => !readers.includes(file))).toEqual([]);
  });

  it('finds config.ts reading it, so that the check looks where reads are', () => {
    expect(environmentReads(readFileSync(path.join(SRC, 'config.ts'), 'utf8')).length).toBeGreaterThan(0);
  });
});
