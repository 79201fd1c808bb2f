/**
 * The walk of a sandbox's writable tree after a turn (FR-RT-012 to FR-RT-016),
 * one mechanism for both sides of the house: the core walks the trees it can
 * see on its host (process and Docker sandboxes: src/execution/write-surface.ts),
 * and a Node runner walks its own when the core cannot (pods, whose `/work` is an
 * emptyDir of their node: src/runners/kit/runner-server.ts). The python runner
 * walks by the same rules in Python (runner_server.py), with the constants of
 * this file from the generated contract JSON.
 *
 * Before the turn, its directories `tmp/<sid>/` and `output/<sid>/` exist in the
 * tree (once per tree and session). After it, everything in the tree is listed:
 * the root (anything beside `tmp/` and `output/` is a stray), the top
 * directories (the session's own directory is the turn's; any other entry is a
 * stray), and the tree's side directories (writable places outside it that must
 * hold only what the driver put there). Every file is hashed (path, sha256,
 * size). Emptying removes what was found, and keeps the session's empty
 * directories for its next turn.
 *
 * The walk never follows a link and never opens anything but a regular file
 * (O_NOFOLLOW, then fstat): the tree is written by untrusted code, and the
 * walker may run as root. Symbolic links, FIFOs and sockets are writes of their
 * own kind.
 *
 * Most turns write nothing. Their directories are made once per tree and
 * session and left in place while empty, so such a turn costs five `readdir`s
 * (six with a side directory) — or, once the tree has settled, five `lstat`s:
 * a walk that found only the session's empty directories records each listed
 * directory's stamp (inode, link count, change and modification times), taken
 * before it was listed. Adding, removing or renaming an entry moves its
 * directory's change time, which no one but the kernel sets (utimes moves it
 * too), so while every stamp is the same, every listing would be too. Change
 * times are kept in granules (the kernel's tick, milliseconds, on most
 * filesystems), so a stamp is trusted only when the directory last changed
 * SETTLED_MS before it was taken: a write in the same granule as the stamp would
 * not move it, a later one always does.
 *
 * Exact at concurrency 1 (the default). Above it, turns that share a tree share
 * its files: each turn checks its session's directories when no other turn of
 * the same session runs there, and files outside any session directory count
 * against the turn that finds them.
 */
import { createHash } from 'node:crypto';
import { chownSync, constants, lstatSync, mkdirSync, readdirSync, type Dirent } from 'node:fs';
import { lstat, open, rm } from 'node:fs/promises';
import path from 'node:path';

/** The two directories of every tree, each holding one directory per session. */
export const TREE_TOP_DIRS = ['tmp', 'output'] as const;
/** What one turn may leave in a tree at most; past it the walk reports `over-limit` (a script filling the disk). */
export const WALK_MAX_FILES = 1000;
export const WALK_MAX_BYTES = 256 * 1024 * 1024;
/** What a walk reports an entry as: a regular file, or what else was made there. */
export const WRITE_KINDS = ['file', 'symlink', 'fifo', 'socket', 'other', 'over-limit'] as const;
export type WriteKind = (typeof WRITE_KINDS)[number];

/** A file found in the tree after the turn, as `tmp/<path>`, `output/<path>`, or its place in the tree when it is outside the turn's directories. */
export interface RealizedWrite {
  readonly path: string;
  /** `sha256:<hex>`; absent for what is not a regular file. */
  readonly hash?: string;
  readonly size: number;
  /** `file`, or what else was made there (`symlink`, `fifo`, `socket`, `other`, `over-limit`). */
  readonly kind: WriteKind;
}

/** A writable directory outside the tree: anything in it but `keep` is a stray write of the turn that finds it. */
export interface SideDir {
  /** The directory where the walker sees it. */
  readonly hostDir: string;
  /** The directory as the runner names it (`/run/uhlp`): how a stray in it is reported. */
  readonly sandboxDir: string;
  /** The names the driver or the runner made there (`runner.sock`). */
  readonly keep: readonly string[];
}

