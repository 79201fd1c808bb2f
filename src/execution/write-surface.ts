/**
 * The agent write surface of a turn (FR-RT-012 to FR-RT-016): before the
 * sandbox is called, the turn's directories `tmp/<sid>/` and `output/<sid>/`
 * exist in the sandbox's writable tree (work-tree.ts), its only writable places;
 * after it answered, and before the sandbox serves anyone else, the core walks
 * the whole tree, hashes every file (path, sha256, size) and compares what was
 * written with what was declared. Any undeclared or missing write refuses the
 * turn (UHLP_WRITE_SURFACE_MISMATCH) and publishes nothing; otherwise the
 * declared outputs under `output/` are moved to `<dataDir>/output/<sid>/` for
 * the session to fetch, and the tree is emptied for the next turn.
 *
 * The walk never follows a link and never opens anything but a regular file
 * (O_NOFOLLOW, then fstat): the tree is written by untrusted code, and the core
 * may run as root. Symbolic links, FIFOs and sockets are writes of their own kind,
 * undeclared by definition.
 *
 * The tree's root is walked too: a file made beside `tmp/` and `output/` is a
 * write outside the turn's directories like any other, and would otherwise stay
 * for the sandbox's next session. So are the tree's side directories, places
 * outside it a driver could not make read-only (work-tree.ts).
 *
 * Most turns write nothing. Their directories are made once per sandbox and
 * session and left in place while empty, so such a turn costs five `readdir`s
 * (six with a side directory).
 *
 * Exact at pool concurrency 1 (the default). Above it, turns that share a
 * runner share its tree: each turn checks its session's directories when no
 * other turn of the same session runs there, and files outside any session
 * directory count against the turn that finds them.
 */
