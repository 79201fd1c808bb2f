/**
 * The app's files (templates, output schemas) as the orchestrator reads them:
 * through `core.state.getDefinitionFileContent`, never from a file system, at
 * the execution's revision. A revision never changes, so what was read at one
 * is kept, a file that does not exist included; failures that may pass (the
 * core unreachable) are not. Only the last few revisions are kept: a sandbox
 * outlives a deployment or two, not more.
 */
import path from 'node:path';
import { ToolCallError, type ToolsClient } from '../kit/tools-client.js';

export const READ_TOOL = 'core.state.getDefinitionFileContent';
/** Revisions whose files are kept at once (per app). */
const KEPT_REVISIONS = 4;

/** Why a file cannot be read, with the core's code when the core refused (UHLP_DEFINITION_FILE_NOT_FOUND, ...). */
export class DefinitionFileError extends Error {
  constructor(
    readonly file: string,
    message: string,
    /** The same read at the same revision fails again: a missing file, one that is not text, a refused path. */
    readonly permanent: boolean,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'DefinitionFileError';
  }
}

/** Refusals of the core that hold for as long as the revision does. */
const PERMANENT_CODES = new Set(['UHLP_DEFINITION_FILE_NOT_FOUND', 'UHLP_DEFINITION_PATH_REFUSED']);

/**
 * The normalized app-relative form of `name`, or why it is no app file: an
 * absolute path or one that leaves the app directory (the core refuses them
 * too; refusing here names the template at fault without a round trip).
 */
export function appRelativePath(name: string): { path: string } | { problem: string } {
  if (name === '' || name.includes('\0') || name.includes('\\')) return { problem: 'is not a path relative to the app directory' };
  if (name.startsWith('/')) return { problem: 'is absolute; paths are relative to the app directory' };
  const normalized = path.posix.normalize(name);
  if (normalized === '..' || normalized.startsWith('../') || normalized === '.') return { problem: 'leaves the app directory' };
  return { path: normalized };
}

type Entry = { text: string } | { error: DefinitionFileError };

export class DefinitionFiles {
  /** `<app>\0<revision>` -> path -> what reading it gave; insertion order is age. */
  private readonly revisions = new Map<string, Map<string, Promise<Entry>>>();

  /**
   * The UTF-8 text of the app file `file` at `revision`, read with `tools`
   * (the execution's token, which is bound to that revision); throws
   * DefinitionFileError.
   */
  async read(appId: string, revision: string, file: string, tools: ToolsClient): Promise<string> {
    const relative = appRelativePath(file);
    if ('problem' in relative) throw new DefinitionFileError(file, `"${file}" ${relative.problem}`, true, 'UHLP_DEFINITION_PATH_REFUSED');
    const files = this.filesOf(appId, revision);
    let entry = files.get(relative.path);
    if (entry === undefined) {
      entry = this.fetch(revision, relative.path, tools);
      files.set(relative.path, entry);
      // A failure that may pass is not kept: the next execution asks again.
      void entry.then((settled) => {
        if ('error' in settled && !settled.error.permanent && files.get(relative.path) === entry) files.delete(relative.path);
      });
    }
    const settled = await entry;
    if ('error' in settled) throw settled.error;
    return settled.text;
  }

  private filesOf(appId: string, revision: string): Map<string, Promise<Entry>> {
    const key = `${appId}\0${revision}`;
    let files = this.revisions.get(key);
    if (files === undefined) {
      files = new Map();
      this.revisions.set(key, files);
      for (const old of this.revisions.keys()) {
        if (this.revisions.size <= KEPT_REVISIONS) break;
        this.revisions.delete(old);
      }
    }
    return files;
  }

  private async fetch(revision: string, file: string, tools: ToolsClient): Promise<Entry> {
    let content: Record<string, unknown>;
    try {
      content = await tools.call(READ_TOOL, { path: file });
    } catch (error) {
      if (error instanceof ToolCallError) return { error: new DefinitionFileError(file, `${error.message} (${error.code})`, PERMANENT_CODES.has(error.code), error.code) };
      return { error: new DefinitionFileError(file, error instanceof Error ? error.message : String(error), false) };
    }
    if (content['revision'] !== undefined && content['revision'] !== revision) {
      // The token reads another revision than the task names: nothing read can be trusted to be this one.
      return { error: new DefinitionFileError(file, `"${file}" was read at revision ${String(content['revision']).slice(0, 12)}, not ${revision.slice(0, 12)}`, false) };
    }
    if (content['encoding'] !== 'utf8' || typeof content['content'] !== 'string') {
      return { error: new DefinitionFileError(file, `"${file}" is not UTF-8 text`, true) };
    }
    return { text: content['content'] };
  }
}