/** A tree as the walker sees it. */
export interface WalkableTree {
  /** The tree's root where the walker sees it. */
  readonly hostDir: string;
  /** Who must own what the walker makes in it, when that is not the walker's own user (a container's user). */
  readonly owner?: { readonly uid: number; readonly gid: number };
  /** Writable directories outside the tree to walk with it. @defaultValue none */
  readonly sideDirs?: readonly SideDir[];
  /**
   * A directory at the tree's root the runner writes itself (a pod's
   * `.definitions`, the scripts it keeps): only the files it recorded there,
   * unchanged, may be in it. @defaultValue none
   */
  readonly runnerFiles?: RunnerFiles;
}

/**
 * The files a runner wrote into its tree itself, each with the stamp it had
 * then: device, inode, mode, size and change time. A turn cannot make a file
 * whose stamp matches one recorded (the change time is the kernel's, and any
 * write, chmod, rename or link of the file moves it), so anything else in the
 * directory, or a recorded file changed, is the turn's write.
 */
export class RunnerFiles {
  private readonly stamps = new Map<string, string>();

  /** @param name the directory's name at the tree's root */
  constructor(readonly name: string) {}

  /** Records a file the runner just wrote in the directory. */
  record(file: string): void {
    this.stamps.set(path.resolve(file), stampOf(lstatSync(file, { bigint: true })));
  }

  /** Whether `file` is one the runner recorded, unchanged since. */
  holds(file: string): boolean {
    const stamp = this.stamps.get(file);
    if (stamp === undefined) return false;
    try {
      return stampOf(lstatSync(file, { bigint: true })) === stamp;
    } catch {
      return false;
    }
  }
}

function stampOf(info: import('node:fs').BigIntStats): string {
  return `${info.dev}:${info.ino}:${info.mode}:${info.size}:${info.ctimeNs}`;
}

/**
 * How long a directory must have been unchanged before its stamp stands for its
 * listing: at least the coarsest timestamp granule of a filesystem a tree may
 * sit on (FAT's 2 s; ext4, xfs, btrfs and tmpfs keep the kernel's tick, 1 to 10 ms).
 */
export const SETTLED_MS = 2000;

/** A directory as a walk saw it: what any change of its entries moves. */
interface DirStamp {
  readonly dir: string;
  readonly ino: number;
  readonly nlink: number;
  readonly ctimeMs: number;
  readonly mtimeMs: number;
}

/** The tree of a clean walk: one session's empty directories, and the stamps that stand for its listings. */
interface Settled {
  readonly sessionId: string;
  readonly stamps: readonly DirStamp[];
}

/** Per tree: the session directories made, the turns in flight per session, and where its parts are. */
interface TreeState {
  readonly prepared: Set<string>;
  readonly active: Map<string, number>;
  /** Set by a walk that found nothing and skipped nothing, for the next turn of the same session. */
  settled: Settled | undefined;
  readonly root: string;
  readonly roots: ReadonlyArray<{ readonly top: (typeof TREE_TOP_DIRS)[number]; readonly dir: string }>;
  readonly sides: readonly SideDir[];
  readonly runnerFiles: RunnerFiles | undefined;
}

const trees = new WeakMap<WalkableTree, TreeState>();

function stateOf(tree: WalkableTree): TreeState {
  let state = trees.get(tree);
  if (state === undefined) {
    state = {
      prepared: new Set(),
      active: new Map(),
      settled: undefined,
      root: tree.hostDir,
      roots: TREE_TOP_DIRS.map((top) => ({ top, dir: path.join(tree.hostDir, top) })),
      sides: tree.sideDirs ?? [],
      runnerFiles: tree.runnerFiles,
    };
    trees.set(tree, state);
  }
  return state;
}

/** Whether an entry of the tree's root is one of its two top directories (a file or link in their place is a stray). */
function isTopDir(entry: Dirent): boolean {
  return entry.isDirectory() && (entry.name === 'tmp' || entry.name === 'output');
}

/** What a turn that wrote nothing found: most turns; shared, never written to. */
const NOTHING: readonly RealizedWrite[] = Object.freeze([]);

/** One turn's hold on a tree, from before the sandbox is called until its writes are walked and emptied. */
export class TurnWorkTree {
  private ended = false;
  /** Whether the tree may hold anything but the session's empty directories; unknown until walked. */
  private dirty = true;

