/**
 * One (inputs, output) sample of an LLM component: the inputs are the parts of
 * the template variables its templates read, the output the answer that passed
 * the output schema. The llm-orchestrator names the paths it read
 * (`metrics.template_inputs`, template-inputs.ts); the core checks them and
 * takes the values from its own copy of the variables, built from the request
 * it sent (template-variables.ts): a sandbox can name what was read, never
 * make up what it was. Inputs and outputs are compared as canonical JSON.
 */
import { createHash } from 'node:crypto';
import type { ExecuteRequest } from '../contract/execute-contract.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { MAX_INPUT_PATH_DEPTH, MAX_INPUT_PATHS, MAX_INPUT_SEGMENT_CHARS } from '../contract/template-inputs.js';
import { templateVariables } from '../contract/template-variables.js';

/** Largest canonical inputs, and output, a sample keeps; larger answers are not sampled. */
export const MAX_SAMPLE_INPUT_CHARS = 16 * 1024;
export const MAX_SAMPLE_OUTPUT_CHARS = 16 * 1024;

/** The variable names a path may start with (template-variables.ts). */
const VARIABLE_NAMES: ReadonlySet<string> = new Set(['params', 'query', 'headers', 'body', 'request', 'config', 'session', 'app', 'component']);

export interface OracleSample {
  readonly inputs: Record<string, unknown>;
  readonly output: unknown;
  /** Hex sha256 of the canonical inputs, and of the canonical output. */
  readonly inputHash: string;
  readonly outputHash: string;
  /** LLM tokens the answer took; 0 when it came from the answer cache. */
  readonly tokens: number;
  readonly at: string;
}

/** The paths an answer's `metrics.template_inputs` names, checked; a problem when they break the bounds. */
export function readInputPaths(raw: unknown): string[][] | { problem: string } {
  if (!Array.isArray(raw)) return { problem: 'template_inputs is not a list' };
  if (raw.length > MAX_INPUT_PATHS) return { problem: `template_inputs names more than ${MAX_INPUT_PATHS} paths` };
  const paths: string[][] = [];
  for (const path of raw) {
    if (!Array.isArray(path) || path.length === 0 || path.length > MAX_INPUT_PATH_DEPTH) return { problem: `a path has 1-${MAX_INPUT_PATH_DEPTH} segments` };
    if (!path.every((segment) => typeof segment === 'string' && segment.length <= MAX_INPUT_SEGMENT_CHARS)) {
      return { problem: `a path segment is a string of at most ${MAX_INPUT_SEGMENT_CHARS} characters` };
    }
    // A name that is no variable (a nunjucks global, a macro) was read but is no input.
    if (VARIABLE_NAMES.has(path[0] as string)) paths.push(path as string[]);
  }
  return paths;
}

/** The template variables of an /execute request, as the orchestrator built them. */
export function requestVariables(request: ExecuteRequest): Readonly<Record<string, unknown>> {
  return templateVariables(request);
}

/** The parts of `variables` at `paths`, in a tree of the same shape; absent values are left out. */
export function projectInputs(variables: Readonly<Record<string, unknown>>, paths: readonly (readonly string[])[]): Record<string, unknown> {
  const inputs: Record<string, unknown> = {};
  for (const path of paths) {
    let value: unknown = variables;
    for (const segment of path) {
      value = typeof value === 'object' && value !== null && Object.hasOwn(value, segment) ? (value as Record<string, unknown>)[segment] : undefined;
      if (value === undefined) break;
    }
    if (value === undefined) continue;
    let into = inputs;
    for (const segment of path.slice(0, -1)) {
      const next = into[segment];
      if (typeof next !== 'object' || next === null || Array.isArray(next)) into[segment] = {};
      into = into[segment] as Record<string, unknown>;
    }
    into[path[path.length - 1]!] = value;
  }
  return inputs;
}

export function hexHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A sample, or why it is not kept (inputs or output over their limit). */
export function makeSample(inputs: Record<string, unknown>, output: unknown, tokens: number, now: Date): OracleSample | { problem: 'too-large' } {
  const inputsJson = canonicalJson(inputs);
  const outputJson = canonicalJson(output ?? null);
  if (inputsJson.length > MAX_SAMPLE_INPUT_CHARS || outputJson.length > MAX_SAMPLE_OUTPUT_CHARS) return { problem: 'too-large' };
  return { inputs, output: output ?? null, inputHash: hexHash(inputsJson), outputHash: hexHash(outputJson), tokens, at: now.toISOString() };
}

/** A kept sample from its JSON text; undefined when the text is not one. */
export function parseSample(json: string): OracleSample | undefined {
  try {
    const value = JSON.parse(json) as OracleSample;
    if (typeof value !== 'object' || value === null || typeof value.inputs !== 'object' || typeof value.inputHash !== 'string' || typeof value.outputHash !== 'string') {
      return undefined;
    }
    return value;
  } catch {
    return undefined;
  }
}

/** Whether two outputs are the same answer: their canonical JSON is equal. */
export function sameOutput(a: unknown, b: unknown): boolean {
  try {
    return canonicalJson(a ?? null) === canonicalJson(b ?? null);
  } catch {
    return false;
  }
}
