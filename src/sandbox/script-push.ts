/**
 * Scripts the core sends along with an execution, for sandboxes that share no file
 * system with it (pods, whose pool is warmed by the operator: operator-warmed-pool.ts). Such a runner would
 * read a script it has not run yet through `core.state.getDefinitionFileContent`
 * before it can import it: one more round trip to the core on the first execution of
 * each script on each sandbox, which was most of a warm pod claim's first request
 * (p50 124 ms of 225 on a busy machine, from the core's `execution timing` debug log). The core sends the file
 * in the request instead (`definitionFiles`), once per sandbox and script.
 *
 * What is sent is what the execution's own token could read: the execution's app's
 * file at the execution's revision, nothing of another app or revision. A file the
 * core cannot send (too large, not UTF-8, missing) is not sent, and the runner reads
 * it through MCP as before.
 */
import { readFile } from 'node:fs/promises';
import { appRevisionFile } from '../apps/revision-paths.js';
import { decodeUtf8 } from '../shared/utf8-text.js';
import type { PooledSandbox } from './pool-strategy.js';

/** Larger scripts go through MCP: the request would carry them for nothing when the runner has them. */
const MAX_PUSHED_BYTES = 256 * 1024;
/** Files of immutable revisions kept in memory; the oldest goes first. */
const MAX_CACHED_FILES = 256;

/** The script an execution runs, at its revision. */
export interface ScriptRef {
  readonly revision: string;
  /** Relative to the app directory. */
  readonly path: string;
}

export class ScriptPush {
  /** Contents by app, revision and path; `null` when the file cannot be sent. */
  private readonly files = new Map<string, string | null>();
  /** What each sandbox was sent (or read itself after a refusal): sent once per sandbox. */
  private readonly sent = new WeakMap<PooledSandbox, Set<string>>();

  /** @param definitionsRoot the core's materialized revisions (`<root>/<app>/<revision>/...`). */
  constructor(private readonly definitionsRoot: string) {}

  /**
   * The `"definitionFiles":[...]` member for the request, or undefined when the
   * sandbox has the script already or it cannot be sent. Counts it as sent.
   */
  async member(sandbox: PooledSandbox, appId: string, script: ScriptRef): Promise<string | undefined> {
    const key = `${appId}\0${script.revision}\0${script.path}`;
    let sent = this.sent.get(sandbox);
    if (sent?.has(key)) return undefined;
    const content = await this.read(key, appId, script);
    if (content === null) return undefined;
    if (sent === undefined) this.sent.set(sandbox, (sent = new Set()));
    sent.add(key);
    return `"definitionFiles":[${JSON.stringify({ path: script.path, content })}]`;
  }

  private async read(key: string, appId: string, script: ScriptRef): Promise<string | null> {
    const cached = this.files.get(key);
    if (cached !== undefined) return cached;
    const file = appRevisionFile(this.definitionsRoot, appId, script.revision, script.path);
    let content: string | null = null;
    const bytes = file === undefined ? undefined : await readFile(file).catch(() => undefined);
    if (bytes !== undefined && bytes.length <= MAX_PUSHED_BYTES) content = decodeUtf8(bytes) ?? null;
    if (this.files.size >= MAX_CACHED_FILES) this.files.delete(this.files.keys().next().value!);
    this.files.set(key, content);
    return content;
  }
}
