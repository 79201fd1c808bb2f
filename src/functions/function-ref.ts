/**
 * Names in the function store: `namespace/function` (lower-case DNS-like
 * labels), refs (a version number, an alias, `latest`) and bundle addresses
 * (64 hex digits). One parser for the CLI, the MCP tools, AppDefinitions and
 * the store, so a name means the same everywhere.
 */
import { UhlpError } from '../shared/errors.js';

export const NAME_SEGMENT_PATTERN = '^[a-z0-9]([-a-z0-9_]{0,61}[a-z0-9])?$';
export const FUNCTION_NAME_PATTERN = '^[a-z0-9]([-a-z0-9_]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9_]{0,61}[a-z0-9])?$';
/** An alias: a name that is not a number and not `latest`. */
export const ALIAS_PATTERN = '^[a-z][-a-z0-9_.]{0,62}$';
export const SHA256_PATTERN = '^[0-9a-f]{64}$';

const FUNCTION_NAME = new RegExp(FUNCTION_NAME_PATTERN);
const ALIAS = new RegExp(ALIAS_PATTERN);
const SHA256 = new RegExp(SHA256_PATTERN);

export interface FunctionName {
  readonly namespace: string;
  readonly function: string;
}

/** What a ref names: one version, the newest, or an alias. */
export type FunctionRef = { readonly version: number } | { readonly latest: true } | { readonly alias: string };

export function parseFunctionName(text: unknown, field = 'function'): FunctionName {
  if (typeof text !== 'string' || !FUNCTION_NAME.test(text)) {
    throw new UhlpError('UHLP_FN_REF_INVALID', `${field} must be namespace/function (lower-case letters, digits, - and _), got ${JSON.stringify(String(text).slice(0, 80))}`, { field });
  }
  const [namespace, fn] = text.split('/') as [string, string];
  return { namespace, function: fn };
}

export function parseRef(text: unknown, field = 'ref'): FunctionRef {
  if (typeof text === 'number' || (typeof text === 'string' && /^[0-9]{1,15}$/.test(text))) {
    const version = Number(text);
    if (Number.isSafeInteger(version) && version >= 1) return { version };
  }
  if (text === 'latest') return { latest: true };
  if (typeof text === 'string' && ALIAS.test(text)) return { alias: text };
  throw new UhlpError('UHLP_FN_REF_INVALID', `${field} must be a version number, "latest" or an alias (a lower-case name), got ${JSON.stringify(String(text).slice(0, 80))}`, { field });
}

export function checkAlias(text: unknown, field = 'alias'): string {
  if (typeof text !== 'string' || !ALIAS.test(text) || text === 'latest') {
    throw new UhlpError('UHLP_FN_REF_INVALID', `${field} must be a lower-case name starting with a letter (not "latest"), got ${JSON.stringify(String(text).slice(0, 80))}`, { field });
  }
  return text;
}

export function checkSha256(text: unknown, field = 'sha256'): string {
  if (typeof text !== 'string' || !SHA256.test(text)) throw new UhlpError('UHLP_FN_REF_INVALID', `${field} must be 64 lower-case hex digits`, { field });
  return text;
}

export function isSha256(text: string): boolean {
  return SHA256.test(text);
}
