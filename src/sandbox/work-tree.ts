/**
 * A sandbox's writable tree: the only place its runner may write. It holds
 * `tmp/` and `output/`, under which each turn gets `tmp/<sid>/` and
 * `output/<sid>/` (write-surface.ts); the core walks it after every turn, its
 * root included. A driver that cannot make some other place of its sandbox
 * read-only names it here (`sideDirs`), and the walk checks it too.
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
  /**
   * Writable directories of the sandbox outside the tree that must hold only
   * what the driver put there (the python runner's socket directory, which a
   * script without a permission model can write to). @defaultValue none
   */
  readonly sideDirs?: readonly SideDir[];
}

/** A writable directory outside the tree: anything in it but `keep` is a stray write of the turn that finds it. */
export interface SideDir {
  readonly hostDir: string;
  /** The directory as the runner names it (`/run/uhlp`): how a stray in it is reported. */
  readonly sandboxDir: string;
  /** The names the driver or the runner made there (`runner.sock`). */
  readonly keep: readonly string[];
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