import { createHash } from 'node:crypto';
import { chownSync, constants, lstatSync, mkdirSync, readdirSync, type Dirent } from 'node:fs';
import { lstat, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { compilePathGlob, isGlob } from '../shared/path-glob.js';
import type { EvidenceRef } from '../ledger/ledger-entry.js';
import type { SideDir, WorkTree } from '../sandbox/work-tree.js';

/** A write the turn declares: `output/<path>` or `tmp/<path>` (a glob for scratch, e.g. `tmp/**`), and what it is for. */
export interface DeclaredOutput {
  readonly path: string;
  readonly role: string;
}

/** A file found in the tree after the turn, as `tmp/<path>`, `output/<path>`, or its place in the tree when it is outside the turn's directories. */
export interface RealizedWrite {
  readonly path: string;
  /** `sha256:<hex>`; absent for what is not a regular file. */
  readonly hash?: string;
  readonly size: number;
  /** `file`, or what else was made there (`symlink`, `fifo`, `socket`, `other`). */
  readonly kind: string;
}

export interface SurfaceCheck {
  readonly realized: readonly RealizedWrite[];
  /** Realized paths no declaration covers. */
  readonly undeclared: readonly string[];
  /** Declared paths (not globs) nothing was written to. */
  readonly missing: readonly string[];
}

/** What one turn may leave in a tree at most; past it the turn is refused (a script filling the disk). */
const MAX_FILES = 1000;
const MAX_BYTES = 256 * 1024 * 1024;
const TOP_DIRS = ['tmp', 'output'] as const;

/** Per tree: the session directories made, the turns in flight per session, the tree's root, its two top directories and its side directories on the host. */
interface TreeState {
  readonly prepared: Set<string>;
  readonly active: Map<string, number>;
  readonly root: string;
  readonly roots: ReadonlyArray<{ readonly top: (typeof TOP_DIRS)[number]; readonly dir: string }>;
  readonly sides: readonly SideDir[];
}

const trees = new WeakMap<WorkTree, TreeState>();

function stateOf(tree: WorkTree): TreeState {
  let state = trees.get(tree);
  if (state === undefined) {
    state = {
      prepared: new Set(),
      active: new Map(),
      root: tree.hostDir,
      roots: TOP_DIRS.map((top) => ({ top, dir: path.join(tree.hostDir, top) })),
      sides: tree.sideDirs ?? [],
    };
    trees.set(tree, state);
  }
  return state;
}

/** Whether an entry of the tree's root is one of its two top directories (a file or link in their place is a stray). */
function isTopDir(entry: Dirent): boolean {
  return entry.isDirectory() && (entry.name === 'tmp' || entry.name === 'output');
}

/** The check of a turn that wrote nothing: most turns; shared, never written to. */
const NOTHING_WRITTEN: SurfaceCheck = Object.freeze({ realized: Object.freeze([]), undeclared: Object.freeze([]), missing: Object.freeze([]) }) as SurfaceCheck;

/** The turn's directories as the context names them, relative to the tree. */
export function workspaceDirs(sessionId: string): { tmpDir: string; outputDir: string } {
  return { tmpDir: `tmp/${sessionId}`, outputDir: `output/${sessionId}` };
}

export class TurnWriteSurface {
  private ended = false;
  /** Whether the tree may hold anything but the session's empty directories; unknown until checked. */
  private dirty = true;

  private constructor(
    private readonly tree: WorkTree,
    private readonly sessionId: string,
  ) {}

  /** Makes the turn's directories in the tree (once per session) and counts the turn in. */
  static begin(tree: WorkTree, sessionId: string): TurnWriteSurface {
    const state = stateOf(tree);
    if (!state.prepared.has(sessionId)) {
      for (const top of TOP_DIRS) {
        const dir = path.join(tree.hostDir, top, sessionId);
        mkdirSync(dir, { recursive: true });
        if (tree.owner) chownSync(dir, tree.owner.uid, tree.owner.gid);
      }
      state.prepared.add(sessionId);
    }
    state.active.set(sessionId, (state.active.get(sessionId) ?? 0) + 1);
    return new TurnWriteSurface(tree, sessionId);
  }

  /**
   * Walks the tree and compares it with `declared`. Does not clean up: call
   * `publish` or `discard` after. Synchronous (no promise) when nothing was
   * written, which is most turns: listing is synchronous, only hashing is not.
   */
  check(declared: readonly DeclaredOutput[]): SurfaceCheck | Promise<SurfaceCheck> {
    const state = stateOf(this.tree);
    // Turns of one session running at once on one runner see each other's files: the last one checks them.
    if ((state.active.get(this.sessionId) ?? 0) > 1) {
      this.dirty = false;
      return NOTHING_WRITTEN;
    }
    const files: Entry[] = [];
    let entries = 0;
    // Beside tmp/ and output/: written outside every turn's directories, and kept for the next session unless found.
    for (const entry of listEntriesSync(state.root)) {
      if (!isTopDir(entry)) entries += stray(`${state.root}/${entry.name}`, entry.name, entry, files);
    }
    for (const { top, dir } of state.roots) {
      for (const entry of listEntriesSync(dir)) {
        const name = entry.name;
        const own = name === this.sessionId && entry.isDirectory();
        // Another session's directory while one of its turns runs here: that turn checks it.
        if (!own && state.active.has(name) && entry.isDirectory()) continue;
        entries += own ? collect(`${dir}/${name}`, top, files) : stray(`${dir}/${name}`, `${top}/${name}`, entry, files);
      }
    }
    for (const side of state.sides) {
      for (const entry of listEntriesSync(side.hostDir)) {
        if (!side.keep.includes(entry.name)) entries += stray(`${side.hostDir}/${entry.name}`, `${side.sandboxDir}/${entry.name}`, entry, files);
      }
    }
    this.dirty = entries > 0;
    if (files.length === 0) return declared.length === 0 ? NOTHING_WRITTEN : compare([], declared);
    return hashAll(files).then((found) => compare(found, declared));
  }

  /**
   * Moves the declared files under `output/` to `<outputsRoot>/<sid>/` (undefined:
   * nothing is kept), then empties the turn's part of the tree.
   */
  async publish(check: SurfaceCheck, outputsRoot: string | undefined): Promise<EvidenceRef[]> {
    const kept: EvidenceRef[] = [];
    if (outputsRoot !== undefined) {
      for (const write of check.realized) {
        if (write.kind !== 'file' || !write.path.startsWith('output/')) continue;
        const relative = write.path.slice('output/'.length);
        const target = path.join(outputsRoot, this.sessionId, relative);
        await mkdir(path.dirname(target), { recursive: true });
        await rename(path.join(this.tree.hostDir, 'output', this.sessionId, relative), target);
        kept.push({ path: write.path, ...(write.hash ? { hash: write.hash } : {}) });
      }
    }
    await this.discard();
    return kept;
  }

  /**
   * Empties the turn's part of the tree (and whatever strays the check found)
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
      if (!isTopDir(entry)) await rm(path.join(state.root, entry.name), { recursive: true, force: true });
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
          // Kept for the session's next turn on this sandbox: emptied, not removed.
          for (const inner of listSync(entry)) await rm(path.join(entry, inner), { recursive: true, force: true });
        } else {
          await rm(entry, { recursive: true, force: true });
          state.prepared.delete(name);
        }
      }
    }
  }
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

/**
 * Lists what is under `dir` without following links (metadata only, so it runs
 * synchronously: a turn that wrote nothing costs a few system calls), at most
 * MAX_FILES entries; then hashes the regular files.
 */
/** Hashes the files found, in the order found, within the turn's budget. */
async function hashAll(files: readonly Entry[]): Promise<RealizedWrite[]> {
  const found: RealizedWrite[] = [];
  const budget = { files: 0, bytes: 0 };
  for (const entry of files) await record(entry.file, entry.where, found, budget);
  return found;
}

/** Lists `dir` into `entries`; answers how many directory entries it saw, empty directories included. */
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
    if (entries.length > MAX_FILES) return seen;
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
  if (budget.files > MAX_FILES) {
    if (budget.files === MAX_FILES + 1) found.push({ path: where, size: 0, kind: 'over-limit' });
    return;
  }
  const info = await lstat(file).catch(() => undefined);
  if (info === undefined) return;
  if (!info.isFile()) {
    found.push({ path: where, size: 0, kind: info.isSymbolicLink() ? 'symlink' : info.isFIFO() ? 'fifo' : info.isSocket() ? 'socket' : 'other' });
    return;
  }
  budget.bytes += info.size;
  if (budget.bytes > MAX_BYTES) {
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
    for await (const chunk of handle.createReadStream({ autoClose: false, end: MAX_BYTES })) {
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    found.push({ path: where, hash: `sha256:${hash.digest('hex')}`, size, kind: 'file' });
  } finally {
    await handle.close();
  }
}

function compare(found: readonly RealizedWrite[], declared: readonly DeclaredOutput[]): SurfaceCheck {
  // Declared globs come from the app (and the request's header): matched in time linear in the path, never by backtracking.
  const exact = new Set(declared.filter((d) => !isGlob(d.path)).map((d) => d.path));
  const globs = declared.filter((d) => isGlob(d.path)).map((d) => compilePathGlob(d.path));
  const realizedFiles = new Set<string>();
  const undeclared: string[] = [];
  for (const write of found) {
    realizedFiles.add(write.path);
    const covered = write.kind === 'file' && (exact.has(write.path) || globs.some((matches) => matches(write.path)));
    if (!covered) undeclared.push(write.kind === 'file' ? write.path : `${write.path} (${write.kind})`);
  }
  const missing = [...exact].filter((p) => !realizedFiles.has(p));
  return { realized: found, undeclared, missing };
}

/** Whether a check lets the turn through. */
export function surfaceMatches(check: SurfaceCheck): boolean {
  return check.undeclared.length === 0 && check.missing.length === 0;
}
