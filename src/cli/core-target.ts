/**
 * Where the client commands (`uhlp queues`, `runs`, `optimize`, `mcp token`)
 * find a running core: `--url`, else `UHLP_URL`, else the URL a live `uhlp dev`
 * or `uhlp start` recorded in the data directory (`--data-dir`, `UHLP_DATA_DIR`,
 * `./.uhlp`), else http://127.0.0.1:8080. The operator commands (`queues`,
 * `optimize`, `mcp token`) talk to the operator listener instead: `--url`, else
 * `UHLP_OPERATOR_URL`, else the recorded operator URL, else http://127.0.0.1:8081.
 * One home for that choice and for the sentence that says which was taken when
 * no core answers there.
 */
import type { ClientConfig } from '../config.js';
import { UhlpError } from '../shared/errors.js';
import { isProcessAlive, readRuntimeState, runtimeStatePath } from './runtime-state.js';

/** Where `uhlp dev` listens when given no flags. */
export const DEFAULT_CORE_URL = 'http://127.0.0.1:8080';
/** Where its operator listener is then (the core port + 1). */
export const DEFAULT_OPERATOR_URL = 'http://127.0.0.1:8081';

export interface CoreTarget {
  /** The core's base URL, without a trailing slash. */
  readonly url: string;
  /** How it was chosen, for messages: `--url`, `UHLP_URL`, the runtime file, or the default. */
  readonly from: string;
  /** Whether it is the operator listener. @defaultValue false */
  readonly operator?: boolean;
}

export function coreTarget(config: ClientConfig): CoreTarget {
  if (config.url !== undefined) return { url: config.url.value, from: config.url.name, operator: config.listener === 'operator' };
  const state = readRuntimeState(config.dataDir);
  const operator = config.listener === 'operator';
  const recorded = operator ? state?.operatorUrl : state?.url;
  if (state !== undefined && recorded !== undefined && isProcessAlive(state.core.pid)) {
    return { url: recorded.replace(/\/$/, ''), from: `${runtimeStatePath(config.dataDir)} (uhlp ${state.mode ?? 'start'}, pid ${state.core.pid})`, operator };
  }
  return { url: operator ? DEFAULT_OPERATOR_URL : DEFAULT_CORE_URL, from: `the default (no running core recorded in ${runtimeStatePath(config.dataDir)})`, operator };
}

/** `path` under the core's URL. */
export function coreUrl(target: CoreTarget, path: string): URL {
  return new URL(path, `${target.url}/`);
}

/**
 * Calls the core; a core that does not answer is an error that says which URL
 * was tried, why that one, and how to name another.
 */
export async function fetchCore(target: CoreTarget, path: string, init: RequestInit = {}): Promise<{ readonly response: Response; readonly body: unknown }> {
  let response: Response;
  try {
    response = await fetch(coreUrl(target, path), init);
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error);
    throw new Error(
      `no core answers at ${target.url} (${target.from}): ${cause}. Start one (uhlp dev <definitions-dir>), or name it with --url or ${target.operator === true ? 'UHLP_OPERATOR_URL' : 'UHLP_URL'}, or --data-dir of the core`,
    );
  }
  return { response, body: await response.json().catch(() => undefined) };
}

/** The error a core answered, as one line: its code and message when it sent them. */
export function coreRefusal(response: Response, body: unknown): UhlpError | Error {
  const fields = (typeof body === 'object' && body !== null ? body : {}) as { code?: unknown; message?: unknown };
  const message = typeof fields.message === 'string' ? fields.message : `HTTP ${response.status}`;
  return new Error(`${typeof fields.code === 'string' ? `${fields.code}: ` : ''}${message}`);
}
