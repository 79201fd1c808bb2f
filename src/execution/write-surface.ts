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
 * Most turns write nothing. Their directories are made once per sandbox and
 * session and left in place while empty, so such a turn costs four `readdir`s.
 *
 * Exact at pool concurrency 1 (the default). Above it, turns that share a
 * runner share its tree: each turn checks its session's directories when no
 * other turn of the same session runs there, and files outside any session
 * directory count against the turn that finds them.
 */
import { createHash } from 'node:crypto';
import { chownSync, constants, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { lstat, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import type { EvidenceRef } from '../ledger/ledger-entry.js';
import type { WorkTree } from '../sandbox/work-tree.js';

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

/** Per tree: the session directories made, the turns in flight per session, and the two roots on the host. */
interface TreeState {
  readonly prepared: Set<string>;
  readonly active: Map<string, number>;
  readonly roots: ReadonlyArray<{ readonly top: (typeof TOP_DIRS)[number]; readonly dir: string }>;
}

const trees = new WeakMap<WorkTree, TreeState>();

function stateOf(tree: WorkTree): TreeState {
  let state = trees.get(tree);
  if (state === undefined) {
    state = { prepared: new Set(), active: new Map(), roots: TOP_DIRS.map((top) => ({ top, dir: path.join(tree.hostDir, top) })) };
    trees.set(tree, state);
  }
  return state;
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
    for (const { top, dir } of state.roots) {
      for (const name of listSync(dir)) {
        const own = name === this.sessionId;
        // Another session's directory while one of its turns runs here: that turn checks it.
        if (!own && state.active.has(name)) continue;
        entries += collect(`${dir}/${name}`, own ? top : `${top}/${name}`, files) + (own ? 0 : 1);
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
    for (const { dir: root } of state.roots) {
      for (const name of listSync(root)) {
        if (state.active.has(name)) continue;
        const entry = path.join(root, name);
        if (name === this.sessionId) {
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
  const exact = new Set(declared.filter((d) => !picomatch.scan(d.path).isGlob).map((d) => d.path));
  const globs = declared.filter((d) => picomatch.scan(d.path).isGlob).map((d) => picomatch(d.path, { dot: true }));
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
