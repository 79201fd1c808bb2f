/**
 * Declared writes (FR-RT-013): what a turn says it will leave in its session
 * directories, from the component (`declaredOutputs`) and from the request
 * (`X-UHLP-Declared-Outputs`). A path is `output/<path>` (kept with the
 * session when the turn matches) or `tmp/<path>` (scratch, discarded); a glob
 * (`tmp/**`) allows any number of files, none included.
 */
import path from 'node:path';
import { UhlpError } from '../shared/errors.js';
import { pathGlobProblem } from '../shared/path-glob.js';
import type { DeclaredOutput } from './write-surface.js';

export const DECLARED_OUTPUTS_HEADER = 'x-uhlp-declared-outputs';
/** Declarations one request may add. */
const MAX_REQUEST_DECLARATIONS = 64;

/** Why `declared` cannot name a write of the turn (as a path, or as a glob that does not compile), or undefined. */
export function declaredPathProblem(declared: string): string | undefined {
  if (!/^(tmp|output)\/./.test(declared)) return 'must start with tmp/ or output/';
  if (declared.includes('\\') || declared.includes('\0')) return 'must use / between segments and hold no NUL';
  if (declared.split('/').some((segment) => segment === '..' || segment === '.' || segment === '')) return 'must not hold empty, "." or ".." segments';
  if (path.posix.normalize(declared) !== declared) return 'must be a normalized path';
  return pathGlobProblem(declared);
}

const NONE: readonly DeclaredOutput[] = Object.freeze([]);

/** What a turn declares: the component's declarations and the request's header; most turns declare nothing. */
export function turnDeclaredOutputs(component: readonly DeclaredOutput[] | undefined, header: string | string[] | undefined): readonly DeclaredOutput[] {
  if (header === undefined) return component ?? NONE;
  return [...(component ?? NONE), ...requestDeclaredOutputs(header)];
}

/** The declarations of the request's header; a 400 naming the header when it is not a list of {path, role}. */
export function requestDeclaredOutputs(header: string | string[] | undefined): DeclaredOutput[] {
  if (header === undefined) return [];
  const refuse = (why: string): never => {
    throw new UhlpError('UHLP_DECLARED_OUTPUTS_INVALID', `the ${DECLARED_OUTPUTS_HEADER} header ${why}`, { header: DECLARED_OUTPUTS_HEADER });
  };
  if (Array.isArray(header)) return refuse('is sent more than once');
  let value: unknown;
  try {
    value = JSON.parse(header);
  } catch {
    return refuse('is not JSON (a list of {"path", "role"})');
  }
  if (!Array.isArray(value)) return refuse('is not a list of {"path", "role"}');
  if (value.length > MAX_REQUEST_DECLARATIONS) return refuse(`has more than ${MAX_REQUEST_DECLARATIONS} entries`);
  return value.map((entry: unknown, index) => {
    const record = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    if (typeof record.path !== 'string' || typeof record.role !== 'string' || record.role === '' || record.role.length > 64) {
      return refuse(`entry ${index} must be {"path": string, "role": non-empty string}`);
    }
    const problem = declaredPathProblem(record.path);
    if (problem !== undefined) return refuse(`entry ${index}: path "${record.path.slice(0, 100)}" ${problem}`);
    return { path: record.path, role: record.role };
  });
}