  private constructor(
    private readonly tree: WalkableTree,
    readonly sessionId: string,
  ) {}

  /** Makes the turn's directories in the tree (once per tree and session) and counts the turn in. */
  static begin(tree: WalkableTree, sessionId: string): TurnWorkTree {
    const state = stateOf(tree);
    if (!state.prepared.has(sessionId)) {
      for (const top of TREE_TOP_DIRS) {
        const dir = path.join(tree.hostDir, top, sessionId);
        mkdirSync(dir, { recursive: true });
        if (tree.owner) chownSync(dir, tree.owner.uid, tree.owner.gid);
      }
      state.prepared.add(sessionId);
    }
    state.active.set(sessionId, (state.active.get(sessionId) ?? 0) + 1);
    return new TurnWorkTree(tree, sessionId);
  }

  /** Where a file of the session's `output/` directory is, for the walker. */
  outputFile(relative: string): string {
    return path.join(this.tree.hostDir, 'output', this.sessionId, relative);
  }

  /**
   * Lists and hashes what the tree holds. Does not clean up: call `discard`
   * after. Synchronous (no promise) when nothing was written, which is most
   * turns: listing is synchronous, only hashing is not.
   */
  walk(): readonly RealizedWrite[] | Promise<readonly RealizedWrite[]> {
    const state = stateOf(this.tree);
    // Turns of one session running at once in one tree see each other's files: the last one walks them.
    if ((state.active.get(this.sessionId) ?? 0) > 1) {
      this.dirty = false;
      return NOTHING;
    }
    // The tree as the last clean walk left it: nothing in it to list.
    const settled = state.settled;
    if (settled !== undefined && settled.sessionId === this.sessionId && unchanged(settled.stamps)) {
      this.dirty = false;
      return NOTHING;
    }
    state.settled = undefined;
    // Taken before the listings, so a write made while they run moves a stamp (a runner's own directory is not stamped).
    const stamps = state.runnerFiles === undefined ? stampsOf(state, this.sessionId) : undefined;
    const files: Entry[] = [];
    let entries = 0;
    let skipped = false;
    // Beside tmp/ and output/: written outside every turn's directories, and kept for the next session unless found.
    for (const entry of listEntriesSync(state.root)) {
      if (isTopDir(entry)) continue;
      if (isRunnerDir(state, entry)) entries += foreign(`${state.root}/${entry.name}`, entry.name, state.runnerFiles!, files);
      else entries += stray(`${state.root}/${entry.name}`, entry.name, entry, files);
    }
    for (const { top, dir } of state.roots) {
      for (const entry of listEntriesSync(dir)) {
        const name = entry.name;
        const own = name === this.sessionId && entry.isDirectory();
        // Another session's directory while one of its turns runs here: that turn walks it.
        if (!own && state.active.has(name) && entry.isDirectory()) {
          skipped = true;
          continue;
        }
        entries += own ? collect(`${dir}/${name}`, top, files) : stray(`${dir}/${name}`, `${top}/${name}`, entry, files);
      }
    }
    for (const side of state.sides) {
      for (const entry of listEntriesSync(side.hostDir)) {
        if (!side.keep.includes(entry.name)) entries += stray(`${side.hostDir}/${entry.name}`, `${side.sandboxDir}/${entry.name}`, entry, files);
      }
    }
    this.dirty = entries > 0;
    if (entries === 0 && !skipped && stamps !== undefined && settledBefore(stamps, Date.now() - SETTLED_MS)) {
      state.settled = { sessionId: this.sessionId, stamps };
    }
    if (files.length === 0) return NOTHING;
    return hashAll(files);
  }

  /**
   * Empties the turn's part of the tree (and whatever strays the walk found)
   * and counts the turn out; synchronous when there is nothing to remove.
   */
  discard(): void | Promise<void> {
    if (this.ended) return;
    this.ended = true;
    const state = stateOf(this.tree);
    const left = (state.active.get(this.sessionId) ?? 1) - 1;
    if (left > 0) {
      state.active.set(this.sessionId, left);
      return;
    }
    state.active.delete(this.sessionId);
    // Nothing but the session's own empty directories: nothing to remove.
    if (!this.dirty) return;
    return this.empty(state);
  }

