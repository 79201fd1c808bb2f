/**
 * Paths inside an app's directory of the definitions repository. A caller's path
 * (from a sandbox through MCP, or from the oracle) is normalized and refused with
 * `UHLP_DEFINITION_PATH_REFUSED` when it is absolute, leaves the app directory
 * through `..`, or names the app directory itself or a `.git` entry. Symlinks are
 * checked against the Git tree by the store, since only the tree knows them.
 */
import path from 'node:path';
import { UhlpError } from '../shared/errors.js';

/** An app id: a DNS-1123 label (the schema's appId pattern). */
export const APP_ID_PATTERN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function checkAppId(appId: string): void {
  if (typeof appId !== 'string' || appId.length > 63 || !APP_ID_PATTERN.test(appId)) {
    throw new UhlpError('UHLP_DEFINITION_PATH_REFUSED', `appId "${String(appId).slice(0, 80)}" is not a valid app id`, { field: 'appId' });
  }
}

/** The normalized app-relative POSIX path, or a refusal naming `field`. */
export function normalizeAppPath(input: string, field = 'path'): string {
  const refuse = (why: string): never => {
    throw new UhlpError('UHLP_DEFINITION_PATH_REFUSED', `${field} "${String(input).slice(0, 200)}" ${why}`, { field });
  };
  if (typeof input !== 'string' || input.length === 0) return refuse('is empty');
  if (input.includes('\0')) return refuse('contains a NUL byte');
  if (input.includes('\\')) return refuse('contains a backslash; use / between segments');
  if (input.startsWith('/') || /^[a-zA-Z]:/.test(input)) return refuse('is absolute; paths are relative to the app directory');
  const normalized = path.posix.normalize(input).replace(/\/+$/, '');
  if (normalized === '..' || normalized.startsWith('../')) return refuse('leaves the app directory');
  if (normalized === '.' || normalized === '') return refuse('names the app directory itself, not a file');
  if (normalized.split('/').some((segment) => segment.toLowerCase() === '.git')) return refuse('names a .git entry');
  return normalized;
}

/** The repository path of an app's directory: `<prefix>/<appsDir>/<appId>`. */
export function appRootPath(prefix: string, appsDir: string, appId: string): string {
  checkAppId(appId);
  return path.posix.join(prefix || '.', appsDir || '.', appId);
}
