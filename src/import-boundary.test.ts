/**
 * The two sides of the house, checked on the source: code shipped into sandbox
 * images (src/runners/) and the core's code never import each other; what both
 * need is in src/contract/ (wire types and models) or src/shared/ (mechanisms
 * with no domain), which import neither side. Type-only imports count: a type
 * that crosses is a shape the other side would have to keep in step with.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.dirname(fileURLToPath(import.meta.url));

type Side = 'runners' | 'contract' | 'shared' | 'cli' | 'core';

/** What each side may import, besides itself. */
const MAY_IMPORT: Readonly<Record<Side, readonly Side[]>> = {
  runners: ['contract', 'shared'],
  contract: ['shared'],
  shared: [],
  core: ['contract', 'shared'],
  // The `uhlp` command composes the core; `uhlp fn run` also runs the csjs runner's isolate engine on this machine.
  cli: ['core', 'contract', 'shared'],
};

/** The one crossing the CLI makes on purpose: `uhlp fn run` uses the engine the csjs runner uses, not a copy of it. */
const CLI_INTO_RUNNERS = /^cli\/fn-run\.ts$/;

function sideOf(relative: string): Side {
  const top = relative.split('/')[0]!;
  return top === 'runners' || top === 'contract' || top === 'shared' || top === 'cli' ? top : 'core';
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => path.relative(SRC, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'));
}

const IMPORT = /(?:^|[\s;}])(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** Every crossing the rules forbid, as `from -> to`. */
export function crossings(files: readonly string[], read: (file: string) => string): string[] {
  const found: string[] = [];
  for (const file of files) {
    const from = sideOf(file);
    for (const match of read(file).matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2]!;
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
      const to = sideOf(target);
      if (to === from || MAY_IMPORT[from].includes(to)) continue;
      if (from === 'cli' && to === 'runners' && CLI_INTO_RUNNERS.test(file)) continue;
      found.push(`${file} -> ${target}`);
    }
  }
  return found;
}

describe('the import boundary between the core and the runners', () => {
  const files = sourceFiles(SRC);

  it('finds sources on every side', () => {
    for (const side of ['runners', 'contract', 'shared', 'cli', 'core'] as const) expect(files.some((file) => sideOf(file) === side)).toBe(true);
  });

  it('is crossed nowhere: runners import only runners, contract and shared; the core never imports runners', () => {
    expect(crossings(files, (file) => readFileSync(path.join(SRC, file), 'utf8'))).toEqual([]);
  });

  it('catches a crossing in either direction, type-only imports included', () => {
    const sources: Record<string, string> = {
      'runners/jit/a.ts': "import { x } from '../../turns/turn-pipeline.js';",
      'turns/b.ts': "import type { Y } from '../runners/kit/executor.js';",
      'contract/c.ts': "export { z } from '../sandbox/warm-pool.js';",
      'shared/d.ts': "const m = await import('../contract/execute-contract.js');",
      'runners/csjs/e.ts': "import { f } from '../../contract/cs-bundle/function-manifest.js';\nimport { g } from '../../shared/errors.js';",
    };
    expect(crossings(Object.keys(sources), (file) => sources[file]!)).toEqual([
      'runners/jit/a.ts -> turns/turn-pipeline.js',
      'turns/b.ts -> runners/kit/executor.js',
      'contract/c.ts -> sandbox/warm-pool.js',
      'shared/d.ts -> contract/execute-contract.js',
    ]);
  });
});