  private async empty(state: TreeState): Promise<void> {
    for (const entry of listEntriesSync(state.root)) {
      if (isTopDir(entry)) continue;
      if (isRunnerDir(state, entry)) await removeForeign(path.join(state.root, entry.name), state.runnerFiles!);
      else await rm(path.join(state.root, entry.name), { recursive: true, force: true });
    }
    for (const side of state.sides) {
      for (const name of listSync(side.hostDir)) if (!side.keep.includes(name)) await rm(path.join(side.hostDir, name), { recursive: true, force: true });
    }
    for (const { dir: root } of state.roots) {
      // A top directory a turn removed or replaced: made again, as the tree was made (the session directories with it).
      if (!isDirectory(root)) {
        state.prepared.clear();
        await rm(root, { recursive: true, force: true });
        mkdirSync(root, { recursive: true, mode: 0o755 });
        if (this.tree.owner) chownSync(root, this.tree.owner.uid, this.tree.owner.gid);
        continue;
      }
      for (const name of listSync(root)) {
        if (state.active.has(name)) continue;
        const entry = path.join(root, name);
        if (name === this.sessionId && isDirectory(entry)) {
          // Kept for the session's next turn in this tree: emptied, not removed.
          for (const inner of listSync(entry)) await rm(path.join(entry, inner), { recursive: true, force: true });
        } else {
          await rm(entry, { recursive: true, force: true });
          state.prepared.delete(name);
        }
      }
    }
  }
}

/** Whether the next walk of `sessionId`'s turn in the tree may answer from its stamps (it still lists when one moved). */
export function isSettled(tree: WalkableTree, sessionId: string): boolean {
  return trees.get(tree)?.settled?.sessionId === sessionId;
}

/** The stamps of every directory a clean walk lists: the root, the top directories, the session's and the side directories. */
function stampsOf(state: TreeState, sessionId: string): DirStamp[] | undefined {
  const dirs = [state.root];
  for (const { dir } of state.roots) dirs.push(dir, `${dir}/${sessionId}`);
  for (const side of state.sides) dirs.push(side.hostDir);
  const stamps: DirStamp[] = [];
  for (const dir of dirs) {
    const info = lstatSync(dir, { throwIfNoEntry: false });
    if (info === undefined || !info.isDirectory()) return undefined;
    stamps.push({ dir, ino: info.ino, nlink: info.nlink, ctimeMs: info.ctimeMs, mtimeMs: info.mtimeMs });
  }
  return stamps;
}

/** Whether every directory still has its stamp: the same entries as when it was listed. */
function unchanged(stamps: readonly DirStamp[]): boolean {
  for (const stamp of stamps) {
    const info = lstatSync(stamp.dir, { throwIfNoEntry: false });
    if (info === undefined || info.ino !== stamp.ino || info.nlink !== stamp.nlink || info.ctimeMs !== stamp.ctimeMs || info.mtimeMs !== stamp.mtimeMs) return false;
  }
  return true;
}

/** Whether every directory last changed before `limit` (epoch ms): a stamp whose tick has passed. */
function settledBefore(stamps: readonly DirStamp[], limit: number): boolean {
  return stamps.every((stamp) => stamp.ctimeMs < limit && stamp.mtimeMs < limit);
}

function isRunnerDir(state: TreeState, entry: Dirent): boolean {
  return state.runnerFiles !== undefined && entry.name === state.runnerFiles.name && entry.isDirectory();
}

/**
 * Lists what is in the runner's own directory and is not a file it recorded,
 * unchanged; answers how many such entries, a directory holding none of the
 * runner's files included (a turn's empty directory is removed too).
 */
function foreign(dir: string, where: string, runner: RunnerFiles, entries: Entry[]): number {
  return foreignIn(dir, where, runner, entries).seen;
}

function foreignIn(dir: string, where: string, runner: RunnerFiles, entries: Entry[]): { seen: number; holds: boolean } {
  let seen = 0;
  let holds = false;
  for (const entry of listEntriesSync(dir)) {
    const full = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      const inner = foreignIn(full, `${where}/${entry.name}`, runner, entries);
      seen += inner.seen + (inner.holds ? 0 : 1);
      holds ||= inner.holds;
    } else if (runner.holds(full)) holds = true;
    else {
      entries.push({ file: full, where: `${where}/${entry.name}` });
      seen += 1;
    }
  }
  return { seen, holds };
}

