/**
 * Finds and imports component scripts from an immutable definitions revision.
 * The root is the sandbox's own app's revisions (the only app it can see), and
 * a revision's files are at `<root>/<revision>/...`; because a revision
 * directory never changes, Node's module cache is exactly right: a script is
 * evaluated once per revision, and a new revision is a new URL.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ExecuteBadRequestError, FunctionNotFoundError, ScriptLoadFailedError, ScriptNotFoundError } from '../../shared/runner-errors.js';

const REVISION_PATTERN = /^[0-9a-f]{7,64}$/;

export type ComponentFunction = (event: unknown, ctx: unknown) => unknown;

export interface ScriptRef {
  revision: string;
  /** Path relative to the app directory. */
  script: string;
  /** Named export; `default` when omitted. */
  exportName?: string;
}

export class ScriptLoader {
  private readonly functions = new Map<string, ComponentFunction>();

  constructor(private readonly root: string) {}

  /** Resolves the script inside its app directory, refusing any path that leaves it. */
  resolve(ref: ScriptRef): string {
    if (!REVISION_PATTERN.test(ref.revision)) {
      throw new ExecuteBadRequestError(`revision "${ref.revision}" is not a commit id`);
    }
    const appDir = path.resolve(this.root, ref.revision);
    const file = path.resolve(appDir, ref.script);
    if (!file.startsWith(appDir + path.sep)) {
      throw new ExecuteBadRequestError(`script "${ref.script}" leaves the app directory`);
    }
    if (!/\.m?js$/.test(file)) {
      throw new ExecuteBadRequestError(`script "${ref.script}" is not a .js or .mjs ES module`);
    }
    return file;
  }

  /** Whether `load(ref)` answers from memory (the script was loaded before). */
  isLoaded(ref: ScriptRef): boolean {
    return this.functions.has(keyOf(ref));
  }

  /**
   * The script's function; a function already loaded for the same reference is
   * returned at once (its path was resolved and checked when it was loaded).
   */
  async load(ref: ScriptRef): Promise<ComponentFunction> {
    const exportName = ref.exportName ?? 'default';
    const key = keyOf(ref);
    const cached = this.functions.get(key);
    if (cached) return cached;
    const file = this.resolve(ref);

    // A stat on the event loop, not a trip to the thread pool: once per script, on its first load.
    if (!existsSync(file)) throw new ScriptNotFoundError(`script "${ref.script}" does not exist in revision ${ref.revision.slice(0, 12)}`);
    let module: Record<string, unknown>;
    try {
      module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new ScriptLoadFailedError(`script "${ref.script}" could not be loaded: ${reason}`);
    }
    const fn = module[exportName];
    if (typeof fn !== 'function') {
      throw new FunctionNotFoundError(`script "${ref.script}" has no exported function "${exportName}"`);
    }
    this.functions.set(key, fn as ComponentFunction);
    return fn as ComponentFunction;
  }
}

/** Length-prefixed parts: no two references share a key, whatever characters they hold. */
function keyOf(ref: ScriptRef): string {
  const exportName = ref.exportName ?? 'default';
  return `${ref.revision.length}:${ref.revision}${ref.script.length}:${ref.script}${exportName}`;
}
