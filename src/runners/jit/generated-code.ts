/**
 * How the jit-runner calls code generated from an LLM component (the
 * optimization oracle's, docs/oracle.md). Such a component is JIT with its llm
 * block kept as a fallback, and the core sends that block in
 * `taskDetails.llm`; its code is called as
 * `export default async function (event, ctx)` where:
 *
 * - `event` is the template variables the LLM component's templates saw
 *   (template-variables.ts: params, query, headers, body, request, config,
 *   session, app, component), so the code maps the same inputs;
 * - `ctx.fallback(reason?)` declines the input: it throws, the runner answers
 *   `error` with code UHLP_ORACLE_DECLINED, and the core asks the LLM instead.
 *
 * A candidate under verification is not committed yet: the core sends its
 * source and one held-back sample's inputs in `taskDetails.oracle`
 * (`{source, inputs}`). The module is imported from a `data:` URL, once per
 * source (by its hash), and called with the sample's inputs as `event`.
 */
import { createHash } from 'node:crypto';
import type { ExecuteRequest } from '../../contract/execute-contract.js';
import { DECLINED_CODE } from '../../contract/generated-code.js';
import { templateVariables } from '../../contract/template-variables.js';
import { UhlpError } from '../../shared/errors.js';
import { FunctionNotFoundError, ScriptLoadFailedError } from '../../shared/runner-errors.js';
import type { ComponentFunction } from './script-loader.js';

/** Longest candidate source a runner imports. */
export const MAX_CANDIDATE_SOURCE_CHARS = 256 * 1024;
/** Candidate modules kept per runner: Node keeps every imported module, so a runner that saw many is recycled instead. */
const MAX_CANDIDATES = 64;

/** `ctx.fallback(reason?)`: declines the input. */
export function declineInput(reason?: unknown): never {
  const message = typeof reason === 'string' && reason !== '' ? reason.slice(0, 500) : 'the generated code declined the input';
  throw new UhlpError(DECLINED_CODE, message);
}

/** What `taskDetails.oracle` asks for, or why it cannot be run. */
export type CandidateTask = { source: string; inputs: Record<string, unknown> } | { problem: string };

/** Reads `taskDetails.oracle`; undefined when the request has none. */
export function readCandidateTask(raw: unknown): CandidateTask | undefined {
  if (raw === undefined) return undefined;
  const task = raw as { source?: unknown; inputs?: unknown };
  if (typeof raw !== 'object' || raw === null) return { problem: 'taskDetails.oracle must be an object' };
  if (typeof task.source !== 'string' || task.source === '' || task.source.length > MAX_CANDIDATE_SOURCE_CHARS) {
    return { problem: `taskDetails.oracle.source must be an ES module of 1-${MAX_CANDIDATE_SOURCE_CHARS} characters` };
  }
  if (typeof task.inputs !== 'object' || task.inputs === null || Array.isArray(task.inputs)) return { problem: 'taskDetails.oracle.inputs must be an object' };
  return { source: task.source, inputs: task.inputs as Record<string, unknown> };
}

/** The event generated code gets for a live request: the template variables of its llm block. */
export function generatedCodeEvent(request: ExecuteRequest): unknown {
  return templateVariables(request);
}

/** Candidate modules imported from their source. */
export class CandidateModules {
  private readonly functions = new Map<string, ComponentFunction>();

  async load(source: string): Promise<ComponentFunction> {
    const key = createHash('sha256').update(source).digest('hex');
    const cached = this.functions.get(key);
    if (cached) return cached;
    if (this.functions.size >= MAX_CANDIDATES) {
      throw new ScriptLoadFailedError(`this runner has imported ${MAX_CANDIDATES} candidates; it must be recycled`);
    }
    let module: Record<string, unknown>;
    try {
      module = (await import(`data:text/javascript;base64,${Buffer.from(source, 'utf8').toString('base64')}`)) as Record<string, unknown>;
    } catch (error) {
      throw new ScriptLoadFailedError(`the candidate could not be loaded: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (typeof module.default !== 'function') throw new FunctionNotFoundError('the candidate has no default export function');
    this.functions.set(key, module.default as ComponentFunction);
    return module.default as ComponentFunction;
  }
}
