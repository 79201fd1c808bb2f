/**
 * The console's built front-end (console/, built by `npm run build` into
 * dist/console-assets/): read once at start and served from memory. Files
 * under assets/ have a content hash in their names and are cached for good;
 * the two pages are never cached, so a new build is seen at once.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ConsoleAsset {
  readonly body: Buffer;
  readonly contentType: string;
  /** Named by its content hash: cacheable for good. */
  readonly immutable: boolean;
}

export interface ConsoleAssets {
  /** Files by path relative to the build directory (`index.html`, `assets/main-1a2b.js`). */
  readonly files: ReadonlyMap<string, ConsoleAsset>;
  /** The files the sandbox page loads (it and what it references), for the views' origin. */
  readonly sandboxFiles: ReadonlySet<string>;
}

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
};

/** Where the build puts the front-end, beside the core's compiled modules (or, running from src/, in dist/). */
export function defaultAssetsDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const besideCore = path.resolve(here, '..', 'console-assets');
  return existsSync(besideCore) ? besideCore : path.resolve(here, '..', '..', 'dist', 'console-assets');
}

/** The built files, or undefined when there is no build (the console then answers UHLP_CONSOLE_NOT_BUILT). */
export function loadConsoleAssets(dir: string = defaultAssetsDir()): ConsoleAssets | undefined {
  if (!existsSync(path.join(dir, 'index.html'))) return undefined;
  const files = new Map<string, ConsoleAsset>();
  const walk = (relative: string): void => {
    for (const name of readdirSync(path.join(dir, relative))) {
      const file = path.posix.join(relative, name);
      const full = path.join(dir, file);
      if (statSync(full).isDirectory()) walk(file);
      else {
        const type = TYPES[path.extname(name)];
        if (type !== undefined) files.set(file, { body: readFileSync(full), contentType: type, immutable: file.startsWith('assets/') });
      }
    }
  };
  walk('');
  const sandboxFiles = new Set<string>();
  const sandbox = files.get('sandbox.html');
  if (sandbox !== undefined) {
    sandboxFiles.add('sandbox.html');
    // The page's own scripts and styles: `./assets/<file>` as the build writes them.
    for (const match of sandbox.body.toString('utf8').matchAll(/(?:src|href)="\.\/(assets\/[A-Za-z0-9._-]+)"/g)) sandboxFiles.add(match[1]!);
  }
  return { files, sandboxFiles };
}
