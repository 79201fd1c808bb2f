/**
 * Where materialized revisions live: one directory per app, holding one
 * read-only directory per revision of that app (`<root>/<appId>/<revision>/`,
 * the app directory's files). A sandbox mounts its own app's directory and
 * nothing else, so no script can read another app's files, and revisions that
 * arrive after the sandbox started appear inside its mount.
 */
import path from 'node:path';

/** Directory name under the data directory. A new name: the older layout (`revisions/<commit>/apps/…`) is never read as this one. */
export const REVISIONS_DIR = 'app-revisions';

/** Every revision of one app: what its sandboxes mount read-only. */
export function appRevisionsDir(root: string, appId: string): string {
  return path.join(root, appId);
}

/** The app directory at one revision. */
export function appRevisionDir(root: string, appId: string, revision: string): string {
  return path.join(root, appId, revision);
}

/**
 * A file of the app directory at one revision, or undefined when `relative` leaves
 * it. Materialized revisions hold no symlinks, so this lexical check is the whole check.
 */
export function appRevisionFile(root: string, appId: string, revision: string, relative: string): string | undefined {
  const appDir = path.resolve(appRevisionDir(root, appId, revision));
  const file = path.resolve(appDir, relative);
  return file.startsWith(appDir + path.sep) ? file : undefined;
}
