/**
 * The Node every image carries: the version pinned in `scripts/node-pin.json`, taken
 * from the npm registry and checked against its digest (`scripts/pinned-node.mjs`, the
 * same code the set-up scripts run before the project is installed), never the build
 * machine's own Node, which may be any 24.x or older.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT } from './runner-files.js';

interface PinnedNodeModule {
  ensurePinnedNode(): string;
}

/** The pinned Node binary, fetched once into the user's cache. */
export async function pinnedNodeBinary(): Promise<string> {
  const script = pathToFileURL(join(PACKAGE_ROOT, 'scripts', 'pinned-node.mjs')).href;
  const { ensurePinnedNode } = (await import(script)) as PinnedNodeModule;
  return join(ensurePinnedNode(), 'bin', 'node');
}
