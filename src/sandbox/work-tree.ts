/**
 * A sandbox's writable tree: the only place its runner may write. It holds
 * `tmp/` and `output/`, under which each turn gets `tmp/<sid>/` and
 * `output/<sid>/` (write-surface.ts); the core walks it after every turn.
 */
import { chownSync, mkdirSync } from 'node:fs';
import path from 'node:path';

export interface WorkTree {
  /** The tree on the host: what the core creates, walks and cleans. */
  readonly hostDir: string;
  /** The same tree as the runner names it (`/work` in a container or bubblewrap). */
  readonly sandboxDir: string;
  /** Who must own what the core makes in it, when that is not the core's own user (a container's user). */
  readonly owner?: { readonly uid: number; readonly gid: number };
}

/** The two directories of every tree. */
export const WORK_TREE_DIRS = ['tmp', 'output'] as const;

/**
 * Creates `<root>/<id>/` with its two directories, owned by `owner` when given
 * (a container's non-root user must write where the core, as root, created).
 */
export function createWorkTree(root: string, id: string, owner?: { uid: number; gid: number }): { hostDir: string } {
  const hostDir = path.join(root, id);
  mkdirSync(hostDir, { recursive: true, mode: 0o755 });
  for (const dir of [hostDir, ...WORK_TREE_DIRS.map((name) => path.join(hostDir, name))]) {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    if (owner) chownSync(dir, owner.uid, owner.gid);
  }
  return { hostDir };
}
