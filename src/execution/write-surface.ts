/**
 * The agent write surface of a turn (FR-RT-012 to FR-RT-016): before the
 * sandbox is called, the turn's directories `tmp/<sid>/` and `output/<sid>/`
 * exist in the sandbox's writable tree (work-tree.ts), its only writable places;
 * after it answered, and before the sandbox serves anyone else, its tree is
 * walked (src/shared/work-tree-walk.ts: every file, path, sha256 and size, the
 * tree's root and side directories included) and what was written is compared
 * with what was declared. Any undeclared or missing write refuses the turn
 * (UHLP_WRITE_SURFACE_MISMATCH) and publishes nothing; otherwise the declared
 * outputs under `output/` are moved to `<dataDir>/output/<sid>/` for the session
 * to fetch, and the tree is emptied for the next turn.
 *
 * Where the core sees the tree on its host (process and Docker sandboxes) it
 * walks it itself (TurnWriteSurface). Where it does not (pods: `/work` is an
 * emptyDir of the pod's node) the runner walks it with the same module and
 * reports what it found in its answer (`writes`); the core compares that report
 * the same way (compareWrites), and a runner that sends none fails the turn
 * (reported-writes.ts).
 */
import { rename, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { compilePathGlob, isGlob } from '../shared/path-glob.js';
import { TurnWorkTree, type RealizedWrite } from '../shared/work-tree-walk.js';
import type { EvidenceRef } from '../ledger/ledger-entry.js';
import type { WorkTree } from '../sandbox/work-tree.js';

export type { RealizedWrite };

/** A write the turn declares: `output/<path>` or `tmp/<path>` (a glob for scratch, e.g. `tmp/**`), and what it is for. */
export interface DeclaredOutput {
  readonly path: string;
  readonly role: string;
}

export interface SurfaceCheck {
  readonly realized: readonly RealizedWrite[];
  /** Realized paths no declaration covers. */
  readonly undeclared: readonly string[];
  /** Declared paths (not globs) nothing was written to. */
  readonly missing: readonly string[];
}

/** The check of a turn that wrote nothing: most turns; shared, never written to. */
const NOTHING_WRITTEN: SurfaceCheck = Object.freeze({ realized: Object.freeze([]), undeclared: Object.freeze([]), missing: Object.freeze([]) }) as SurfaceCheck;

/** The turn's directories as the context names them, relative to the tree. */
export function workspaceDirs(sessionId: string): { tmpDir: string; outputDir: string } {
  return { tmpDir: `tmp/${sessionId}`, outputDir: `output/${sessionId}` };
}

export class TurnWriteSurface {
  private constructor(private readonly tree: TurnWorkTree) {}

  /** Makes the turn's directories in the tree (once per session) and counts the turn in. */
  static begin(tree: WorkTree, sessionId: string): TurnWriteSurface {
    return new TurnWriteSurface(TurnWorkTree.begin(tree, sessionId));
  }

  /**
   * Walks the tree and compares it with `declared`. Does not clean up: call
   * `publish` or `discard` after. Synchronous (no promise) when nothing was
   * written, which is most turns: listing is synchronous, only hashing is not.
   */
  check(declared: readonly DeclaredOutput[]): SurfaceCheck | Promise<SurfaceCheck> {
    const found = this.tree.walk();
    return found instanceof Promise ? found.then((files) => compareWrites(files, declared)) : compareWrites(found, declared);
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
        const target = path.join(outputsRoot, this.tree.sessionId, relative);
        await mkdir(path.dirname(target), { recursive: true });
        await rename(this.tree.outputFile(relative), target);
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
    return this.tree.discard();
  }
}

/**
 * Compares what a turn wrote (the core's walk, or a runner's report) with what
 * it declared: a write is covered when it is a regular file at a declared path
 * or under a declared glob; anything else is undeclared, and a declared path
 * (not a glob) nothing was written to is missing.
 */
export function compareWrites(found: readonly RealizedWrite[], declared: readonly DeclaredOutput[]): SurfaceCheck {
  if (found.length === 0 && declared.length === 0) return NOTHING_WRITTEN;
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
