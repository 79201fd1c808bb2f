/**
 * A sandbox's writable tree: the only place its runner may write. It holds
 * `tmp/` and `output/`, under which each turn gets `tmp/<sid>/` and
 * `output/<sid>/` (write-surface.ts); the core walks it after every turn, its
 * root included (src/shared/work-tree-walk.ts). A driver that cannot make some other place of its sandbox
 * read-only names it here (`sideDirs`), and the walk checks it too.
 */
import { chownSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { TREE_TOP_DIRS, type SideDir, type WalkableTree } from '../shared/work-tree-walk.js';

export interface WorkTree extends WalkableTree {
  /** The tree on the host: what the core creates, walks and cleans. */
  readonly hostDir: string;
  /** The same tree as the runner names it (`/work` in a container or bubblewrap). */
  readonly sandboxDir: string;
  /**
   * Writable directories of the sandbox outside the tree that must hold only
   * what the driver put there (the python runner's socket directory, which a
   * script without a permission model can write to). @defaultValue none
   */
  readonly sideDirs?: readonly SideDir[];
}

export type { SideDir };

/** The two directories of every tree. */
export const WORK_TREE_DIRS = TREE_TOP_DIRS;

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
