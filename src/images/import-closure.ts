/**
 * The files an ES module entry loads, found by following its static imports:
 * what the jit-runner image must carry, and nothing more. Scripts the runner
 * imports at run time come from the definitions mount, not from here.
 */
import { builtinModules } from 'node:module';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

export interface ImportClosure {
  /** Local files, relative to the root, the entry included. */
  readonly files: string[];
  /** Packages imported by bare name (`@scope/name` or `name`). */
  readonly packages: string[];
}

const IMPORT_PATTERN = /(?:^|[;\s}])(?:import|export)\s*(?:[\w*{}\s,$]*?\sfrom\s*)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
const BUILTINS = new Set(builtinModules);

/** Specifiers a module's source imports with string literals. */
export function importSpecifiers(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(IMPORT_PATTERN)) {
    const specifier = match[1] ?? match[2];
    if (specifier) found.push(specifier);
  }
  return found;
}

/** The package a bare specifier names: `@a/b/c` -> `@a/b`, `x/y` -> `x`. */
export function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Follows the relative imports of `entry` (relative to `root`), collecting files and bare packages. */
export async function importClosure(root: string, entry: string): Promise<ImportClosure> {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [path.normalize(entry)];
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (files.has(file)) continue;
    files.add(file);
    const source = await readFile(path.join(root, file), 'utf8');
    for (const specifier of importSpecifiers(source)) {
      if (specifier.startsWith('node:') || BUILTINS.has(specifier)) continue;
      if (specifier.startsWith('.')) queue.push(path.normalize(path.join(path.dirname(file), specifier)));
      else packages.add(packageName(specifier));
    }
  }
  return { files: [...files].sort(), packages: [...packages].sort() };
}