/** Removes what is in the runner's own directory and is not a file it recorded; answers whether anything of the runner's is left under `dir`. */
async function removeForeign(dir: string, runner: RunnerFiles): Promise<boolean> {
  let holds = false;
  for (const entry of listEntriesSync(dir)) {
    const full = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (await removeForeign(full, runner)) holds = true;
      else await rm(full, { recursive: true, force: true });
    } else if (runner.holds(full)) holds = true;
    else await rm(full, { force: true });
  }
  return holds;
}

/** A directory's entries, or none when it is gone. */
function listSync(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** A directory's entries with their types (the same one `getdents` as the names, no `stat`), or none when it is gone. */
function listEntriesSync(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

function isDirectory(dir: string): boolean {
  try {
    return lstatSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Lists a write found outside the turn's own directories: a directory's files
 * (never through a link: the entry's own type decides), or the entry itself.
 * Answers how many entries it saw, so that even an empty directory is removed.
 */
function stray(full: string, where: string, entry: Dirent, entries: Entry[]): number {
  if (entry.isDirectory()) return collect(full, where, entries) + 1;
  entries.push({ file: full, where });
  return 1;
}

/** A file or other entry found by the walk, before it is hashed. */
interface Entry {
  readonly file: string;
  readonly where: string;
}

/** Hashes the files found, in the order found, within the turn's budget. */
async function hashAll(files: readonly Entry[]): Promise<RealizedWrite[]> {
  const found: RealizedWrite[] = [];
  const budget = { files: 0, bytes: 0 };
  for (const entry of files) await record(entry.file, entry.where, found, budget);
  return found;
}

/**
 * Lists what is under `dir` into `entries` without following links (metadata
 * only, so it runs synchronously), at most WALK_MAX_FILES entries; answers how
 * many directory entries it saw, empty directories included.
 */
function collect(dir: string, where: string, entries: Entry[]): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    // Not a directory: a file made where a session directory should be.
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') entries.push({ file: dir, where });
    return 0;
  }
  let seen = names.length;
  for (const name of names.sort()) {
    if (entries.length > WALK_MAX_FILES) return seen;
    const full = path.join(dir, name);
    const relative = `${where}/${name}`;
    let info;
    try {
      info = lstatSync(full);
    } catch {
      continue;
    }
    if (info.isDirectory()) seen += collect(full, relative, entries);
    else entries.push({ file: full, where: relative });
  }
  return seen;
}

async function record(file: string, where: string, found: RealizedWrite[], budget: { files: number; bytes: number }): Promise<void> {
  budget.files += 1;
  if (budget.files > WALK_MAX_FILES) {
    if (budget.files === WALK_MAX_FILES + 1) found.push({ path: where, size: 0, kind: 'over-limit' });
    return;
  }
  const info = await lstat(file).catch(() => undefined);
  if (info === undefined) return;
  if (!info.isFile()) {
    found.push({ path: where, size: 0, kind: info.isSymbolicLink() ? 'symlink' : info.isFIFO() ? 'fifo' : info.isSocket() ? 'socket' : 'other' });
    return;
  }
  budget.bytes += info.size;
  if (budget.bytes > WALK_MAX_BYTES) {
    found.push({ path: where, size: info.size, kind: 'over-limit' });
    return;
  }
  // O_NOFOLLOW: the sandbox may swap the file for a link between lstat and open; O_NONBLOCK: or for a FIFO.
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => undefined);
  if (handle === undefined) {
    found.push({ path: where, size: 0, kind: 'other' });
    return;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) {
      found.push({ path: where, size: 0, kind: 'other' });
      return;
    }
    const hash = createHash('sha256');
    let size = 0;
    // Bounded: a file growing while it is read is hashed up to the turn's byte budget.
    for await (const chunk of handle.createReadStream({ autoClose: false, end: WALK_MAX_BYTES })) {
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    found.push({ path: where, hash: `sha256:${hash.digest('hex')}`, size, kind: 'file' });
  } finally {
    await handle.close();
  }
}
